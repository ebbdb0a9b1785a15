import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { TestDatabaseSpace, selectedDatabases } from '../testing/harness.ts';
import { openDatabase } from '../platform/db/connect.ts';
import { migrateToLatest } from '../platform/db/migrate.ts';
import { systemClock } from '../platform/clock.ts';
import { loadConfig } from '../config.ts';
import { allMigrations } from '../features.ts';
import { createBilling } from './service.ts';
import { authorizeApp, insertApiKey, insertUser } from './testing/fixtures.ts';
import type { UsageDraft } from './usage-records.ts';
import { allTables } from '../testing/all-tables.ts';

/** Every message the pg client sends as a query: its text, and its statement name when it ran as a named prepared statement. */
const sent: Array<{ text: string; name?: string }> = [];
const clientQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
  if (typeof config === 'string') sent.push({ text: config });
  else if (config && typeof config === 'object' && 'text' in config)
    sent.push({ text: String(config.text), name: (config as { name?: string }).name });
  return (clientQuery as (...args: unknown[]) => unknown).call(this, config, ...rest);
} as typeof clientQuery;

/** What one billing step sent: `fn` runs it; round trips are the pg client's queries (BEGIN and COMMIT included). */
async function measure(fn: () => Promise<unknown>): Promise<Array<{ text: string; name?: string }>> {
  sent.length = 0;
  await fn();
  return sent.splice(0);
}

// Issue 18: on PostgreSQL a call's billing is at most two round trips — place; settle with its usage record —
// each one named prepared statement. These counts are the figures docs/scaling.md builds on.
if (selectedDatabases().includes('postgres')) {
  describe('round trips of a call’s billing on postgres', () => {
    const space = new TestDatabaseSpace('postgres');
    after(() => space.drop());

    it('places a hold with two subjects’ limits in one named statement, and settles or releases it with its usage record in one', async () => {
      await space.create();
      const config = loadConfig({ ...space.env(), LOG_LEVEL: 'warn', REPLICATE_WEBHOOK_SECRET: '' });
      const database = openDatabase(config);
      try {
        await migrateToLatest(database.db, allMigrations(), config);
        const ctx = { db: database.db, dialect: database.dialect, clock: systemClock, config } as any;
        const billing = createBilling(ctx);
        const userId = await insertUser(ctx);
        const appId = await authorizeApp(ctx, userId, { daily: 900_000_000, monthly: 900_000_000 });
        const keyId = await insertApiKey(ctx, userId, { limit: 900_000_000, period: 'daily' });
        await billing.grant(userId, 1_000_000_000, 'test');
        const draft = (cost: number): UsageDraft => ({
          billed: cost,
          record: {
            user_id: userId,
            app_id: appId,
            key_id: keyId,
            model: 'm',
            kind: 'chat',
            prompt_tokens: 3,
            completion_tokens: 4,
            latency_ms: 5,
            status: 'ok',
            hold_id: null,
            created_at: Date.now(),
          },
        });

        for (let round = 0; round < 3; round++) {
          let holdId = '';
          const place = await measure(
            async () => (holdId = (await billing.placeHold({ userId, appId, keyId, amount: 5_000 })).holdId),
          );
          assert.equal(place.length, 1, `placing sent ${place.map((q) => q.text).join(' | ')}`);
          assert.match(place[0]!.text, /tollgate_place_hold/);
          assert.ok(place[0]!.name, 'placing runs as a named prepared statement');
          // 7_000 billed, 5_000 held: 5_000 captured and 2_000 uncollected on the usage record.
          const settle = await measure(() => billing.settleHold(holdId, 5_000, { userId, usage: draft(7_000) }));
          assert.equal(settle.length, 1, `settling sent ${settle.map((q) => q.text).join(' | ')}`);
          assert.match(settle[0]!.text, /tollgate_close_hold/);
          assert.ok(settle[0]!.name, 'settling runs as a named prepared statement');
          const record = await allTables(ctx.db)
            .selectFrom('usage_records')
            .select(['cost', 'uncollected', 'settlement'])
            .where('user_id', '=', userId)
            .orderBy('created_at', 'desc')
            .executeTakeFirstOrThrow();
          assert.deepEqual({ ...record }, { cost: 5_000, uncollected: 2_000, settlement: null });

          const released = (await billing.placeHold({ userId, appId, keyId, amount: 1_000 })).holdId;
          const release = await measure(() => billing.releaseHold(released, { userId, usage: draft(0) }));
          assert.equal(release.length, 1);
          // A second close finds nothing open: still one statement, and nothing written.
          assert.deepEqual(await billing.settleHold(released, 10, { userId, usage: draft(10) }), {
            settled: false,
            captured: 0,
          });
        }
        assert.equal(
          (
            await allTables(database.db)
              .selectFrom('usage_records')
              .select('id')
              .where('user_id', '=', userId)
              .execute()
          ).length,
          6,
        );
        assert.deepEqual(await billing.getBalance(userId), {
          balance: 1_000_000_000 - 15_000,
          reserved: 0,
          available: 1_000_000_000 - 15_000,
        });
        assert.equal((await billing.verify()).ok, true);
      } finally {
        await database.close();
      }
    });

    it('a weekly limit, summed from the daily counters inside the function, keeps placing at one named statement', async () => {
      const config = loadConfig({ ...space.env(), LOG_LEVEL: 'warn', REPLICATE_WEBHOOK_SECRET: '' });
      const database = openDatabase(config);
      try {
        const ctx = { db: database.db, dialect: database.dialect, clock: systemClock, config } as any;
        const billing = createBilling(ctx);
        const userId = await insertUser(ctx);
        const appId = await authorizeApp(ctx, userId, { daily: 900_000_000, weekly: 12_000 });
        const keyId = await insertApiKey(ctx, userId, { limit: 11_000, period: 'weekly' });
        await billing.grant(userId, 1_000_000_000, 'test');
        for (const expected of ['placed', 'placed', 'refused weekly']) {
          let outcome = 'placed';
          const place = await measure(() =>
            billing.placeHold({ userId, appId, keyId, amount: 5_000 }).then(
              () => undefined,
              (error: { details?: { limitType?: string } }) => void (outcome = `refused ${error.details?.limitType}`),
            ),
          );
          assert.equal(outcome, expected);
          assert.equal(place.length, 1, `placing sent ${place.map((q) => q.text).join(' | ')}`);
          assert.match(place[0]!.text, /tollgate_place_hold/);
          assert.ok(place[0]!.name, 'placing runs as a named prepared statement');
        }
      } finally {
        await database.close();
      }
    });
  });
}
