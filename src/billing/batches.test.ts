import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { TestDatabaseSpace, selectedDatabases } from '../testing/harness.ts';
import { openDatabase } from '../platform/db/connect.ts';
import { migrateToLatest } from '../platform/db/migrate.ts';
import { systemClock } from '../platform/clock.ts';
import { loadConfig } from '../config.ts';
import { ApiError } from '../platform/errors.ts';
import { allMigrations } from '../features.ts';
import { createBilling } from './service.ts';
import { batchStats } from './pg-holds.ts';
import { insertApiKey, insertUser } from './testing/fixtures.ts';
import { sql } from 'kysely';

// PostgreSQL's billing batches (pg-holds.ts, platform/db/statement-batch.ts): concurrent placements and closes
// share statements, and each caller still gets exactly its own outcome.
if (selectedDatabases().includes('postgres')) {
  describe('billing batches on postgres', () => {
    it('concurrent holds share statements, each caller gets its own answer, and a failing member fails alone', async () => {
      // Five users with 10,000 each and a daily key limit of 6,000; every hold is 1,000.
      await withPayers({ poolSize: 2, payers: 5, dailyKeyLimit: 6_000 }, async ({ database, billing, payers }) => {
        const hold = (payer: { userId: string; keyId: string }) =>
          billing.placeHold({ ...payer, appId: null, amount: 1_000 });
        // Four holds per user at once (the first call goes out alone, as nothing is running yet; the rest queue).
        const first = payers.flatMap((payer) => Array.from({ length: 4 }, () => payer));
        const firstOutcomes = await Promise.all(first.map(hold));
        const placed = batchStats(database.db)!.place;
        assert.ok(
          placed.statements < placed.calls,
          `placements shared statements: ${placed.calls} calls in ${placed.statements}`,
        );

        // Four more each: two fit the key's daily limit of 6,000, two are refused with 429. One more hold names a
        // user that does not exist: its wallet cannot be created (foreign key), which fails the whole batch
        // statement it is in; the batch's other members must still get their own outcomes.
        const second = payers.flatMap((payer) => Array.from({ length: 4 }, () => payer));
        const before = { ...batchStats(database.db)!.place };
        let ghost: Promise<unknown> = Promise.resolve();
        const placing = second.map((payer, i) => {
          if (i === 3)
            ghost = billing.placeHold({ userId: 'usr_does_not_exist', appId: null, keyId: null, amount: 1_000 }).then(
              () => null,
              (error: unknown) => error,
            );
          return hold(payer);
        });
        const secondOutcomes = await Promise.allSettled(placing);
        assert.equal(
          ((await ghost) as { code?: string } | null)?.code,
          '23503',
          'the hold of an unknown user fails with the foreign key error',
        );
        const again = batchStats(database.db)!.place;
        assert.ok(
          again.statements - before.statements > again.calls - before.calls,
          'the failed batch’s members ran again, one by one',
        );
        for (const payer of payers) {
          const mine = secondOutcomes.filter((_, i) => second[i] === payer);
          assert.equal(mine.filter((o) => o.status === 'fulfilled').length, 2, 'two more holds per user fit the limit');
          for (const refused of mine.filter((o) => o.status === 'rejected')) {
            assert.ok(
              refused.reason instanceof ApiError && refused.reason.code === 'SPENDING_LIMIT_EXCEEDED',
              String(refused.reason),
            );
          }
          assert.deepEqual(await billing.getBalance(payer.userId), {
            balance: 10_000,
            reserved: 6_000,
            available: 4_000,
          });
        }
        const outcomes = [
          ...firstOutcomes.map((value) => ({ status: 'fulfilled' as const, value })),
          ...secondOutcomes,
        ];
        const attempts = [...first, ...second];

        // Settle them all at once: captures of 400 each.
        const holds = outcomes.flatMap((o, i) =>
          o.status === 'fulfilled' ? [{ holdId: o.value.holdId, userId: attempts[i]!.userId }] : [],
        );
        const settled = await Promise.all(
          holds.map(({ holdId, userId }) => billing.settleHold(holdId, 400, { userId })),
        );
        assert.ok(settled.every((s) => s.settled && s.captured === 400));
        const closed = batchStats(database.db)!.close;
        assert.ok(
          closed.statements < closed.calls,
          `closes shared statements: ${closed.calls} calls in ${closed.statements}`,
        );
        for (const payer of payers)
          assert.deepEqual(await billing.getBalance(payer.userId), {
            balance: 10_000 - 6 * 400,
            reserved: 0,
            available: 10_000 - 6 * 400,
          });
        assert.equal((await billing.verify()).ok, true);
      });
    });

    it('with several lanes, each user’s concurrent holds and settles still share statements, and every caller gets its own', async () => {
      // A pool of 8 gives two lanes (pg-holds.ts): users hash to one or the other.
      await withPayers({ poolSize: 8, payers: 8, dailyKeyLimit: 100_000 }, async ({ database, billing, payers }) => {
        const attempts = payers.flatMap((payer) => Array.from({ length: 6 }, () => payer));
        const holds = await Promise.all(
          attempts.map((payer) => billing.placeHold({ ...payer, appId: null, amount: 1_000 })),
        );
        assert.equal(
          new Set(holds.map((hold) => hold.holdId)).size,
          attempts.length,
          'every caller got a hold of its own',
        );
        const placed = batchStats(database.db)!.place;
        assert.equal(placed.calls, attempts.length);
        assert.ok(
          placed.statements < placed.calls,
          `placements shared statements: ${placed.calls} calls in ${placed.statements}`,
        );
        const settled = await Promise.all(
          holds.map((hold, i) => billing.settleHold(hold.holdId, 300, { userId: attempts[i]!.userId })),
        );
        assert.ok(settled.every((s) => s.settled && s.captured === 300));
        const closed = batchStats(database.db)!.close;
        assert.ok(
          closed.statements < closed.calls,
          `closes shared statements: ${closed.calls} calls in ${closed.statements}`,
        );
        for (const payer of payers)
          assert.deepEqual(await billing.getBalance(payer.userId), {
            balance: 10_000 - 6 * 300,
            reserved: 0,
            available: 10_000 - 6 * 300,
          });
        assert.equal((await billing.verify()).ok, true);
      });
    });
    it('a batch’s ledger headers carry each wallet as it was after their own movement, in order, and the counters their sums', async () => {
      // Three users with 10,000 each and a daily key limit of 5,000; every hold is 1,000, so a user's rows
      // share batches: first three each (all placed), then four each (two placed, two over the limit).
      await withPayers({ poolSize: 2, payers: 3, dailyKeyLimit: 5_000 }, async ({ database, billing, payers }) => {
        const placed: Array<{ holdId: string; userId: string }> = [];
        for (const count of [3, 4]) {
          const attempts = payers.flatMap((payer) => Array.from({ length: count }, () => payer));
          const outcomes = await Promise.allSettled(
            attempts.map((payer) => billing.placeHold({ ...payer, appId: null, amount: 1_000 })),
          );
          outcomes.forEach((o, i) => {
            if (o.status === 'fulfilled') placed.push({ holdId: o.value.holdId, userId: attempts[i]!.userId });
            else
              assert.ok(o.reason instanceof ApiError && o.reason.code === 'SPENDING_LIMIT_EXCEEDED', String(o.reason));
          });
        }
        assert.equal(placed.length, 3 * 5, 'five holds per user fit the limit');
        // Settle all at once, capturing 300 of one in three and releasing the others' rest.
        const settled = await Promise.all(
          placed.map((hold, i) => billing.settleHold(hold.holdId, i % 3 === 0 ? 300 : 0, { userId: hold.userId })),
        );
        assert.ok(settled.every((s) => s.settled));
        const batches = batchStats(database.db)!;
        assert.ok(batches.place.statements < batches.place.calls && batches.close.statements < batches.close.calls);

        // Every header against the user's entries up to it (by seq): balance is available + held, reserved is held.
        const { rows } = await sql<{ headers: number; wrong: number }>`
          WITH chain AS (
            SELECT t.balance_after, t.reserved_after,
                   sum(e.available + e.held) OVER (PARTITION BY t.user_id ORDER BY t.seq) AS balance,
                   sum(e.held) OVER (PARTITION BY t.user_id ORDER BY t.seq) AS reserved
              FROM ledger_transactions t,
                   LATERAL (SELECT coalesce(sum(amount) FILTER (WHERE account = 'user:' || t.user_id || ':available'), 0) AS available,
                                   coalesce(sum(amount) FILTER (WHERE account = 'user:' || t.user_id || ':held'), 0) AS held
                              FROM ledger_entries WHERE transaction_id = t.id) e
          )
          SELECT count(*)::int AS headers, count(*) FILTER (WHERE balance_after <> balance OR reserved_after <> reserved)::int AS wrong
            FROM chain`.execute(database.db);
        assert.equal(rows[0]!.headers, 3 + 3 * 5 * 2, 'a grant, five holds and five closes per user');
        assert.equal(rows[0]!.wrong, 0, 'every header carries its wallet after its own movement');
        for (const [i, payer] of payers.entries()) {
          const captured = placed.filter((hold, j) => hold.userId === payer.userId && j % 3 === 0).length * 300;
          assert.deepEqual(await billing.getBalance(payer.userId), {
            balance: 10_000 - captured,
            reserved: 0,
            available: 10_000 - captured,
          });
          const counters = await sql<{ period: string; spent: number; held: number }>`
            SELECT period, spent, held FROM spend_counters WHERE subject = ${'key:' + payer.keyId} ORDER BY period`.execute(
            database.db,
          );
          assert.deepEqual(
            counters.rows.map((c) => [c.period, c.spent, c.held]),
            [
              ['daily', captured, 0],
              ['monthly', captured, 0],
              ['total', captured, 0],
            ],
            `user ${i}'s key counters`,
          );
        }
        assert.equal((await billing.verify()).ok, true);
      });
    });
  });
}

