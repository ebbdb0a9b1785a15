import { loadConfig } from '../src/platform/config.ts';
import { createService } from '../src/service.ts';
import { insertApiKey, insertUser } from '../src/billing/testing/fixtures.ts';
import { TestDatabaseSpace, type TestDatabase } from '../src/testing/harness.ts';

/**
 * The money path alone, in one process and without HTTP: what one hold placed and settled costs, one at a
 * time and 64 at a time (10 users, each with a key under a daily limit, as the gateway runs them). The
 * gateway's own figures are in `npm run bench`; this one isolates billing, to see what a change to it buys.
 *
 * `node bench/holds.ts [sqlite|postgres] [rounds]` prints one JSON line per database.
 */

const USERS = 10;
const CONCURRENCY = 64;

async function measure(kind: TestDatabase, rounds: number): Promise<Record<string, unknown>> {
  const space = new TestDatabaseSpace(kind);
  await space.create();
  const service = await createService({ config: loadConfig({ ...space.env(), LOG_LEVEL: 'warn', SWEEP_INTERVAL_SECONDS: '0', REPLICATE_WEBHOOK_SECRET: '' }), timers: false });
  try {
    const { ctx } = service;
    const billing = ctx.services.billing;
    const payers: Array<{ userId: string; keyId: string }> = [];
    for (let i = 0; i < USERS; i++) {
      const userId = await insertUser(ctx);
      const keyId = await insertApiKey(ctx, userId, { limit: 1_000_000_000_000, period: 'daily' });
      await billing.grant(userId, 1_000_000_000_000, 'bench');
      payers.push({ userId, keyId });
    }
    let next = 0;
    const round = async () => {
      const { userId, keyId } = payers[next++ % USERS]!;
      const { holdId } = await billing.placeHold({ userId, appId: null, keyId, amount: 1_000 });
      await billing.settleHold(holdId, 500, { userId });
    };
    for (let i = 0; i < 200; i++) await round();
    let started = performance.now();
    for (let i = 0; i < rounds; i++) await round();
    const sequentialUs = ((performance.now() - started) * 1000) / rounds;
    started = performance.now();
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      for (let i = 0; i < rounds / CONCURRENCY; i++) await round();
    }));
    const concurrentUs = ((performance.now() - started) * 1000) / (Math.floor(rounds / CONCURRENCY) * CONCURRENCY);
    const report = await billing.verify();
    return {
      database: kind,
      rounds,
      'µs per place+settle, one at a time': Math.round(sequentialUs),
      [`µs per place+settle, ${CONCURRENCY} at a time`]: Math.round(concurrentUs),
      'concurrent vs one at a time': `${(sequentialUs / concurrentUs).toFixed(2)}×`,
      'ledger verifies': report.ok,
    };
  } finally {
    await service.close();
    await space.drop();
  }
}

if (import.meta.main) {
  const [which = 'sqlite,postgres', rounds = '2048'] = process.argv.slice(2);
  for (const kind of which.split(',') as TestDatabase[]) console.log(JSON.stringify(await measure(kind, Number(rounds))));
}
