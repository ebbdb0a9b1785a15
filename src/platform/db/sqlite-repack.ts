import { statSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { NEW_DATABASE_PAGE_SIZE, pageSizeOf } from './node-sqlite-dialect.ts';

/** What {@link repackSqlite} did. */
export interface RepackReport {
  file: string;
  pageSizeBefore: number;
  pageSizeAfter: number;
  bytesBefore: number;
  bytesAfter: number;
}

/** The database is open elsewhere (a running server): nothing was changed. */
export class DatabaseInUseError extends Error {
  constructor(file: string) {
    super(`${file} is open in another process (a running server?): stop it, then run this again. Nothing was changed.`);
    this.name = 'DatabaseInUseError';
  }
}

/**
 * Leaves WAL mode on `database` (opened on `file`), or throws {@link DatabaseInUseError}: SQLite refuses while
 * another connection has the file open, and says so by staying in WAL mode. That is the check that no server
 * is running, made by SQLite itself. Used by `repack-sqlite` and `restore`.
 */
export function takeSoleUse(database: DatabaseSync, file: string): void {
  // The server's connection waits up to 10 s for the write lock; this one should not wait at all.
  database.exec('PRAGMA busy_timeout = 0');
  let mode: string;
  try {
    mode = (database.prepare('PRAGMA journal_mode = DELETE').get() as { journal_mode: string }).journal_mode;
  } catch {
    throw new DatabaseInUseError(file);
  }
  if (mode !== 'delete') throw new DatabaseInUseError(file);
}

/**
 * Rewrites a SQLite database made before {@link NEW_DATABASE_PAGE_SIZE} with that page size, so that an
 * existing installation writes a third of the WAL bytes per call that it did (docs/scaling.md, tenth pass).
 *
 * SQLite changes the page size of a database only by a `VACUUM` outside WAL mode, which rewrites the whole
 * file and needs it to itself. So, in order:
 * - leave WAL mode. SQLite refuses while another connection has the file open, and says so by staying in
 *   WAL mode: that is the check that no server is running, made by SQLite itself, before anything is
 *   written;
 * - `VACUUM` with the new page size: one transaction, in a rollback journal, so a crash or a full disk leaves
 *   the database as it was;
 * - back to WAL mode, as the server runs it.
 * A database already at the page size is left alone.
 */
export function repackSqlite(file: string, pageSize = NEW_DATABASE_PAGE_SIZE): RepackReport {
  const bytesBefore = statSync(file).size;
  const database = new DatabaseSync(file);
  try {
    // The server's connection waits up to 10 s for the write lock; this one should not wait at all.
    database.exec('PRAGMA busy_timeout = 0');
    const pageSizeBefore = pageSizeOf(database);
    if (pageSizeBefore === pageSize)
      return { file, pageSizeBefore, pageSizeAfter: pageSize, bytesBefore, bytesAfter: bytesBefore };
    takeSoleUse(database, file);
    try {
      database.exec(`PRAGMA page_size = ${pageSize}; VACUUM;`);
    } finally {
      database.exec('PRAGMA journal_mode = WAL');
    }
    // The VACUUM wrote the file outside WAL mode: its size is final before the connection closes.
    return { file, pageSizeBefore, pageSizeAfter: pageSizeOf(database), bytesBefore, bytesAfter: statSync(file).size };
  } finally {
    database.close();
  }
}
