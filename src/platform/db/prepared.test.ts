import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { sql, type Kysely } from 'kysely';
import { TestDatabaseSpace, selectedDatabases } from '../../testing/harness.ts';
import { loadConfig } from '../../config.ts';
import { openDatabase } from './connect.ts';
import { preparedQuery } from './prepared.ts';

for (const kind of selectedDatabases()) {
  describe(`prepared queries on ${kind}`, () => {
    const space = new TestDatabaseSpace(kind);
    after(() => space.drop());

    it('compile once and run with each call’s own values, nulls included', async () => {
      await space.create();
      const database = openDatabase(loadConfig(space.env()));
      const db = database.db as unknown as Kysely<any>;
      try {
        await sql`CREATE TABLE notes (id text PRIMARY KEY, owner text, size bigint NOT NULL)`.execute(db);
        let builds = 0;
        const insert = preparedQuery((q: Kysely<any>, p: { id: string; owner: string | null; size: number }) => {
          builds++;
          return q.insertInto('notes').values({ id: p.id, owner: p.owner, size: p.size });
        });
        const bigger = preparedQuery((q: Kysely<any>, p: { size: number }) => {
          builds++;
          return q.selectFrom('notes').select(['id', 'owner']).where('size', '>', p.size).orderBy('id');
        });
        await insert(db, { id: 'a', owner: 'ann', size: 1 });
        await insert(db, { id: 'b', owner: null, size: 5 });
        await db.transaction().execute((trx) => insert(trx, { id: 'c', owner: 'cy', size: 9 }));
        assert.deepEqual(
          (await bigger(db, { size: 4 })).rows.map((row) => ({ ...row })),
          [
            { id: 'b', owner: null },
            { id: 'c', owner: 'cy' },
          ],
        );
        assert.deepEqual(
          (await bigger(db, { size: 0 })).rows.map((row) => row.id),
          ['a', 'b', 'c'],
        );
        assert.equal(builds, 2, 'each query was built once');
      } finally {
        await database.close();
      }
    });

    it('refuses to run on a transaction that has ended', async () => {
      const database = openDatabase(loadConfig(space.env()));
      try {
        const lookup = preparedQuery((q: Kysely<any>, p: { id: string }) =>
          q.selectFrom('notes').select('id').where('id', '=', p.id),
        );
        let ended: Kysely<any> | undefined;
        await database.db.transaction().execute(async (trx) => {
          assert.deepEqual(
            (await lookup(trx, { id: 'a' })).rows.map((row) => row.id),
            ['a'],
          );
          ended = trx;
        });
        await assert.rejects(lookup(ended!, { id: 'a' }));
      } finally {
        await database.close();
      }
    });

    it('refuses to run without one of its values rather than binding nothing', async () => {
      const database = openDatabase(loadConfig(space.env()));
      try {
        const lookup = preparedQuery((q: Kysely<any>, p: { id: string }) =>
          q.selectFrom('notes').select('id').where('id', '=', p.id),
        );
        await assert.rejects(lookup(database.db as any, {} as { id: string }), /no value for "id"/);
      } finally {
        await database.close();
      }
    });
  });
}
