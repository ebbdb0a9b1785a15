import { DatabaseSync, StatementSync } from 'node:sqlite';
import pg from 'pg';
import { TEST_POSTGRES_URL } from '../src/testing/harness.ts';
import { startBilledChat } from './billed-chat.ts';

/**
 * `node bench/statements.ts [sqlite|postgres] [calls]`: what one billed chat call costs the database, in an
 * in-process instance against the tests' mock upstream: statements and round trips per call (counted at the
 * driver: the pg client's queries, node:sqlite's statement runs and execs), and on PostgreSQL the WAL bytes
 * per call (the server's WAL position before and after; other sessions of a shared server add to it, so
 * run it twice and take the lower). The figures of docs/scaling.md come from here.
 */

const [kind = 'postgres', callsArg = '200'] = process.argv.slice(2);
if (kind !== 'sqlite' && kind !== 'postgres') throw new Error('database: sqlite or postgres');
const CALLS = Number(callsArg);

const counted = { statements: 0, texts: new Map<string, number>(), micros: new Map<string, number>() };
const keyOf = (text: string) => text.replace(/\s+/g, ' ').slice(0, 90);
const note = (text: string) => {
  counted.statements++;
  const key = keyOf(text);
  counted.texts.set(key, (counted.texts.get(key) ?? 0) + 1);
};
/** Runs `run`, adding its wall time to the statement's total (node:sqlite is synchronous: that is its cost). */
const timed = <T>(text: string, run: () => T): T => {
  const started = performance.now();
  try {
    return run();
  } finally {
    const key = keyOf(text);
    counted.micros.set(key, (counted.micros.get(key) ?? 0) + (performance.now() - started) * 1000);
  }
};
const clientQuery = pg.Client.prototype.query;
pg.Client.prototype.query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
  note(typeof config === 'string' ? config : String((config as { text?: string }).text));
  return (clientQuery as (...args: unknown[]) => unknown).call(this, config, ...rest);
} as typeof clientQuery;
for (const method of ['all', 'get', 'run', 'iterate'] as const) {
  const original = StatementSync.prototype[method] as (...args: unknown[]) => unknown;
  (StatementSync.prototype as any)[method] = function (this: StatementSync, ...args: unknown[]) {
    note(this.sourceSQL);
    return timed(this.sourceSQL, () => original.apply(this, args));
  };
}
const exec = DatabaseSync.prototype.exec;
DatabaseSync.prototype.exec = function (this: DatabaseSync, text: string) {
  note(text);
  return timed(text, () => exec.call(this, text));
};

const { chat, close } = await startBilledChat(kind);
try {
  for (let i = 0; i < 20; i++) await chat();
  const walPosition = async () => {
    if (kind !== 'postgres') return 0;
    const client = new pg.Client({ connectionString: TEST_POSTGRES_URL });
    await client.connect();
    try {
      return Number((await client.query(`SELECT pg_current_wal_lsn() - '0/0'::pg_lsn AS at`)).rows[0].at);
    } finally {
      await client.end();
    }
  };
  counted.statements = 0;
  counted.texts.clear();
  counted.micros.clear();
  const walBefore = await walPosition();
  const statementsBefore = counted.statements;
  const started = performance.now();
  for (let i = 0; i < CALLS; i++) await chat();
  const ms = performance.now() - started;
  const statements = counted.statements - statementsBefore;
  const walBytes = (await walPosition()) - walBefore;
  console.log(
    JSON.stringify({
      database: kind,
      calls: CALLS,
      statementsPerCall: statements / CALLS,
      msPerCall: +(ms / CALLS).toFixed(3),
      ...(kind === 'postgres' ? { walBytesPerCall: Math.round(walBytes / CALLS) } : {}),
    }),
  );
  // Per call: how many times each statement ran and, on SQLite, the µs it took (synchronous, so its whole cost).
  for (const [text, n] of [...counted.texts].sort(
    (a, b) => (counted.micros.get(b[0]) ?? 0) - (counted.micros.get(a[0]) ?? 0),
  ))
    console.log(
      `${(n / CALLS).toFixed(2).padStart(6)}  ${kind === 'sqlite' ? `${((counted.micros.get(text) ?? 0) / CALLS).toFixed(1).padStart(6)} µs  ` : ''}${text}`,
    );
} finally {
  await close();
}
