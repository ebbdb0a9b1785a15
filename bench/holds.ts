import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../src/config.ts';
import { createService, type ServiceContext } from '../src/service.ts';
import { insertApiKey, insertUser } from '../src/billing/testing/fixtures.ts';
import { TestDatabaseSpace, TEST_POSTGRES_URL, type TestDatabase } from '../src/testing/harness.ts';
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
 * On PostgreSQL (on this machine) it also reads the CPU time of the server's backends serving this process
 * (found by application name in pg_stat_activity, their time in /proc): the server's CPU per call, which shares
 * the machine's cores with the gateway, and which a change to the billing functions or batching moves.
 *
 * `node bench/holds.ts [sqlite|postgres] [rounds]` prints one JSON line per database and path.
 */

/** Users the billing benches spread their calls over. */
export const USERS = 10;
const CONCURRENCY = 64;

/** This process's connections name themselves so, for {@link backendCpuUs}. */
const APPLICATION_NAME = `tollgate-holds-bench-${process.pid}`;
process.env.PGAPPNAME = APPLICATION_NAME;

/**
 * CPU time (user + system, µs) of the PostgreSQL backends of this process's connections, by pid; null when the
 * server is not on this machine (their /proc entries unreadable).
 */
async function backendCpuUs(admin: pg.Client): Promise<Map<number, number> | null> {
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE application_name = $1', [
    APPLICATION_NAME,
  ]);
  const byPid = new Map<number, number>();
  for (const { pid } of rows) {
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return null;
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    byPid.set(pid, (Number(fields[11]) + Number(fields[12])) * (1_000_000 / 100));
  }
  return byPid;
}

/**
 * Measures the backends' CPU from now until the returned function is called: sampled every 200 ms, as the pool
 * closes idle connections and opens new ones (a backend that exits loses at most its last 200 ms).
 */
async function watchBackendCpu(): Promise<() => Promise<number | null>> {
  const admin = new pg.Client({ connectionString: TEST_POSTGRES_URL, application_name: 'tollgate-holds-bench-admin' });
  await admin.connect();
  const first = await backendCpuUs(admin);
  const last = new Map(first);
  let readable = first !== null;
  const sample = async () => {
    const now = await backendCpuUs(admin);
    if (now === null) readable = false;
    else for (const [pid, us] of now) last.set(pid, us);
  };
  let sampling = Promise.resolve();
  const timer = setInterval(() => (sampling = sampling.then(sample)), 200);
  return async () => {
    clearInterval(timer);
    await sampling;
    await sample();
    await admin.end();
    if (!readable) return null;
    let total = 0;
    for (const [pid, us] of last) total += us - (first?.get(pid) ?? 0);
    return total;
  };
}

/** A service on `space` as the billing benches run it: no timers, no sweep, warnings only. */
export function billingBenchService(space: TestDatabaseSpace): ReturnType<typeof createService> {
  return createService({
    config: loadConfig({
      ...space.env(),
      LOG_LEVEL: 'warn',
      SWEEP_INTERVAL_SECONDS: '0',
      REPLICATE_WEBHOOK_SECRET: '',
    }),
    timers: false,
  });
}

/**
 * Who the billing benches' calls are made for: {@link USERS} users, each with a key under a daily limit and
 * credits for any run.
 */
export async function benchPayers(ctx: ServiceContext): Promise<Array<{ userId: string; keyId: string }>> {
  const payers: Array<{ userId: string; keyId: string }> = [];
  for (let i = 0; i < USERS; i++) {
    const userId = await insertUser(ctx);
    const keyId = await insertApiKey(ctx, userId, { limit: 1_000_000_000_000, period: 'daily' });
    await ctx.billing.grant(userId, 1_000_000_000_000, 'bench');
    payers.push({ userId, keyId });
  }
  return payers;
}

async function measure(kind: TestDatabase, rounds: number): Promise<Array<Record<string, unknown>>> {
  const space = new TestDatabaseSpace(kind);
  await space.create();
  const service = await billingBenchService(space);
  try {
    const { ctx } = service;
    const billing = ctx.billing;
    const payers = await benchPayers(ctx);
    const results: Array<Record<string, unknown>> = [];
    const paths: Array<[string, Billing]> = [
      [kind === 'postgres' ? 'one statement per step' : 'group commit', billing],
    ];
    if (kind === 'postgres')
      paths.push(['transaction per step (before)', createBilling({ ...ctx, dialect: 'sqlite' })]);
    for (const [path, pathBilling] of paths)
      results.push({ database: kind, path, rounds, ...(await rate(pathBilling, payers, rounds, kind)) });
    const batches = batchStats(ctx.db);
    if (batches)
      results[0]!['calls per statement (place, close)'] = [batches.place, batches.close]
        .map((b) => (b.calls / b.statements).toFixed(2))
        .join(', ');
    if (kind === 'sqlite') {
      const { userId, keyId } = payers[0]!;
      results[0]!['WAL bytes per place+settle, one at a time'] = await walBytesPerCall(space.env().DATA_DIR!, () =>
        placeAndSettle(billing, userId, keyId),
      );
    }
    const report = await billing.verify();
    for (const result of results) result['ledger verifies'] = report.ok;
    return results;
  } finally {
    await service.close();
    await space.drop();
  }
}

