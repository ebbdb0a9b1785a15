import type { FastifyInstance } from 'fastify';
import type { Job } from './jobs.ts';

/**
 * A built feature, as the composition root (src/service.ts) registers it: its background jobs and the routes
 * and hooks it adds. Each feature's `create…Feature(deps)` returns one of these beside the API it offers the
 * features built after it; its migrations are listed apart (src/features.ts), since they run before any
 * feature is built.
 */
export interface Feature {
  name: string;
  jobs?: Job[];
  /** Called once at start, in the composition root's order, before the server listens. */
  register?(app: FastifyInstance): Promise<void> | void;
}
