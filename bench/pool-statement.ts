import { sql } from 'kysely';

/**
 * `node bench/pool-statement.ts <checkout> [statements] [concurrency]`: what the PostgreSQL pool of a checkout
 * (its `openDatabase`, with every wrapper it puts around pg: statement names, error marks, timeouts) costs the
 * client per statement, apart from the rest of a call: `SELECT 1` run `statements` times (30,000), `concurrency`
 * at once (16), after a warm-up of 5,000. Prints the wall time and the process's CPU time per statement, in µs.
 * Run it for two checkouts alternately (base, change, base, change…) to compare them: the PostgreSQL server
 * shares the machine, so compare the CPU column, not one run.
 */

const [checkout = process.cwd(), statementsArg = '30000', concurrencyArg = '16'] = process.argv.slice(2);
const { openDatabase } = await import(`${checkout}/src/platform/db/connect.ts`);
const database = openDatabase({
  DATABASE_URL: process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test',
  DATABASE_SCHEMA: 'public',
  DATABASE_POOL_SIZE: 10,
  DATA_DIR: '.tmp/pool-statement',
});

async function run(statements: number, concurrency: number): Promise<{ wallUs: number; cpuUs: number }> {
  let started = 0;
  const worker = async () => {
    while (started++ < statements) await sql`select 1`.execute(database.db);
  };
  const cpu = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(Array.from({ length: concurrency }, worker));
  const wallMs = performance.now() - t0;
  const used = process.cpuUsage(cpu);
  return { wallUs: (wallMs * 1000) / statements, cpuUs: (used.user + used.system) / statements };
}

await run(5000, Number(concurrencyArg));
const result = await run(Number(statementsArg), Number(concurrencyArg));
console.log(
  `${checkout}: ${result.wallUs.toFixed(1)} µs a statement, ${result.cpuUs.toFixed(1)} µs of the client's CPU a statement`,
);
await database.close();
