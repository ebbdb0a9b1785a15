import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Kysely, sql } from 'kysely';
import { nodeSqliteDialect } from './node-sqlite-dialect.ts';
import { rebuildWithoutRowid } from './sqlite-rebuild.ts';

describe('rebuilding a SQLite table without rowid', () => {
  let dir: string;
  let db: Kysely<any>;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-rebuild-'));
    db = new Kysely<any>({ dialect: nodeSqliteDialect(join(dir, 'test.db')) });
    await sql`CREATE TABLE owners (id TEXT PRIMARY KEY)`.execute(db);
    await sql`CREATE TABLE "items" ("id" text primary key, "owner" text not null references "owners" ("id"), "amount" bigint not null, constraint "items_amount" check (amount >= 0))`.execute(
      db,
    );
    await sql`CREATE INDEX items_owner ON items (owner, amount) WHERE amount > 0`.execute(db);
    await sql`INSERT INTO owners (id) VALUES ('o1')`.execute(db);
    for (let i = 0; i < 50; i++)
      await sql`INSERT INTO items (id, owner, amount) VALUES (${`item_${String(i).padStart(2, '0')}`}, 'o1', ${i})`.execute(
        db,
      );
  });

  afterEach(async () => {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  const definition = async (name: string) =>
    (await sql<{ sql: string }>`SELECT sql FROM sqlite_master WHERE name = ${name}`.execute(db)).rows[0]?.sql;

  it('keeps every row, the partial index, the check and the foreign key, and drops the rowid', async () => {
    await db.transaction().execute((trx) => rebuildWithoutRowid(trx, 'items'));
    assert.match((await definition('items'))!, /WITHOUT ROWID$/);
    assert.match((await definition('items_owner'))!, /WHERE amount > 0/);
    const rows = (await sql<{ id: string; amount: number }>`SELECT id, amount FROM items ORDER BY id`.execute(db)).rows;
    assert.equal(rows.length, 50);
    assert.deepEqual({ ...rows.at(-1) }, { id: 'item_49', amount: 49 });
    await assert.rejects(sql`SELECT rowid FROM items`.execute(db), /no such column: rowid/);
    await assert.rejects(
      sql`INSERT INTO items (id, owner, amount) VALUES ('bad', 'o1', -1)`.execute(db),
      /CHECK constraint failed/,
    );
    await assert.rejects(
      sql`INSERT INTO items (id, owner, amount) VALUES ('orphan', 'nobody', 1)`.execute(db),
      /FOREIGN KEY constraint failed/,
    );
    await assert.rejects(
      sql`INSERT INTO items (id, owner, amount) VALUES ('item_00', 'o1', 1)`.execute(db),
      /UNIQUE constraint failed/,
    );
  });

  it('leaves a table that is already without rowid as it is', async () => {
    await db.transaction().execute((trx) => rebuildWithoutRowid(trx, 'items'));
    const once = await definition('items');
    await db.transaction().execute((trx) => rebuildWithoutRowid(trx, 'items'));
    assert.equal(await definition('items'), once);
    assert.equal((await sql<{ n: number }>`SELECT count(*) AS n FROM items`.execute(db)).rows[0]!.n, 50);
  });

  it('rolls back whole when the copy fails, leaving the old table and its rows', async () => {
    // A row the new table refuses (the primary key of a WITHOUT ROWID table cannot be null; a rowid table's can).
    await sql`CREATE TABLE loose ("id" text primary key, "note" text)`.execute(db);
    await sql`INSERT INTO loose (id, note) VALUES (NULL, 'a'), ('b', 'b')`.execute(db);
    await assert.rejects(
      db.transaction().execute((trx) => rebuildWithoutRowid(trx, 'loose')),
      /NOT NULL constraint failed/,
    );
    assert.doesNotMatch((await definition('loose'))!, /WITHOUT ROWID/);
    assert.equal((await sql<{ n: number }>`SELECT count(*) AS n FROM loose`.execute(db)).rows[0]!.n, 2);
    assert.equal(await definition('loose__rebuild'), undefined);
  });
});
