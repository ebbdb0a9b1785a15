import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { TestDatabaseSpace, selectedDatabases } from '../testing/harness.ts';
import { openDatabase } from '../platform/db/connect.ts';
import { migrateToLatest } from '../platform/db/migrate.ts';
import { systemClock } from '../platform/clock.ts';
import { loadConfig } from '../config.ts';
import { createService } from '../service.ts';
import { allMigrations } from '../features.ts';
import { createBilling } from './service.ts';
import { insertUser } from './testing/fixtures.ts';
import { allTables } from '../testing/all-tables.ts';

/** The migrations that changed how holds and usage records are stored (issue 8), which this upgrade applies. */
const COMPACT_STORAGE = ['0900_billing_compact_storage', '0910_usage_records_compact_storage'];

for (const kind of selectedDatabases()) {
  describe(`upgrading a ${kind} database with money in it to the compact storage`, () => {
    const space = new TestDatabaseSpace(kind);
    after(() => space.drop());

    it('keeps every balance, hold, ledger entry and usage record, and the open hold settles afterwards', async () => {
      await space.create();
      const env = { ...space.env(), LOG_LEVEL: 'silent', SWEEP_INTERVAL_SECONDS: '0', REPLICATE_WEBHOOK_SECRET: '' };
      const config = loadConfig(env);
      // A database as it was before issue 8: every migration that sorts before the compact storage (later
      // ones cannot run first: migrations apply in name order).
      const before = Object.fromEntries(Object.entries(allMigrations()).filter(([name]) => name < COMPACT_STORAGE[0]!));
      const database = openDatabase(config);
      const ctx = { db: database.db, dialect: database.dialect, clock: systemClock, config } as any;
      const billing = createBilling(ctx);
      let openHold: string;
      let userId: string;
      try {
        await migrateToLatest(database.db, before, config);
        // Today's billing reads columns a later migration adds (1620: the debt, movement references): they
        // exist while it seeds the old database, and go again so that the upgrade adds them itself.
        await database.db.schema
          .alterTable('wallets')
          .addColumn('debt', 'bigint', (c) => c.notNull().defaultTo(0))
          .execute();
        await database.db.schema.alterTable('ledger_transactions').addColumn('reference', 'text').execute();
        userId = await insertUser(ctx);
        await billing.grant(userId, 1_000_000, 'test');
        const settled = await billing.placeHold({ userId, appId: null, keyId: null, amount: 300_000 });
        await billing.settleHold(settled.holdId, 120_000, { userId });
        openHold = (await billing.placeHold({ userId, appId: null, keyId: null, amount: 200_000 })).holdId;
        await allTables(database.db)
          .insertInto('usage_records')
          .values({
            id: 'use_before_upgrade',
            user_id: userId,
            app_id: null,
            key_id: null,
            model: 'acme/m',
            kind: 'chat',
            prompt_tokens: 3,
            completion_tokens: 4,
            cost: 120_000,
            latency_ms: 5,
            status: 'ok',
            hold_id: settled.holdId,
            created_at: Date.now(),
          } as any)
          .execute();
        await database.db.schema.alterTable('wallets').dropColumn('debt').execute();
        await database.db.schema.alterTable('ledger_transactions').dropColumn('reference').execute();
      } finally {
        await database.close();
      }

      const service = await createService({ config, timers: false });
      try {
        const db = allTables(service.ctx.db);
        const applied = (
          await db
            .selectFrom('kysely_migration' as any)
            .select('name')
            .execute()
        ).map((row: any) => row.name);
        for (const name of COMPACT_STORAGE) assert.ok(applied.includes(name), `${name} applied`);
        const upgraded = service.ctx.billing;
        assert.deepEqual(
          await upgraded.verify().then((report) => ({ ok: report.ok, differences: report.differences })),
          { ok: true, differences: [] },
        );
        const wallet = await db
          .selectFrom('wallets')
          .select(['balance', 'reserved'])
          .where('user_id', '=', userId)
          .executeTakeFirstOrThrow();
        assert.deepEqual(
          { balance: Number(wallet.balance), reserved: Number(wallet.reserved) },
          { balance: 880_000, reserved: 200_000 },
        );
        assert.equal(
          (await db.selectFrom('usage_records').select('cost').where('user_id', '=', userId).executeTakeFirstOrThrow())
            .cost,
          120_000,
        );
        assert.deepEqual(await upgraded.settleHold(openHold, 50_000, { userId }), { settled: true, captured: 50_000 });
        assert.deepEqual(
          await upgraded.settleHold(openHold, 50_000, { userId }),
          { settled: false, captured: 0 },
          'a hold still settles exactly once',
        );
        const after = await db
          .selectFrom('wallets')
          .select(['balance', 'reserved'])
          .where('user_id', '=', userId)
          .executeTakeFirstOrThrow();
        assert.deepEqual(
          { balance: Number(after.balance), reserved: Number(after.reserved) },
          { balance: 830_000, reserved: 0 },
        );
        assert.equal((await upgraded.verify()).ok, true);
      } finally {
        await service.close();
      }
    });
  });
}
