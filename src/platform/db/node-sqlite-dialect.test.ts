import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Kysely, sql } from 'kysely';
import { openDatabase } from './connect.ts';
import { NEW_DATABASE_PAGE_SIZE, nodeSqliteDialect } from './node-sqlite-dialect.ts';

interface Schema {
  notes: { id: number; body: string };
}

/** Runs `fn` on a fresh folder, removed afterwards. */
async function inTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'tollgate-sqlite-dialect-'));
  try {
    await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function pageSize(db: Kysely<Schema>): Promise<number> {
  const { rows } = await sql<{ page_size: number }>`PRAGMA page_size`.execute(db);
  return rows[0]!.page_size;
}

describe('node:sqlite dialect, page size', () => {
  it('creates a new database with 1 KiB pages, where a row larger than a page still round-trips', async () => {
    await inTempDir(async (dir) => {
      const file = join(dir, 'new.db');
      const dialect = nodeSqliteDialect(file);
      const db = new Kysely<Schema>({ dialect });
      try {
        assert.equal(dialect.pageSize, 1024);
        await sql`CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)`.execute(db);
        await db
          .insertInto('notes')
          .values({ id: 1, body: 'x'.repeat(5_000) })
          .execute();
        assert.equal(NEW_DATABASE_PAGE_SIZE, 1024);
        assert.equal(await pageSize(db), 1024);
        // A row larger than a page still round-trips (through overflow pages).
        const row = await db.selectFrom('notes').selectAll().where('id', '=', 1).executeTakeFirstOrThrow();
        assert.equal(row.body.length, 5_000);
      } finally {
        await db.destroy();
      }
      // The page size is the file's own: any connection opening it afterwards sees it.
      const reader = new DatabaseSync(file, { readOnly: true });
      try {
        assert.deepEqual({ ...reader.prepare('PRAGMA page_size').get() }, { page_size: 1024 });
      } finally {
        reader.close();
      }
    });
  });

  it('keeps the page size of a database file made before, with its rows', async () => {
    await inTempDir(async (dir) => {
      const file = join(dir, 'old.db');
      const before = new DatabaseSync(file);
      before.exec(
        "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL); INSERT INTO notes VALUES (1, 'kept');",
      );
      before.close();
      const dialect = nodeSqliteDialect(file);
      const db = new Kysely<Schema>({ dialect });
      try {
        assert.equal(dialect.pageSize, 4096);
        assert.equal(await pageSize(db), 4096);
        await db.insertInto('notes').values({ id: 2, body: 'added' }).execute();
        const bodies = (await db.selectFrom('notes').select('body').orderBy('id').execute()).map((row) => row.body);
        assert.deepEqual(bodies, ['kept', 'added']);
      } finally {
        await db.destroy();
      }
    });
  });

  it('a server opening a database made before 1 KiB pages is told so once, with the command that rewrites it', async () => {
    await inTempDir(async (dir) => {
      const config = { DATA_DIR: dir, DATABASE_URL: undefined, DATABASE_SCHEMA: 'public', DATABASE_POOL_SIZE: 1 };
      const fresh = openDatabase(config);
      assert.deepEqual(fresh.notices, []);
      await fresh.close();
      rmSync(join(dir, 'tollgate.db'));
      const older = new DatabaseSync(join(dir, 'tollgate.db'));
      older.exec('PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; CREATE TABLE notes (id INTEGER PRIMARY KEY);');
      older.close();
      const reopened = openDatabase(config);
      try {
        assert.equal(reopened.notices.length, 1);
        assert.match(reopened.notices[0]!, /4096-byte pages.*tollgate repack-sqlite/s);
      } finally {
        await reopened.close();
      }
    });
  });
});
