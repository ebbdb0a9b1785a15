import { withoutQueryTimeout } from './db/connect.ts';

/**
 * A background job: run by each process's timer and on demand through `POST /api/admin/cron/<name>`.
 * A job must be safe to run in several processes at once (each row it touches is claimed atomically).
 * The feature that declares it builds it with what it uses, so running it needs nothing more.
 */
export interface Job {
  name: string;
  description: string;
  run(): Promise<Record<string, unknown>>;
}

/**
 * `job` with its PostgreSQL statements not limited by `DATABASE_QUERY_TIMEOUT_SECONDS` (see
 * {@link withoutQueryTimeout}): nobody waits on a job, and a first run over a big backlog (an unbounded prune)
 * is legitimately long. The timer lets a run finish before it starts another.
 */
export function jobWithoutQueryTimeout(job: Job): Job {
  return { ...job, run: async () => withoutQueryTimeout(() => job.run()) };
}
