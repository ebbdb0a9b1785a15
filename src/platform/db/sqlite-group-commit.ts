import type { DatabaseSync } from 'node:sqlite';
import {
  CompiledQuery,
  SqliteAdapter,
  type DatabaseConnection,
  type Driver,
  type QueryResult,
  type SqliteDatabase,
} from 'kysely';
import { DiskFullWatch, markSqliteFull } from './unavailable.ts';

/** Most logical transactions one physical commit carries; bounds the wait of the first one in a batch. */
export const GROUP_COMMIT_MAX_MEMBERS = 32;
/** How often the WAL is checkpointed into the database file, between batches. */
export const CHECKPOINT_INTERVAL_MS = 1_000;
/**
 * SQLite's own checkpoint-on-commit threshold (pages of WAL), kept as a safety net should the timed
 * checkpoints fall behind. At its default of 1,000, every ~60th commit also checkpointed: a call that paid
 * for copying and syncing a thousand pages, once in every ~30 gateway calls.
 */
export const WAL_AUTOCHECKPOINT_PAGES = 10_000;

/**
 * A batch: one physical SQLite transaction that several logical ones (and the plain statements run between
 * them) share, committed once when nobody is waiting for the connection or the batch is full.
 */
interface Batch {
  members: number;
  /** A commit is scheduled for the end of this event-loop turn. */
  scheduled: boolean;
  /** The scheduled commit found the connection in use: the use that holds it commits on release. */
  commitOnRelease: boolean;
  /** Set when SQLite dropped the physical transaction under us (I/O error, disk full…): nothing in it may commit. */
  lost: unknown;
  done: PromiseWithResolvers<void>;
}

const SAVEPOINT = 'tollgate_txn';
const BEGIN_MEMBER = CompiledQuery.raw(`SAVEPOINT ${SAVEPOINT}`);
const END_MEMBER = CompiledQuery.raw(`RELEASE ${SAVEPOINT}`);

/**
 * Kysely driver over one `node:sqlite` connection that commits in groups.
 *
 * Why: SQLite runs one writer at a time and each COMMIT writes every page the transaction touched to the
 * WAL; on the gateway's path a commit cost more than all the other statements of a call together. The
 * transactions that start in one turn of the event loop (node:sqlite is synchronous, so each runs whole
 * between two I/O events) run one after another inside one physical transaction, each as a SAVEPOINT, and
 * one COMMIT at the end of the turn (`setImmediate`) makes them all durable.
 *
 * Invariants:
 * - A logical transaction is atomic on its own: its failure rolls back to its savepoint and leaves the
 *   others of the batch untouched. The one that begins a batch has no savepoint: the physical transaction
 *   holds nothing but its work (plain statements join only a batch that is open, and the next member waits
 *   for the connection), so its failure rolls back the physical transaction and the batch ends empty.
 * - Nobody hears "committed" before the data is: every use of the connection that ran inside a batch
 *   (transaction or plain statement) resolves only after the batch's COMMIT, and fails with it if the
 *   COMMIT fails. So a caller never acts on a write that could still vanish.
 * - If SQLite drops the physical transaction (some errors roll back the whole transaction), the batch is
 *   lost: every member fails, and the statement that found out refuses any further statement of its use,
 *   so nothing of a member runs half in the batch and half outside it.
 * - Transactions are serial (one connection, handed over first come first served), as with Kysely's own
 *   SQLite driver; BEGIN IMMEDIATE takes the write lock at the start so a second process waits rather than
 *   failing to upgrade mid-transaction.
 * - A batch commits at the end of the event-loop turn it began in, or sooner when full: a lone caller waits
 *   one turn, never for company that may not come.
 */
export class GroupCommitSqliteDriver implements Driver {
  readonly #database: DatabaseSync;
  readonly #connection: GroupCommitConnection;
  #busy = false;
  readonly #waiters: Array<() => void> = [];
  #batch: Batch | null = null;
  /** Counts since start: logical transactions committed, the physical commits that carried them, and timed checkpoints. */
  readonly stats = { transactions: 0, commits: 0, checkpoints: 0 };
  readonly #checkpointTimer: NodeJS.Timeout;
  /** The timer found the connection in use: the next commit checkpoints once it has told its members. */
  #checkpointDue = false;
  /** A logical transaction holds the connection, between its `beginTransaction` and its commit or rollback. */
  #inTransaction = false;
  /**
   * The open logical transaction began the batch and has no savepoint of its own: two statements less per
   * transaction (every one, one at a time), and no copy of each page it touches in the savepoint's journal.
   */
  #beganBatch = false;
  /** Tells the operator (and `/readyz`) when writes fail for a full disk, and when they succeed again. */
  readonly #diskFull: DiskFullWatch;

