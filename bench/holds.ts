import { loadConfig } from '../src/config.ts';
import { createService } from '../src/service.ts';
import { insertApiKey, insertUser } from '../src/billing/testing/fixtures.ts';
import { TestDatabaseSpace, type TestDatabase } from '../src/testing/harness.ts';
import { createBilling, type Billing } from '../src/billing/service.ts';
import type { UsageDraft } from '../src/billing/usage-records.ts';
import { batchStats } from '../src/billing/pg-holds.ts';

/**
 * The money path alone, in one process and without HTTP: what one hold placed and settled costs, one at a
 * time and 64 at a time (10 users, each with a key under a daily limit, as the gateway runs them). The
 * gateway's own figures are in `npm run bench`; this one isolates billing, to see what a change to it buys.
 *
 * Each settle writes its usage record, as the meter's does. On PostgreSQL it also measures the transaction
 * path that the one-statement functions replaced (billing built as if on SQLite: same SQL, a transaction of
 * five or six statements per step), in the same run, for a ratio that the machine's load does not skew.
 *
 * `node bench/holds.ts [sqlite|postgres] [rounds]` prints one JSON line per database and path.
 */

const USERS = 10;
const CONCURRENCY = 64;

async function measure(kind: TestDatabase, rounds: number): Promise<Array<Record<string, unknown>>> {
  const space = new TestDatabaseSpace(kind);
  await space.create();
  const service = await createService({
    config: loadConfig({
      ...space.env(),
      LOG_LEVEL: 'warn',
      SWEEP_INTERVAL_SECONDS: '0',
      REPLICATE_WEBHOOK_SECRET: '',
    }),
    timers: false,
  });
  try {
    const { ctx } = service;
    const billing = ctx.billing;
    const payers: Array<{ userId: string; keyId: string }> = [];
    for (let i = 0; i < USERS; i++) {
      const userId = await insertUser(ctx);
      const keyId = await insertApiKey(ctx, userId, { limit: 1_000_000_000_000, period: 'daily' });
      await billing.grant(userId, 1_000_000_000_000, 'bench');
      payers.push({ userId, keyId });
    }
    const results: Array<Record<string, unknown>> = [];
    const paths: Array<[string, Billing]> = [
      [kind === 'postgres' ? 'one statement per step' : 'group commit', billing],
    ];
    if (kind === 'postgres')
      paths.push(['transaction per step (before)', createBilling({ ...ctx, dialect: 'sqlite' })]);
    for (const [path, pathBilling] of paths)
      results.push({ database: kind, path, rounds, ...(await rate(pathBilling, payers, rounds)) });
    const batches = batchStats(ctx.db);
    if (batches)
      results[0]!['calls per statement (place, close)'] = [batches.place, batches.close]
        .map((b) => (b.calls / b.statements).toFixed(2))
        .join(', ');
    const report = await billing.verify();
    for (const result of results) result['ledger verifies'] = report.ok;
    return results;
  } finally {
    await service.close();
    await space.drop();
  }
}

/** Places and settles holds (with a usage record) one at a time, then 64 at a time. */
async function rate(
  billing: Billing,
  payers: Array<{ userId: string; keyId: string }>,
  rounds: number,
): Promise<Record<string, unknown>> {
  let next = 0;
  const usage = (userId: string, keyId: string): UsageDraft => ({
    billed: 500,
    record: {
      user_id: userId,
      app_id: null,
      key_id: keyId,
      model: 'bench',
      kind: 'chat',
      prompt_tokens: 10,
      completion_tokens: 20,
      latency_ms: 1,
      status: 'ok',
      hold_id: null,
      created_at: Date.now(),
    },
  });
  const round = async () => {
    const { userId, keyId } = payers[next++ % USERS]!;
    const { holdId } = await billing.placeHold({ userId, appId: null, keyId, amount: 1_000 });
    await billing.settleHold(holdId, 500, { userId, usage: usage(userId, keyId) });
  };
  for (let i = 0; i < 200; i++) await round();
  let started = performance.now();
  for (let i = 0; i < rounds; i++) await round();
  const sequentialUs = ((performance.now() - started) * 1000) / rounds;
  started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = 0; i < rounds / CONCURRENCY; i++) await round();
    }),
  );
  const concurrentUs = ((performance.now() - started) * 1000) / (Math.floor(rounds / CONCURRENCY) * CONCURRENCY);
  return {
    'µs per place+settle, one at a time': Math.round(sequentialUs),
    [`µs per place+settle, ${CONCURRENCY} at a time`]: Math.round(concurrentUs),
    'concurrent vs one at a time': `${(sequentialUs / concurrentUs).toFixed(2)}×`,
  };
}

if (import.meta.main) {
  const [which = 'sqlite,postgres', rounds = '2048'] = process.argv.slice(2);
  for (const kind of which.split(',') as TestDatabase[])
    for (const line of await measure(kind, Number(rounds))) console.log(JSON.stringify(line));
}
