import { describe, it, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { Kysely, sql } from 'kysely';
import { nodeSqliteDialect, type NodeSqliteDialect } from './node-sqlite-dialect.ts';
import { DiskFullWatch, isDatabaseFull, isDatabaseUnavailable } from './unavailable.ts';

interface Schema {
  rows: { id: number; note: string };
  doom: { id: number };
}

/** Rows that a fresh connection to the file sees: what is durable, not what the driver's connection sees. */
function durableIds(file: string): number[] {
  const reader = new DatabaseSync(file, { readOnly: true });
  try {
    return (reader.prepare('SELECT id FROM rows ORDER BY id').all() as Array<{ id: number }>).map((row) => row.id);
  } finally {
    reader.close();
  }
}

/** A logger's method that keeps its messages in `lines`. */
const log_ = (lines: string[]) => (_: unknown, message: string) => void lines.push(message);

describe('SQLite group commit', () => {
  let dir: string;
  let file: string;
  let dialect: NodeSqliteDialect;
  let db: Kysely<Schema>;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tollgate-group-commit-'));
    file = join(dir, 'test.db');
    dialect = nodeSqliteDialect(file, { checkpointIntervalMs: 20 });
    db = new Kysely<Schema>({ dialect });
    await sql`CREATE TABLE rows (id INTEGER PRIMARY KEY, note TEXT NOT NULL)`.execute(db);
    // A trigger that makes SQLite roll back the whole physical transaction, as an I/O error or a full disk can.
    await sql`CREATE TABLE doom (id INTEGER PRIMARY KEY)`.execute(db);
    await sql`CREATE TRIGGER doom_rolls_back BEFORE INSERT ON doom BEGIN SELECT RAISE(ROLLBACK, 'the whole transaction is gone'); END`.execute(
      db,
    );
  });

  afterEach(async () => {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('commits concurrent transactions in fewer physical commits, each durable once its promise resolves', async () => {
    const before = { ...dialect.stats };
    const ids = Array.from({ length: 200 }, (_, i) => i + 1);
    await Promise.all(
      ids.map((id) => db.transaction().execute((trx) => trx.insertInto('rows').values({ id, note: 'txn' }).execute())),
    );
    const transactions = dialect.stats.transactions - before.transactions;
    const commits = dialect.stats.commits - before.commits;
    assert.equal(transactions, 200);
    assert.ok(commits < 200 / 4, `200 queued transactions shared ${commits} commits`);
    assert.deepEqual(durableIds(file), ids);
  });

  it('a lone transaction commits by itself and is durable as soon as it resolves', async () => {
    const before = dialect.stats.commits;
    for (let id = 1; id <= 5; id++) {
      await db.transaction().execute((trx) => trx.insertInto('rows').values({ id, note: 'alone' }).execute());
      assert.deepEqual(durableIds(file).at(-1), id, 'visible to another connection as soon as it resolved');
    }
    assert.equal(dialect.stats.commits - before, 5);
  });

  it('a transaction that fails rolls back alone; the others of its batch commit', async () => {
    const outcomes = await Promise.allSettled(
      Array.from({ length: 60 }, (_, i) =>
        db.transaction().execute(async (trx) => {
          await trx
            .insertInto('rows')
            .values({ id: i + 1, note: 'maybe' })
            .execute();
          await trx
            .updateTable('rows')
            .set({ note: 'touched' })
            .where('id', '=', i + 1)
            .execute();
          if (i % 5 === 0) throw new Error(`transaction ${i + 1} gives up`);
        }),
      ),
    );
    const kept = outcomes.flatMap((outcome, i) => (outcome.status === 'fulfilled' ? [i + 1] : []));
    assert.equal(kept.length, 48);
    assert.deepEqual(durableIds(file), kept);
    const notes = await db.selectFrom('rows').select('note').distinct().execute();
    assert.deepEqual(
      notes.map((row) => row.note),
      ['touched'],
      'each kept transaction kept all of its writes',
    );
  });

  it('the transaction that begins a batch (it has no savepoint) fails: none of it remains; the members after it commit', async () => {
    await db.insertInto('rows').values({ id: 1, note: 'before' }).execute();
    const outcomes = await Promise.allSettled([
      db.transaction().execute(async (trx) => {
        await trx.insertInto('rows').values({ id: 2, note: 'first' }).execute();
        await trx.updateTable('rows').set({ note: 'overwritten by the first' }).where('id', '=', 1).execute();
        await trx.deleteFrom('rows').where('id', '=', 1).execute();
        throw new Error('the first member gives up');
      }),
      db.transaction().execute((trx) => trx.insertInto('rows').values({ id: 3, note: 'second' }).execute()),
      db.insertInto('rows').values({ id: 4, note: 'plain' }).execute(),
      db.transaction().execute(async (trx) => {
        await trx.insertInto('rows').values({ id: 5, note: 'fourth' }).execute();
        throw new Error('a later member gives up');
      }),
      db.transaction().execute((trx) => trx.insertInto('rows').values({ id: 6, note: 'fifth' }).execute()),
    ]);
    assert.deepEqual(
      outcomes.map((outcome) => outcome.status),
      ['rejected', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled'],
    );
    assert.deepEqual(durableIds(file), [1, 3, 4, 6]);
    const first = await db.selectFrom('rows').select('note').where('id', '=', 1).executeTakeFirstOrThrow();
    assert.equal(first.note, 'before');
  });

  it('a lone transaction that fails leaves nothing and commits nothing; the next one commits as usual', async () => {
    const before = dialect.stats.commits;
    await assert.rejects(
      db.transaction().execute(async (trx) => {
        await trx.insertInto('rows').values({ id: 1, note: 'alone' }).execute();
        throw new Error('gives up');
      }),
      /gives up/,
    );
    assert.equal(dialect.stats.commits - before, 0);
    assert.deepEqual(durableIds(file), []);
    await db.transaction().execute((trx) => trx.insertInto('rows').values({ id: 2, note: 'next' }).execute());
    assert.deepEqual(durableIds(file), [2]);
    assert.equal(dialect.stats.commits - before, 1);
  });

  it('a member that fails after the one that began the batch rolls back alone; the first keeps its writes', async () => {
    const outcomes = await Promise.allSettled([
      db.transaction().execute(async (trx) => {
        await trx.insertInto('rows').values({ id: 1, note: 'first' }).execute();
        await trx.insertInto('rows').values({ id: 2, note: 'first' }).execute();
      }),
      db.transaction().execute(async (trx) => {
        await trx.updateTable('rows').set({ note: 'second' }).execute();
        await trx.insertInto('rows').values({ id: 3, note: 'second' }).execute();
        throw new Error('the second member gives up');
      }),
    ]);
    assert.deepEqual(
      outcomes.map((outcome) => outcome.status),
      ['fulfilled', 'rejected'],
    );
    assert.deepEqual(durableIds(file), [1, 2]);
    const notes = await db.selectFrom('rows').select('note').distinct().execute();
    assert.deepEqual(
      notes.map((row) => row.note),
      ['first'],
    );
  });

  it('when SQLite drops the physical transaction, every member of that batch fails and none of it is kept', async () => {
    // Transactions and plain statements queued together; one of them makes SQLite roll back everything.
    const work = Array.from({ length: 40 }, (_, i) => {
      const id = i + 1;
      if (id === 20) return db.transaction().execute((trx) => trx.insertInto('doom').values({ id }).execute());
      if (id % 3 === 0) return db.insertInto('rows').values({ id, note: 'plain' }).execute();
      return db.transaction().execute((trx) => trx.insertInto('rows').values({ id, note: 'txn' }).execute());
    });
    const outcomes = await Promise.allSettled(work);
    assert.equal(outcomes[19]!.status, 'rejected');
    const resolved = outcomes.flatMap((outcome, i) => (outcome.status === 'fulfilled' ? [i + 1] : []));
    const failed = outcomes.flatMap((outcome, i) => (outcome.status === 'rejected' && i !== 19 ? [i + 1] : []));
    assert.ok(failed.length > 0, 'the members batched with the doomed transaction failed with it');
    // The guarantee: a promise resolved if and only if its row is durable.
    assert.deepEqual(durableIds(file), resolved);
    // And the connection is usable afterwards.
    await db.transaction().execute((trx) => trx.insertInto('rows').values({ id: 1000, note: 'after' }).execute());
    assert.ok(durableIds(file).includes(1000));
  });

  it('a full disk (SQLITE_FULL) fails every member of its batch with an error that says so (a 503), keeps none of it, is logged once, and the next batch commits once there is room', async () => {
    const lines: string[] = [];
    const log = { error: log_(lines), info: log_(lines) };
    const fullFile = join(dir, 'full.db');
    const watch = new DiskFullWatch(fullFile, log);
    const full = new Kysely<Schema & { big: { b: Uint8Array } }>({
      dialect: nodeSqliteDialect(fullFile, { diskFull: watch }),
    });
    try {
      await sql`CREATE TABLE rows (id INTEGER PRIMARY KEY, note TEXT NOT NULL)`.execute(full);
      await sql`CREATE TABLE big (b BLOB)`.execute(full);
      // SQLite's own limit stands for the disk: the free pages used up, a write that needs a page fails as on a full disk.
      const { page_count } = (await sql<{ page_count: number }>`PRAGMA page_count`.execute(full)).rows[0]!;
      await sql.raw(`PRAGMA max_page_count = ${page_count + 8}`).execute(full);
      await assert.rejects(async () => {
        for (;;) await sql`INSERT INTO big VALUES (zeroblob(900))`.execute(full);
      }, isDatabaseFull);
      assert.equal(watch.full, true);
      assert.match(
        watch.describe(),
        /^the database disk is full since .* writes refused\): free space on the disk of .*full\.db$/,
      );
      const work = Array.from({ length: 20 }, (_, i) =>
        full.transaction().execute(async (trx) => {
          // The one write that needs pages; the small ones fit the pages there are.
          if (i === 10) await sql`INSERT INTO big VALUES (zeroblob(4000))`.execute(trx);
          else await trx.insertInto('rows').values({ id: i, note: 'small' }).execute();
        }),
      );
      const outcomes = await Promise.allSettled(work);
      const failed = outcomes.flatMap((outcome) => (outcome.status === 'rejected' ? [outcome.reason] : []));
      assert.ok(failed.length > 1, 'the members batched with the write that found the disk full failed with it');
      for (const error of failed) assert.ok(isDatabaseFull(error) && isDatabaseUnavailable(error), String(error));
      const resolved = outcomes.flatMap((outcome, i) => (outcome.status === 'fulfilled' ? [i] : []));
      assert.deepEqual(durableIds(fullFile), resolved, 'a promise resolved if and only if its row is durable');

      await sql.raw('PRAGMA max_page_count = 4294967294').execute(full);
      await full.transaction().execute((trx) => sql`INSERT INTO big VALUES (zeroblob(4000))`.execute(trx));
      assert.equal(watch.full, false);
      assert.deepEqual(
        lines.filter((line) => line.startsWith('the database disk')),
        [
          'the database disk is full: writes fail (503 SERVICE_UNAVAILABLE) until space is freed; reads go on',
          'the database disk has room again: writes succeed',
        ],
      );
    } finally {
      await full.destroy();
    }
  });

  it('a statement that fails inside a transaction leaves the transaction going, as SQLite does without batching', async () => {
    await db.insertInto('rows').values({ id: 1, note: 'first' }).execute();
    const results = await Promise.allSettled([
      db.transaction().execute(async (trx) => {
        await trx.insertInto('rows').values({ id: 2, note: 'second' }).execute();
        await trx
          .insertInto('rows')
          .values({ id: 1, note: 'duplicate' })
          .execute()
          .catch(() => 'refused');
        await trx.insertInto('rows').values({ id: 3, note: 'third' }).execute();
      }),
      db.transaction().execute((trx) => trx.insertInto('rows').values({ id: 4, note: 'fourth' }).execute()),
    ]);
    assert.deepEqual(
      results.map((result) => result.status),
      ['fulfilled', 'fulfilled'],
    );
    assert.deepEqual(durableIds(file), [1, 2, 3, 4]);
  });

  it('checkpoints the WAL on a timer between transactions, so the database file itself holds what was committed', async () => {
    await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        db.transaction().execute((trx) =>
          trx
            .insertInto('rows')
            .values({ id: i + 1, note: 'x' })
            .execute(),
        ),
      ),
    );
    const before = dialect.stats.checkpoints;
    await new Promise((resolve) => setTimeout(resolve, 100));
    assert.ok(dialect.stats.checkpoints > before, 'the timer checkpointed');
    // Copy the database file alone, without its WAL: the checkpointed rows are in it.
    const copy = join(dir, 'copy.db');
    const { copyFileSync } = await import('node:fs');
    copyFileSync(file, copy);
    const reader = new DatabaseSync(copy, { readOnly: true });
    try {
      assert.equal((reader.prepare('SELECT count(*) AS n FROM rows').get() as { n: number }).n, 50);
    } finally {
      reader.close();
    }
  });

  it('still checkpoints on time under unbroken load, when a batch is open every time the timer fires', async () => {
    const before = dialect.stats.checkpoints;
    const until = performance.now() + 200;
    // One transaction after another: the next batch opens before the timers' turn of the event loop.
    for (let id = 1; performance.now() < until; id++)
      await db.transaction().execute((trx) => trx.insertInto('rows').values({ id, note: 'x' }).execute());
    assert.ok(
      dialect.stats.checkpoints - before >= 3,
      `checkpoints in 200 ms at a 20 ms interval: ${dialect.stats.checkpoints - before}`,
    );
  });
});