  constructor(
    database: DatabaseSync,
    statements: SqliteDatabase,
    options: { checkpointIntervalMs?: number; diskFull?: DiskFullWatch } = {},
  ) {
    this.#database = database;
    this.#diskFull = options.diskFull ?? new DiskFullWatch('the SQLite database');
    this.#connection = new GroupCommitConnection(statements, () => this.#batch, database, this.#diskFull);
    database.exec(`PRAGMA wal_autocheckpoint = ${WAL_AUTOCHECKPOINT_PAGES}`);
    this.#checkpointTimer = setInterval(
      () => this.#checkpoint(),
      options.checkpointIntervalMs ?? CHECKPOINT_INTERVAL_MS,
    ).unref();
  }

  /**
   * Copies the WAL into the database file, when no transaction is open (a checkpoint cannot run inside
   * one). PASSIVE: it never waits for, nor blocks, a reader or another process's writer. On a timer (or
   * right after the commit of the batch the timer found open), so pages written many times between two
   * ticks (a wallet, a counter, the right edge of an index) are copied once, and no WAL grows to SQLite's
   * threshold of 10,000 pages, whose checkpoint stalled a call for ~80 ms.
   */
  #checkpoint(): void {
    if (this.#busy || this.#batch || this.#database.isTransaction) {
      // Under steady load a batch is open whenever the timer fires: the batch's commit checkpoints instead.
      this.#checkpointDue = true;
      return;
    }
    this.#checkpointNow();
  }

  #checkpointNow(): void {
    this.#checkpointDue = false;
    try {
      this.#database.exec('PRAGMA wal_checkpoint(PASSIVE)');
      this.stats.checkpoints += 1;
      this.#diskFull.noteCheckpoint(null);
    } catch (error) {
      // Another process holds the checkpoint lock: it is doing this work. Or the database file cannot grow on
      // a full disk: the WAL keeps the pages (reads see them) until a later checkpoint, once there is room.
      this.#diskFull.noteCheckpoint(markSqliteFull(error));
    }
  }

  async init(): Promise<void> {}

  async acquireConnection(): Promise<DatabaseConnection> {
    if (this.#busy) await new Promise<void>((resolve) => this.#waiters.push(resolve));
    this.#busy = true;
    this.#connection.startUse();
    return this.#connection;
  }

  async beginTransaction(): Promise<void> {
    if (!this.#batch) {
      this.#database.exec('BEGIN IMMEDIATE');
      this.#batch = {
        members: 0,
        scheduled: false,
        commitOnRelease: false,
        lost: undefined,
        done: Promise.withResolvers<void>(),
      };
      // Every member awaits `done`; this keeps a rejection nobody awaits yet from being reported as unhandled.
      this.#batch.done.promise.catch(() => {});
      this.#beganBatch = true;
    } else {
      await this.#connection.executeQuery(BEGIN_MEMBER);
      this.#beganBatch = false;
    }
    this.#inTransaction = true;
  }

  async commitTransaction(): Promise<void> {
    this.#inTransaction = false;
    if (!this.#beganBatch) await this.#connection.executeQuery(END_MEMBER);
    this.stats.transactions += 1;
  }

  async rollbackTransaction(): Promise<void> {
    this.#inTransaction = false;
    const batch = this.#batch;
    if (batch?.lost !== undefined || !this.#database.isTransaction) return;
    if (this.#beganBatch && batch) {
      // Nothing but this transaction's work is in the physical transaction, and nobody else awaits the batch.
      this.#batch = null;
      this.#database.exec('ROLLBACK');
      batch.done.resolve();
      return;
    }
    this.#database.exec(`ROLLBACK TO ${SAVEPOINT}; RELEASE ${SAVEPOINT}`);
  }

  /**
   * Runs a query of the open logical transaction on the connection it holds (see
   * {@link GroupCommitSqliteAdapter}). Throws when no transaction is open, as Kysely does for a finished one.
   */
  executeInTransaction<R>(query: CompiledQuery): Promise<QueryResult<R>> {
    if (!this.#inTransaction) return Promise.reject(new Error('no transaction is open on the SQLite connection'));
    return this.#connection.executeQuery<R>(query);
  }

  async releaseConnection(): Promise<void> {
    const batch = this.#batch;
    if (batch) {
      batch.members += 1;
      if (batch.lost !== undefined || batch.commitOnRelease || batch.members >= GROUP_COMMIT_MAX_MEMBERS)
        this.#finish(batch);
      else if (!batch.scheduled) {
        batch.scheduled = true;
        setImmediate(() => this.#commitWhenIdle(batch));
      }
    }
    const next = this.#waiters.shift();
    if (next) next();
    else this.#busy = false;
    if (batch) await batch.done.promise;
  }

  async destroy(): Promise<void> {
    clearInterval(this.#checkpointTimer);
    if (this.#batch) this.#finish(this.#batch);
    this.#database.close();
  }

  /**
   * The end of the event-loop turn in which the batch began: every call whose I/O arrived in that turn has
   * had its chance to join. Commits now, or, when a use holds the connection mid-transaction (a COMMIT now
   * would take its half-done work along), when that use releases it.
   */
  #commitWhenIdle(batch: Batch): void {
    if (this.#batch !== batch) return;
    if (this.#busy) batch.commitOnRelease = true;
    else this.#finish(batch);
  }

  /** Commits the batch (or rolls back a lost one) and tells every member. */
  #finish(batch: Batch): void {
    this.#batch = null;
    if (batch.lost !== undefined) {
      if (this.#database.isTransaction) this.#database.exec('ROLLBACK');
      batch.done.reject(batch.lost);
      return;
    }
    try {
      this.#database.exec('COMMIT');
      this.stats.commits += 1;
      this.#diskFull.noteWrite();
      batch.done.resolve();
    } catch (error) {
      // On a full disk the COMMIT is where SQLite finds the WAL cannot grow: it rolls the transaction back, and
      // every member hears the SQLITE_FULL (a 503 that names the full disk), none "committed".
      if (this.#database.isTransaction) this.#database.exec('ROLLBACK');
      batch.done.reject(this.#diskFull.noteError(markSqliteFull(error)));
    }
    // Right after a commit no transaction is open and no use is mid-way (see the callers).
    if (this.#checkpointDue && !this.#database.isTransaction) this.#checkpointNow();
  }
}

/**
 * The dialect's adapter, which knows its driver: a prepared query of a transaction runs through
 * {@link GroupCommitSqliteDriver.executeInTransaction} instead of Kysely's executor.
 *
 * Why: Kysely runs each query of a transaction through a new executor and about six nested async functions
 * (a promise and a closure each) to reach the connection the transaction already holds; with no plugins they
 * only pass the result through. On the gateway's path that was ~20 KB allocated per call, of ~250.
 * Sound here because the driver has one connection, which the open transaction holds until it ends, and its
 * statements run synchronously (two queries of one transaction cannot interleave).
 */
export class GroupCommitSqliteAdapter extends SqliteAdapter {
  readonly driver: GroupCommitSqliteDriver;
  constructor(driver: GroupCommitSqliteDriver) {
    super();
    this.driver = driver;
  }

  /**
   * SQLite's DDL is transactional, and Kysely's migrator then runs the pending migrations in one transaction,
   * which this driver begins with BEGIN IMMEDIATE: a second process migrating the same file waits for the
   * first to commit and finds nothing left to do, and a process killed mid-migration leaves none of it.
   * Kysely's own SQLite adapter says false, so each statement committed alone and nothing was locked: two
   * `tollgate migrate` at once ran the same migrations side by side (one failed on "no such index"), and a
   * kill left a migration half applied and unrecorded, which every later start failed to run again.
   */
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

/** The one connection: runs statements, and notices when SQLite drops the batch's transaction. */
class GroupCommitConnection implements DatabaseConnection {
  readonly #statements: SqliteDatabase;
  readonly #batch: () => Batch | null;
  readonly #database: DatabaseSync;
  readonly #diskFull: DiskFullWatch;
  /** The loss this use found, if any: it refuses every further statement of the use. */
  #useLost: unknown;

  constructor(statements: SqliteDatabase, batch: () => Batch | null, database: DatabaseSync, diskFull: DiskFullWatch) {
    this.#statements = statements;
    this.#batch = batch;
    this.#database = database;
    this.#diskFull = diskFull;
  }

  startUse(): void {
    this.#useLost = undefined;
  }

  async executeQuery<R>(compiledQuery: CompiledQuery): Promise<QueryResult<R>> {
    if (this.#useLost !== undefined) throw this.#useLost;
    const { sql, parameters } = compiledQuery;
    try {
      const statement = this.#statements.prepare(sql);
      if (statement.reader) return { rows: statement.all(parameters) as R[] };
      const { changes, lastInsertRowid } = statement.run(parameters);
      // A write outside any transaction committed on its own.
      if (!this.#database.isTransaction) this.#diskFull.noteWrite();
      return {
        numAffectedRows: changes === undefined || changes === null ? undefined : BigInt(changes),
        insertId: lastInsertRowid === undefined || lastInsertRowid === null ? undefined : BigInt(lastInsertRowid),
        rows: [],
      };
    } catch (error) {
      // A statement that needed a new page on a full disk (or past max_page_count): SQLITE_FULL, a 503.
      this.#diskFull.noteError(markSqliteFull(error));
      const batch = this.#batch();
      if (batch && batch.lost === undefined && !this.#database.isTransaction) {
        batch.lost = error;
        this.#useLost = error;
      }
      throw error;
    }
  }

  async *streamQuery<R>(compiledQuery: CompiledQuery): AsyncIterableIterator<QueryResult<R>> {
    const { sql, parameters } = compiledQuery;
    for (const row of this.#statements.prepare(sql).iterate(parameters)) yield { rows: [row as R] };
  }
}
