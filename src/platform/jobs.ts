import type { AppContext } from './context.ts';

/**
 * A background job: run by each process's timer and on demand through `POST /api/admin/cron/<name>`.
 * A job must be safe to run in several processes at once (each row it touches is claimed atomically).
 */
export interface Job {
  name: string;
  description: string;
  run(ctx: AppContext): Promise<Record<string, unknown>>;
}