/**
 * Runs `run` on billing over a schema of its own (dropped after), migrated, with a pool of `poolSize` and
 * `payers` users holding 10,000 credits each and one API key each under a daily limit of `dailyKeyLimit`.
 */
async function withPayers(
  setup: { poolSize: number; payers: number; dailyKeyLimit: number },
  run: (given: {
    database: ReturnType<typeof openDatabase>;
    billing: ReturnType<typeof createBilling>;
    payers: Array<{ userId: string; keyId: string }>;
  }) => Promise<void>,
): Promise<void> {
  const space = new TestDatabaseSpace('postgres');
  await space.create();
  const config = loadConfig({
    ...space.env(),
    DATABASE_POOL_SIZE: String(setup.poolSize),
    LOG_LEVEL: 'warn',
    REPLICATE_WEBHOOK_SECRET: '',
  });
  const database = openDatabase(config);
  try {
    await migrateToLatest(database.db, allMigrations(), config);
    const ctx = { db: database.db, dialect: database.dialect, clock: systemClock, config } as any;
    const billing = createBilling(ctx);
    const payers: Array<{ userId: string; keyId: string }> = [];
    for (let i = 0; i < setup.payers; i++) {
      const userId = await insertUser(ctx);
      payers.push({ userId, keyId: await insertApiKey(ctx, userId, { limit: setup.dailyKeyLimit, period: 'daily' }) });
      await billing.grant(userId, 10_000, 'test');
    }
    await run({ database, billing, payers });
  } finally {
    await database.close();
    await space.drop();
  }
}
