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
