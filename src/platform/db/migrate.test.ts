import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { TestDatabaseSpace, selectedDatabases } from '../../testing/harness.ts';
import { loadConfig } from '../../config.ts';
import { allMigrations } from '../../features.ts';
import { openDatabase } from './connect.ts';
import { migrateToLatest } from './migrate.ts';
import { STALL_MIGRATIONS } from './testing/migrate-worker.ts';

/**
 * Migrations as operators run them: from several processes at once (`tollgate migrate` in a release step while
 * instances start, each of which migrates too), and interrupted (a process killed in the middle of one).
 */

/** A worker process (testing/migrate-worker.ts) on `space`, and the JSON lines it prints, in order. */
function startWorker(space: TestDatabaseSpace, mode: 'all' | 'stall') {
  const child: ChildProcessWithoutNullStreams = spawn(
    process.execPath,
    ['src/platform/db/testing/migrate-worker.ts', mode],
    { env: { ...process.env, ...space.env() }, cwd: new URL('../../../', import.meta.url).pathname },
  );
  let stderr = '';
  child.stderr.on('data', (chunk) => (stderr += chunk));
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]();
  const next = async (): Promise<Record<string, any>> => {
    const line = await lines.next();
    if (line.done) throw new Error(`the worker ended without a word: ${stderr}`);
    return JSON.parse(line.value);
  };
  return { child, next };
}

for (const kind of selectedDatabases()) {
  describe(`migrations of a ${kind} database run from several processes or interrupted`, () => {
    const spaces: TestDatabaseSpace[] = [];
    after(() => Promise.all(spaces.map((space) => space.drop())));
    async function newSpace(): Promise<TestDatabaseSpace> {
      const space = new TestDatabaseSpace(kind);
      spaces.push(space);
      await space.create();
      return space;
    }
    const configOf = (space: TestDatabaseSpace) =>
      loadConfig({ ...space.env(), LOG_LEVEL: 'silent', SWEEP_INTERVAL_SECONDS: '0' });

    it('two processes migrating a new database at once both succeed, and each migration runs once', async () => {
      // On SQLite the second `tollgate migrate` failed: "database is locked" (opening the new file) or, once
      // open, "no such index: holds_open_expiry" (both ran the same migrations, statement by statement).
      const space = await newSpace();
      const workers = [startWorker(space, 'all'), startWorker(space, 'all')];
      for (const worker of workers) assert.deepEqual(await worker.next(), { ready: true });
      for (const worker of workers) worker.child.stdin.end('go\n');
      const outcomes = await Promise.all(workers.map((worker) => worker.next()));
      assert.deepEqual(
        outcomes.map((outcome) => outcome.error),
        [undefined, undefined],
      );
      const applied = outcomes.flatMap((outcome) => outcome.applied as string[]).sort();
      assert.deepEqual(applied, Object.keys(allMigrations()).sort(), 'every migration applied by exactly one');
      const database = openDatabase(configOf(space));
      try {
        const result = await migrateToLatest(database.db, allMigrations(), configOf(space));
        assert.deepEqual(result.results, [], 'nothing is left to do');
      } finally {
        await database.close();
      }
    });

    it(
      'a migrate killed (SIGKILL) in the middle of a migration leaves none of it, and the next migrate completes',
      { timeout: 60_000 },
      async () => {
        // On SQLite each statement of a migration committed on its own: the killed migration's table stayed
        // without its record, and every later migrate failed on "table test_stalled already exists".
        const space = await newSpace();
        const worker = startWorker(space, 'stall');
        assert.deepEqual(await worker.next(), { ready: true });
        worker.child.stdin.end('go\n');
        assert.deepEqual(await worker.next(), { midway: true });
        const ended = new Promise((resolve) => worker.child.once('exit', resolve));
        worker.child.kill('SIGKILL');
        await ended;
        const config = configOf(space);
        const database = openDatabase(config);
        try {
          const result = await migrateToLatest(database.db, STALL_MIGRATIONS(false), config);
          assert.equal(result.error, undefined);
          const table = (
            config.DATABASE_URL ? (database.db as any).withSchema(config.DATABASE_SCHEMA) : database.db
          ) as any;
          const recorded = (await table.selectFrom('kysely_migration').select('name').execute()).map(
            (row: { name: string }) => row.name,
          );
          assert.deepEqual(recorded.sort(), ['0001_test_first', '0002_test_stalled']);
        } finally {
          await database.close();
        }
      },
    );
  });
}
