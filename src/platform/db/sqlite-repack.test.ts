import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { DatabaseInUseError, repackSqlite } from './sqlite-repack.ts';

/** A database as Tollgate made them before 1 KiB pages: 4 KiB pages, WAL mode, a table with an index. */
function olderDatabase(file: string): void {
  const database = new DatabaseSync(file);
  database.exec(`
    PRAGMA page_size = 4096; PRAGMA journal_mode = WAL;
    CREATE TABLE notes (id TEXT PRIMARY KEY, owner TEXT NOT NULL, body TEXT NOT NULL) WITHOUT ROWID;
    CREATE INDEX notes_owner ON notes (owner);`);
  const insert = database.prepare('INSERT INTO notes VALUES (?, ?, ?)');
  for (let i = 0; i < 2_000; i++) insert.run(`note_${i}`, `owner_${i % 7}`, 'x'.repeat(i % 300));
  database.close();
}

function inspect(file: string) {
  const database = new DatabaseSync(file, { readOnly: true });
  try {
    const one = <T>(query: string) => database.prepare(query).get() as T;
    return {
      pageSize: one<{ page_size: number }>('PRAGMA page_size').page_size,
      journalMode: one<{ journal_mode: string }>('PRAGMA journal_mode').journal_mode,
      integrity: one<{ integrity_check: string }>('PRAGMA integrity_check').integrity_check,
      rows: one<{ n: number }>('SELECT count(*) AS n FROM notes').n,
      ownerSix: one<{ n: number }>("SELECT count(*) AS n FROM notes INDEXED BY notes_owner WHERE owner = 'owner_6'").n,
    };
  } finally {
    database.close();
  }
}

describe('repackSqlite', () => {
  let dir: string;
  let file: string;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-repack-'));
    file = join(dir, 'tollgate.db');
    olderDatabase(file);
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('rewrites an older database with 1 KiB pages, keeping every row and index, and leaves it in WAL mode', () => {
    const report = repackSqlite(file);
    assert.equal(report.pageSizeBefore, 4096);
    assert.equal(report.pageSizeAfter, 1024);
    assert.deepEqual(inspect(file), {
      pageSize: 1024,
      journalMode: 'wal',
      integrity: 'ok',
      rows: 2_000,
      ownerSix: 285,
    });
  });

  it('leaves a database already at 1 KiB pages as it is', () => {
    repackSqlite(file);
    const again = repackSqlite(file);
    assert.deepEqual([again.pageSizeBefore, again.pageSizeAfter, again.bytesAfter], [1024, 1024, again.bytesBefore]);
  });

  it('refuses while another connection has the database open (a running server), and changes nothing', () => {
    const server = new DatabaseSync(file);
    try {
      server.exec('PRAGMA journal_mode = WAL');
      assert.throws(() => repackSqlite(file), DatabaseInUseError);
      assert.equal((server.prepare('SELECT count(*) AS n FROM notes').get() as { n: number }).n, 2_000);
    } finally {
      server.close();
    }
    assert.deepEqual(inspect(file), {
      pageSize: 4096,
      journalMode: 'wal',
      integrity: 'ok',
      rows: 2_000,
      ownerSix: 285,
    });
  });
});
