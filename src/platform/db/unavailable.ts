/**
 * Telling "the database cannot be reached" and "the database's disk is full" from every other error, so that
 * a client hears a 503 that says so (and may retry) instead of a 500 "Internal error" that blames Tollgate.
 * The pool marks the errors of its connections (`markUnavailable` in connect.ts), the SQLite driver the writes
 * SQLite refused for lack of space (`markSqliteFull`); the HTTP layer asks {@link isDatabaseUnavailable} and
 * {@link isDatabaseFull}, and {@link DiskFullWatch} tells the operator.
 */

const UNAVAILABLE = Symbol('tollgate.databaseUnavailable');
const FULL = Symbol('tollgate.databaseFull');

/**
 * PostgreSQL's SQLSTATEs for a connection that failed or ended (class 08, shutdowns) and for a server out of
 * a resource (class 53: disk full, out of memory, too many connections): none is the request's fault, and
 * each passes.
 */
const CONNECTION_STATES = /^(08[0-9A-Z]{3}|57P0[123]|53[0-9A-Z]{3})$/;

/** PostgreSQL's `disk_full`. */
const PG_DISK_FULL = '53100';

/** SQLite's SQLITE_FULL, as node:sqlite reports it (`errcode`; an extended code keeps the primary in its low byte). */
const SQLITE_FULL = 13;

/**
 * SQLITE_IOERR_SHMSIZE: the WAL's index (`tollgate.db-shm`) could not be grown, which on a full disk is how
 * opening the database fails (its index is made anew at open) and how a WAL that outgrew its index fails.
 */
const SQLITE_IOERR_SHMSIZE = 4874;

/** pg's own sentences for a connection that ended under a query, or was unusable. */
const CONNECTION_MESSAGES =
  /Connection terminated|not queryable|Query read timeout|timeout exceeded when trying to connect/;

/**
 * Marks `error` as a lost or refused connection when it is one: an error of the connection itself (a socket
 * error such as ECONNRESET or ECONNREFUSED, pg's "Connection terminated unexpectedly"), or PostgreSQL saying
 * it is shutting down or refusing connections. `connecting` marks every error: none of a connection attempt
 * is the query's own. A query's own error (a constraint, a syntax error) is left as it is.
 */
export function markUnavailable(error: unknown, connecting = false): unknown {
  if (typeof error !== 'object' || error === null) return error;
  const { code, severity, message } = error as { code?: unknown; severity?: unknown; message?: unknown };
  const lost =
    connecting ||
    (typeof severity === 'string'
      ? typeof code === 'string' && CONNECTION_STATES.test(code)
      : (typeof code === 'string' && /^E[A-Z]+$/.test(code)) ||
        (typeof message === 'string' && CONNECTION_MESSAGES.test(message)));
  if (lost) Object.defineProperty(error, UNAVAILABLE, { value: true });
  if (lost && code === PG_DISK_FULL) Object.defineProperty(error, FULL, { value: true });
  return error;
}

/**
 * Marks `error` as a write SQLite refused for lack of space (SQLITE_FULL: the disk is full, so the WAL or the
 * database file could not grow, or `max_page_count` was reached; SQLITE_IOERR_SHMSIZE: the WAL's index could
 * not grow), which is also "unavailable": nothing of the request is wrong, and the same request succeeds once
 * space is freed. Any other error is left as it is.
 */
export function markSqliteFull(error: unknown): unknown {
  if (typeof error !== 'object' || error === null || UNAVAILABLE in error) return error;
  const { code, errcode } = error as { code?: unknown; errcode?: unknown };
  if (
    code === 'ERR_SQLITE_ERROR' &&
    typeof errcode === 'number' &&
    ((errcode & 0xff) === SQLITE_FULL || errcode === SQLITE_IOERR_SHMSIZE)
  ) {
    Object.defineProperty(error, UNAVAILABLE, { value: true });
    Object.defineProperty(error, FULL, { value: true });
  }
  return error;
}

/** True when `error` (or its cause) was marked by {@link markUnavailable} or {@link markSqliteFull}. */
export function isDatabaseUnavailable(error: unknown): boolean {
  return hasMark(error, UNAVAILABLE);
}

/** True when `error` (or its cause) is a write the database refused because its disk is full. */
export function isDatabaseFull(error: unknown): boolean {
  return hasMark(error, FULL);
}

