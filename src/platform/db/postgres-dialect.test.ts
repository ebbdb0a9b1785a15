import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { TEST_POSTGRES_URL, TestDatabaseSpace, selectedDatabases } from '../../testing/harness.ts';
import { openDatabase } from './connect.ts';
import { migrateToLatest } from './migrate.ts';
import { allMigrations } from '../../features.ts';

describe('PostgreSQL introspection scoped to our schema', { skip: !selectedDatabases().includes('postgres') }, () => {
  const space = new TestDatabaseSpace('postgres');
  after(() => space.drop());

  it('migrates while other deployments create and drop their schemas, and sees only its own tables', async () => {
    await space.create();
    const churn = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await churn.connect();
    let stop = false;
    let dropped = 0;
    // Other test runs sharing the database come and go; each drop used to break Kysely's all-schema introspection.
    const churning = (async () => {
      while (!stop) {
        const name = `${space.schema}_other_${dropped % 4}`;
        await churn.query(`CREATE SCHEMA "${name}"; CREATE TABLE "${name}".t (id serial primary key, n int8)`);
        await churn.query(`DROP SCHEMA "${name}" CASCADE`);
        dropped++;
      }
    })();
    const database = openDatabase({
      DATABASE_URL: TEST_POSTGRES_URL,
      DATABASE_SCHEMA: space.schema,
      DATABASE_POOL_SIZE: 4,
      DATA_DIR: space.dataDir,
    });
    try {
      await migrateToLatest(database.db, allMigrations(), {
        DATABASE_URL: TEST_POSTGRES_URL,
        DATABASE_SCHEMA: space.schema,
      });
      for (let round = 0; round < 30; round++) {
        const tables = await database.db.introspection.getTables({ withInternalKyselyTables: true });
        assert.ok(tables.length > 0);
        assert.ok(
          tables.every((table) => table.schema === space.schema),
          'only tables of our schema are listed',
        );
        assert.ok(tables.some((table) => table.name === 'kysely_migration'));
      }
      const ledger = (await database.db.introspection.getTables()).find((table) => table.name === 'ledger_entries');
      assert.ok(ledger && ledger.columns.length > 0, 'columns are read as well');
    } finally {
      stop = true;
      await churning;
      await churn.end();
      await database.close();
    }
    assert.ok(dropped > 0, 'schemas were dropped while we introspected');
  });
});
