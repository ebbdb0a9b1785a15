import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { TestDatabaseSpace, selectedDatabases } from '../testing/harness.ts';
import { openDatabase } from '../platform/db/connect.ts';
import { migrateToLatest } from '../platform/db/migrate.ts';
import { loadConfig } from '../config.ts';
import { createService } from '../service.ts';
import { allMigrations } from '../features.ts';

/** The migration that moved the spending limits into billing's own table. */
const MOVE = '1010_billing_spending_limits';

for (const kind of selectedDatabases()) {
  describe(`upgrading a ${kind} database with spending limits in it`, () => {
    const space = new TestDatabaseSpace(kind);
    after(() => space.drop());

    it("moves the apps' and keys' limits into billing's table, where holds keep obeying them", async () => {
      await space.create();
      const config = loadConfig({
        ...space.env(),
        LOG_LEVEL: 'silent',
        SWEEP_INTERVAL_SECONDS: '0',
        REPLICATE_WEBHOOK_SECRET: '',
      });
      const before = Object.fromEntries(Object.entries(allMigrations()).filter(([name]) => name < MOVE));
      const database = openDatabase(config);
      const now = Date.now();
      try {
        await migrateToLatest(database.db, before, config);
        const db = database.db as any;
        await db
          .insertInto('users')
          .values({
            id: 'usr_upgrade',
            email: 'upgrade@example.com',
            name: 'U',
            image: null,
            password_hash: '!',
            created_at: now,
          })
          .execute();
        await db
          .insertInto('oauth_clients')
          .values({
            client_id: 'app_upgrade',
            name: 'A',
            type: 'public',
            client_secret_hash: null,
            redirect_uris: '["http://127.0.0.1/cb"]',
            scopes: 'ai:chat',
            owner_user_id: null,
            created_at: now,
          })
          .execute();
        await db
          .insertInto('authorized_apps')
          .values({
            user_id: 'usr_upgrade',
            client_id: 'app_upgrade',
            scopes: 'ai:chat',
            daily_limit: 2_000_000,
            monthly_limit: null,
            total_limit: 9_000_000,
            authorized_at: now,
            last_used_at: null,
            revoked_at: null,
          })
          .execute();
        for (const [id, limit, period] of [
          ['key_daily', 1_500_000, 'daily'],
          ['key_none', null, null],
          ['key_noperiod', 7, null],
        ] as const) {
          await db
            .insertInto('api_keys')
            .values({
              id,
              user_id: 'usr_upgrade',
              app_id: null,
              name: id,
              key_hash: `h-${id}`,
              key_sealed: 'x',
              permissions: '[]',
              limit_micro: limit,
              limit_period: period,
              last_used_at: null,
              created_at: now,
              revoked_at: null,
            })
            .execute();
        }
      } finally {
        await database.close();
      }

      const service = await createService({ config, timers: false });
      try {
        const billing = service.ctx.billing;
        assert.deepEqual(await billing.appLimits('usr_upgrade', 'app_upgrade'), {
          daily: 2_000_000,
          weekly: null,
          monthly: null,
          total: 9_000_000,
        });
        const keyLimits = await billing.keyLimits(['key_daily', 'key_none', 'key_noperiod']);
        const limitOf = (limit: { amount: number; period: string } | null) =>
          limit && { amount: limit.amount, period: limit.period };
        assert.deepEqual(Object.fromEntries([...keyLimits].map(([id, limit]) => [id, limitOf(limit)])), {
          key_daily: { amount: 1_500_000, period: 'daily' },
          key_none: null,
          key_noperiod: { amount: 7, period: 'total' },
        });
        await billing.grant('usr_upgrade', 10_000_000, 'test');
        await assert.rejects(
          billing.placeHold({ userId: 'usr_upgrade', appId: 'app_upgrade', keyId: null, amount: 2_000_001 }),
          (error: any) => error.code === 'SPENDING_LIMIT_EXCEEDED' && error.details.limitType === 'daily',
        );
        await assert.rejects(
          billing.placeHold({ userId: 'usr_upgrade', appId: null, keyId: 'key_daily', amount: 1_500_001 }),
          (error: any) => error.code === 'SPENDING_LIMIT_EXCEEDED',
        );
        assert.ok(
          await billing.placeHold({
            userId: 'usr_upgrade',
            appId: 'app_upgrade',
            keyId: 'key_daily',
            amount: 1_500_000,
          }),
        );
        const columns = async (table: string) =>
          (await service.ctx.db.introspection.getTables()).find((t) => t.name === table)!.columns.map((c) => c.name);
        assert.ok(!(await columns('authorized_apps')).includes('daily_limit'), 'the old copies are gone');
        assert.ok(!(await columns('api_keys')).includes('limit_micro'));
      } finally {
        await service.close();
      }
    });
  });
}