function hasMark(error: unknown, mark: symbol): boolean {
  for (let e = error, depth = 0; typeof e === 'object' && e !== null && depth < 3; depth++) {
    if (mark in e) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** What {@link DiskFullWatch} tells the operator, through the service's logger. */
export interface DiskFullLog {
  error?(fields: Record<string, unknown>, message: string): void;
  info?(fields: Record<string, unknown>, message: string): void;
}

/**
 * Whether the database's disk is full now, as its writes found it: full from the first write refused for
 * lack of space, until a write succeeds again. Logs each change once (not each refused write: a full disk
 * is no place for a flood of log lines), and feeds `/readyz` and the `tollgate_database_disk_full` gauge.
 * One per open database, found by {@link diskFullWatchOf}.
 */
export class DiskFullWatch {
  readonly #log: DiskFullLog | undefined;
  readonly #where: string;
  readonly #forgetAfterMs: number | undefined;
  /** When the first write was refused (epoch ms), or null while writes succeed. */
  #since: number | null = null;
  /** When the last write was refused (epoch ms). */
  #last = 0;
  /** Writes refused since then. */
  #refused = 0;
  /** The last timed checkpoint could not grow the database file (SQLite). */
  #checkpointFull = false;

  /**
   * `where` names the database for the operator (the SQLite file, or "PostgreSQL"); never a URL or password.
   * `forgetAfterMs`: for a database whose successful writes are not reported ({@link noteWrite}), how long
   * after the last refused write the disk is taken to have room again.
   */
  constructor(where: string, log?: DiskFullLog, options: { forgetAfterMs?: number } = {}) {
    this.#where = where;
    this.#log = log;
    this.#forgetAfterMs = options.forgetAfterMs;
  }

  /** True from a write refused for lack of space until a write succeeds again (or is forgotten). */
  get full(): boolean {
    if (this.#since !== null && this.#forgetAfterMs !== undefined && Date.now() - this.#last >= this.#forgetAfterMs)
      this.noteWrite();
    return this.#since !== null;
  }

  /** What `/readyz` shows while the disk is full. */
  describe(): string {
    const since = this.#since === null ? '' : ` since ${new Date(this.#since).toISOString()}`;
    return `the database disk is full${since} (${this.#refused} writes refused): free space on the disk of ${this.#where}`;
  }

  /** Notes `error` when it is a write refused for lack of space; answers `error`. */
  noteError(error: unknown): unknown {
    if (!isDatabaseFull(error)) return error;
    if (!this.full) this.#refused = 0;
    this.#refused += 1;
    this.#last = Date.now();
    if (this.#since === null) {
      this.#since = Date.now();
      this.#log?.error?.(
        { database: this.#where, reason: (error as Error).message },
        'the database disk is full: writes fail (503 SERVICE_UNAVAILABLE) until space is freed; reads go on',
      );
    }
    return error;
  }

  /**
   * Notes how a timed checkpoint (SQLite's copy of the WAL into the database file) ended: `error` null when it
   * ran, else why not. One that could not grow the database file is logged once, and once more when one runs again; it is
   * not a refused write (the commits into the WAL may still succeed), so it leaves {@link full} alone.
   */
  noteCheckpoint(error: unknown): void {
    // Another error (a busy lock) says nothing about the disk.
    if (error !== null && !isDatabaseFull(error)) return;
    const full = error !== null;
    if (full === this.#checkpointFull) return;
    this.#checkpointFull = full;
    if (full)
      this.#log?.error?.(
        { database: this.#where, reason: (error as Error).message },
        'the database disk is full: the WAL cannot be copied into the database file and grows until space is freed',
      );
    else this.#log?.info?.({ database: this.#where }, 'the database disk has room again: the WAL is copied back');
  }

  /** A write succeeded: the disk has room again. Cheap enough for every commit. */
  noteWrite(): void {
    if (this.#since === null) return;
    this.#log?.info?.(
      { database: this.#where, refused: this.#refused, fullForMs: Date.now() - this.#since },
      'the database disk has room again: writes succeed',
    );
    this.#since = null;
    this.#refused = 0;
  }
}

const watches = new WeakMap<object, DiskFullWatch>();

/** Ties `watch` to the connection `db` it watches (see {@link diskFullWatchOf}). */
export function watchDiskFull(db: object, watch: DiskFullWatch): void {
  watches.set(db, watch);
}

/** The watch of the database `db` is the connection of, or null for one opened without (a test's own). */
export function diskFullWatchOf(db: object): DiskFullWatch | null {
  return watches.get(db) ?? null;
}
