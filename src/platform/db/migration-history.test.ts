import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import type { Migration } from 'kysely';
import { TestDatabaseSpace, selectedDatabases } from '../../testing/harness.ts';
import { openDatabase } from './connect.ts';
import { migrateToLatest, NewerDatabaseError } from './migrate.ts';
import { loadConfig } from '../../config.ts';
import { createService } from '../../service.ts';
import { allMigrations } from '../../features.ts';
import { createLogger } from '../logger.ts';
import { PassThrough } from 'node:stream';

/**
 * Upgrades from the databases older versions left, and the refusal of a newer version's database. Each case
 * builds the old database by running the migrations that version had (a subset, or one under its old name),
 * then starts today's migrations on it, twice (the second start is the next restart: it must find nothing
 * to do and nothing to refuse).
 */

/** What a later version of Tollgate would have recorded: a migration this code has never heard of. */
const FUTURE = '9990_from_a_newer_version';

for (const kind of selectedDatabases()) {
  describe(`the migration history of a ${kind} database`, () => {
    const spaces: TestDatabaseSpace[] = [];
    after(() => Promise.all(spaces.map((space) => space.drop())));

    /** A fresh database with `before` applied, as the older version left it; `fn` runs on it. */
    async function withOldDatabase(
      before: Record<string, Migration>,
      fn: (context: {
        config: ReturnType<typeof loadConfig>;
        database: ReturnType<typeof openDatabase>;
        recorded: () => Promise<string[]>;
        migrationTable: () => any;
      }) => Promise<void>,
    ): Promise<void> {
      const space = new TestDatabaseSpace(kind);
      spaces.push(space);
      await space.create();
      const config = loadConfig({
        ...space.env(),
        LOG_LEVEL: 'silent',
        SWEEP_INTERVAL_SECONDS: '0',
        REPLICATE_WEBHOOK_SECRET: '',
      });
      const database = openDatabase(config);
      const migrationTable = () =>
        (config.DATABASE_URL ? (database.db as any).withSchema(config.DATABASE_SCHEMA) : database.db) as any;
      const recorded = async () =>
        (await migrationTable().selectFrom('kysely_migration').select('name').execute())
          .map((row: { name: string }) => row.name)
          .sort();
      try {
        await migrateToLatest(database.db, before, config);
        await fn({ config, database, recorded, migrationTable });
      } finally {
        await database.close();
      }
    }

    const all = allMigrations();
    const names = Object.keys(all).sort();
    const only = (keep: (name: string) => boolean) => Object.fromEntries(Object.entries(all).filter(([n]) => keep(n)));

    it('upgrades a database made while 1620 and 1621 had not landed yet but 1630-1640 had', async () => {
      // main of 23 November 2026, 16:18-16:36 UTC: the events and stored responses, not the debt and top-ups.
      const before = only(
        (n) => n <= '1640_stored_responses' && n !== '1620_billing_debt_and_references' && n !== '1621_topups',
      );
      await withOldDatabase(before, async ({ config, database, recorded }) => {
        await migrateToLatest(database.db, all, config);
        assert.deepEqual(await recorded(), names);
        const db = database.db as any;
        await db
          .insertInto('users')
          .values({
            id: 'usr_late',
            email: 'late@example.com',
            name: 'L',
            image: null,
            password_hash: '!',
            created_at: 1,
          })
          .execute();
        await db
          .insertInto('wallets')
          .values({ user_id: 'usr_late', balance: 5, reserved: 0, created_at: 1, updated_at: 1 })
          .execute();
        const wallet = await db
          .selectFrom('wallets')
          .select(['debt'])
          .where('user_id', '=', 'usr_late')
          .executeTakeFirstOrThrow();
        assert.equal(Number(wallet.debt), 0);
        // The next start: 1620 and 1621 ran after 1640, and that is not taken for a misnumbered migration.
        const again = await migrateToLatest(database.db, all, config);
        assert.deepEqual(again.results, []);
      });
    });

    it('upgrades a database that ran 1710 under its first name, 1700_billing_one_open_hold_index', async () => {
      // main of 23 November 2026, 22:43 UTC, for one commit.
      const before: Record<string, Migration> = {
        ...only((n) => n <= '1700_billing_pg_functions_set_based_batches'),
        '1700_billing_one_open_hold_index': all['1710_billing_one_open_hold_index'],
      };
      await withOldDatabase(before, async ({ config, database, recorded }) => {
        const result = await migrateToLatest(database.db, all, config);
        assert.ok(
          !result.results!.some((r) => r.migrationName === '1710_billing_one_open_hold_index'),
          'ran 1710 twice',
        );
        assert.deepEqual(await recorded(), names);
        assert.deepEqual((await migrateToLatest(database.db, all, config)).results, []);
      });
    });

    it('still refuses a migration numbered below one the database ran', async () => {
      const skipped = '1730_predictions_cancel_requested';
      await withOldDatabase(
        only((n) => n !== skipped),
        async ({ config, database, recorded }) => {
          const before = await recorded();
          await assert.rejects(
            migrateToLatest(database.db, all, config),
            new RegExp(`migration ${skipped} sorts before`),
          );
          assert.deepEqual(await recorded(), before);
        },
      );
    });

    it('serve says which migrations it applied at start, and says nothing of them on the next start', async () => {
      // An operator upgrading by restarting (README, "Upgrading") saw nothing of the upgrade in the log.
      const last = names.at(-1)!;
      await withOldDatabase(
        only((n) => n !== last),
        async ({ config }) => {
          const start = async () => {
            const stream = new PassThrough();
            const lines: any[] = [];
            stream.on('data', (chunk) =>
              lines.push(
                ...String(chunk)
                  .trim()
                  .split('\n')
                  .map((l) => JSON.parse(l)),
              ),
            );
            const service = await createService({ config, timers: false, log: createLogger('info', stream) });
            await service.close();
            return lines.filter((line) => line.migrations);
          };
          const first = await start();
          assert.deepEqual(
            first.map((line) => [line.msg, line.migrations]),
            [['applied 1 database migration', [last]]],
          );
          assert.deepEqual(await start(), []);
        },
      );
    });

    it('refuses, with the unknown migration named, a database a newer version upgraded, before applying anything', async () => {
      const last = names.at(-1)!;
      // The database ran every migration but the last, then a newer version's own one.
      await withOldDatabase(
        only((n) => n !== last),
        async ({ config, database, recorded, migrationTable }) => {
          await migrationTable()
            .insertInto('kysely_migration')
            .values({ name: FUTURE, timestamp: new Date().toISOString() })
            .execute();
          await assert.rejects(migrateToLatest(database.db, all, config), (error: unknown) => {
            assert.ok(error instanceof NewerDatabaseError, `got ${String(error)}`);
            assert.deepEqual(error.unknownMigrations, [FUTURE]);
            assert.match(error.message, /upgraded by a newer version of Tollgate/);
            assert.match(error.message, new RegExp(FUTURE));
            assert.match(error.message, /restore a backup made before the upgrade/);
            return true;
          });
          // Refused before the pending migration ran: the record is as the newer version left it.
          const after = await recorded();
          assert.ok(!after.includes(last), `${last} was applied`);
          assert.ok(after.includes(FUTURE));
          // `serve` and every CLI command start through createService: they stop with the same error.
          await assert.rejects(createService({ config, timers: false }), NewerDatabaseError);
        },
      );
    });
  });
}
