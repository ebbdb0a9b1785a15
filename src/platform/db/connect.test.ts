import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { sql } from 'kysely';
import { TEST_POSTGRES_URL, TestDatabaseSpace, selectedDatabases } from '../../testing/harness.ts';
import { openDatabase, withoutQueryTimeout, withRequestQueryTimeout } from './connect.ts';
import { isDatabaseUnavailable } from './unavailable.ts';

describe(
  'the PostgreSQL pool when the server ends a connection',
  { skip: !selectedDatabases().includes('postgres') },
  () => {
    const space = new TestDatabaseSpace('postgres');
    after(() => space.drop());

    it('an idle connection the server terminates (a restart, a failover, an idle timeout) is logged and replaced, and the process goes on', async () => {
      await space.create();
      const warnings: Array<{ fields: Record<string, unknown>; message: string }> = [];
      const database = openDatabase(
        { DATABASE_URL: TEST_POSTGRES_URL, DATABASE_SCHEMA: space.schema, DATABASE_POOL_SIZE: 2, DATA_DIR: '' },
        { warn: (fields: Record<string, unknown>, message: string) => void heard(fields, message) },
      );
      function heard(fields: Record<string, unknown>, message: string) {
        warnings.push({ fields, message });
      }
      try {
        const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(database.db);
        const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
        await admin.connect();
        await admin.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
        await admin.end();
        // The idle client hears the termination and the pool emits 'error': unheard, it threw and ended the process.
        for (let i = 0; i < 100 && warnings.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
        assert.equal(warnings.length, 1);
        assert.match(warnings[0]!.message, /PostgreSQL/);
        const again = await sql<{ one: number }>`select 1 as one`.execute(database.db);
        assert.equal(again.rows[0]!.one, 1);
      } finally {
        await database.close();
      }
    });

    it('a connection the server terminates while a transaction holds it fails that transaction only, and the process goes on', async () => {
      const database = openDatabase({
        DATABASE_URL: TEST_POSTGRES_URL,
        DATABASE_SCHEMA: space.schema,
        DATABASE_POOL_SIZE: 2,
        DATA_DIR: '',
      });
      try {
        const failed = await database.db
          .transaction()
          .execute(async (trx) => {
            const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(trx);
            const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL });
            await admin.connect();
            await admin.query('select pg_terminate_backend($1)', [rows[0]!.pid]);
            await admin.end();
            // The checked-out client hears the termination between two queries: pg emits 'error' on it, and
            // the pool listens only to idle clients, so unheard it threw and ended the process (every instance
            // at once, when PostgreSQL restarted or an operator ended their connections).
            await new Promise((resolve) => setTimeout(resolve, 200));
            await sql`select 1`.execute(trx);
          })
          .then(
            () => null,
            (error: Error) => error,
          );
        assert.ok(failed, 'the transaction on the terminated connection fails');
        const again = await sql<{ one: number }>`select 1 as one`.execute(database.db);
        assert.equal(again.rows[0]!.one, 1);
      } finally {
        await database.close();
      }
    });

    it('a statement that gets no answer within DATABASE_QUERY_TIMEOUT_SECONDS fails as the database unavailable, and its connection is closed, never handed to the next statement', async () => {
      const database = openDatabase({
        DATABASE_URL: TEST_POSTGRES_URL,
        DATABASE_SCHEMA: space.schema,
        DATABASE_POOL_SIZE: 1,
        DATABASE_QUERY_TIMEOUT_SECONDS: 1,
        DATA_DIR: '',
      });
      try {
        const first = (await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(database.db)).rows[0]!.pid;
        const late = await sql`select pg_sleep(3)`.execute(database.db).then(
          () => null,
          (error: unknown) => error,
        );
        assert.ok(late, 'the statement past its limit fails');
        assert.equal(isDatabaseUnavailable(late), true, 'as the database unavailable (503)');
        // pg only stops waiting: reused, the connection would give the next statement the late one's answer
        // (or wait behind it). The one connection of the pool is a new one.
        const next = await sql<{ pid: number; value: string }>`select pg_backend_pid() as pid, 'mine' as value`.execute(
          database.db,
        );
        assert.equal(next.rows[0]!.value, 'mine');
        assert.notEqual(next.rows[0]!.pid, first);
      } finally {
        await database.close();
      }
    });

    it('work run without the query timeout (migrations, the ledger check, jobs) is not cut, except a statement it shares with requests', async () => {
      const database = openDatabase({
        DATABASE_URL: TEST_POSTGRES_URL,
        DATABASE_SCHEMA: space.schema,
        DATABASE_POOL_SIZE: 2,
        DATABASE_QUERY_TIMEOUT_SECONDS: 1,
        DATA_DIR: '',
      });
      try {
        const long = await withoutQueryTimeout(() =>
          database.db.transaction().execute(async (trx) => {
            await sql`select pg_sleep(1.5)`.execute(trx);
            return (await sql<{ one: number }>`select 1 as one`.execute(trx)).rows[0]!.one;
          }),
        );
        assert.equal(long, 1);
        const shared = await withoutQueryTimeout(() =>
          withRequestQueryTimeout(() => sql`select pg_sleep(3)`.execute(database.db)),
        ).then(
          () => null,
          (error: unknown) => error,
        );
        assert.equal(isDatabaseUnavailable(shared), true);
      } finally {
        await database.close();
      }
    });
  },
);
