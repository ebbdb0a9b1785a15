import type { Migration } from 'kysely';
import type { FastifyInstance } from 'fastify';
import type { AppContext } from './context.ts';
import type { Job } from './jobs.ts';

/**
 * A feature folder's entry point: its migrations, its background jobs and the routes it registers.
 * `src/features.ts` lists them in order.
 */
export interface Feature {
  name: string;
  migrations?: Record<string, Migration>;
  jobs?: Job[];
  /** Called once at start, in list order, before the server listens. */
  register?(app: FastifyInstance, ctx: AppContext): Promise<void> | void;
}