/** The usage record a settle writes, as the meter's does. */
function usageOf(userId: string, keyId: string): UsageDraft {
  return {
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
  };
}

/** One call's billing as the meter does it: a hold placed on the key, then settled with its usage record. */
export async function placeAndSettle(billing: Billing, userId: string, keyId: string): Promise<void> {
  const { holdId } = await billing.placeHold({ userId, appId: null, keyId, amount: 1_000 });
  await billing.settleHold(holdId, 500, { userId, usage: usageOf(userId, keyId) });
}

/**
 * WAL bytes one call writes on SQLite (frames of page size + 24-byte header), from the wal-index header in
 * `-shm` (native-endian: the page size a u16 at byte 14, `mxFrame` a u32 at 16, the salts at 32–39) before and
 * after 50 calls one at a time. A WAL started over between the two reads (its salts change) voids the try.
 */
async function walBytesPerCall(dataDir: string, call: () => Promise<void>): Promise<number | null> {
  const header = Buffer.alloc(40);
  const read = () => {
    const fd = openSync(join(dataDir, 'tollgate.db-shm'), 'r');
    try {
      readSync(fd, header, 0, 40, 0);
    } finally {
      closeSync(fd);
    }
    return {
      frames: header.readUInt32LE(16),
      pageSize: header.readUInt16LE(14),
      salts: header.subarray(32, 40).toString('hex'),
    };
  };
  const CALLS = 50;
  for (let attempt = 0; attempt < 20; attempt++) {
    const before = read();
    for (let i = 0; i < CALLS; i++) await call();
    const after = read();
    if (after.frames > before.frames)
      return Math.round(((after.frames - before.frames) * (after.pageSize + 24)) / CALLS);
  }
  return null;
}

/** Places and settles holds (with a usage record) one at a time, then 64 at a time. */
async function rate(
  billing: Billing,
  payers: Array<{ userId: string; keyId: string }>,
  rounds: number,
  kind: TestDatabase,
): Promise<Record<string, unknown>> {
  let next = 0;
  const round = async () => {
    const { userId, keyId } = payers[next++ % USERS]!;
    await placeAndSettle(billing, userId, keyId);
  };
  for (let i = 0; i < 200; i++) await round();
  const cpu = async () => {
    const node = process.cpuUsage();
    const server = kind === 'postgres' ? await watchBackendCpu() : async () => null;
    return async (calls: number) => {
      const used = process.cpuUsage(node);
      const serverUs = await server();
      return {
        node: Math.round((used.user + used.system) / calls),
        server: serverUs === null ? null : Math.round(serverUs / calls),
      };
    };
  };
  let stop = await cpu();
  let started = performance.now();
  for (let i = 0; i < rounds; i++) await round();
  const sequentialUs = ((performance.now() - started) * 1000) / rounds;
  const sequentialCpu = await stop(rounds);
  stop = await cpu();
  started = performance.now();
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = 0; i < rounds / CONCURRENCY; i++) await round();
    }),
  );
  const concurrentRounds = Math.floor(rounds / CONCURRENCY) * CONCURRENCY;
  const concurrentUs = ((performance.now() - started) * 1000) / concurrentRounds;
  const concurrentCpu = await stop(concurrentRounds);
  return {
    'µs per place+settle, one at a time': Math.round(sequentialUs),
    [`µs per place+settle, ${CONCURRENCY} at a time`]: Math.round(concurrentUs),
    'concurrent vs one at a time': `${(sequentialUs / concurrentUs).toFixed(2)}×`,
    'CPU µs per call, one at a time (this process, PostgreSQL backends)': [sequentialCpu.node, sequentialCpu.server],
    [`CPU µs per call, ${CONCURRENCY} at a time (this process, PostgreSQL backends)`]: [
      concurrentCpu.node,
      concurrentCpu.server,
    ],
  };
}

if (import.meta.main) {
  const [which = 'sqlite,postgres', rounds = '2048'] = process.argv.slice(2);
  for (const kind of which.split(',') as TestDatabase[])
    for (const line of await measure(kind, Number(rounds))) console.log(JSON.stringify(line));
}
