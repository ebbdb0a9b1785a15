import { DatabaseSync, type StatementSync } from 'node:sqlite';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * `node bench/multirow.ts [rounds]`: what sharing statements between calls could save billing on SQLite.
 * Group commit already shares one COMMIT among the calls of an event-loop turn; each call still runs its own
 * statements. This writes a ledger movement per call (a header with its two indexes and two entries, the
 * shapes and pragmas of billing's tables) for 16 calls per transaction, two ways, alternated: each call's two
 * statements, and all 16 calls' rows in two multi-row statements. The difference is the statements' own
 * cost (binding, stepping a program, crossing into SQLite) against the rows' (B-tree inserts), which no
 * batching removes. docs/scaling.md, fifteenth pass.
 */

const ROUNDS = Number(process.argv[2] ?? 5);
const CALLS = 16;
const TRANSACTIONS = 500;

const dir = mkdtempSync(join(tmpdir(), 'tollgate-multirow-'));
const db = new DatabaseSync(join(dir, 'bench.db'));
db.exec(`PRAGMA page_size = 1024; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;
  CREATE TABLE ledger_transactions (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,
    user_id TEXT NOT NULL, amount INTEGER NOT NULL, created_at INTEGER NOT NULL);
  CREATE INDEX ledger_transactions_user ON ledger_transactions (user_id, seq);
  CREATE TABLE ledger_entries (transaction_id TEXT NOT NULL REFERENCES ledger_transactions (id), account TEXT NOT NULL,
    amount INTEGER NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (transaction_id, account)) WITHOUT ROWID;`);

const rows = (count: number) => Array.from({ length: count }, () => '(?, ?, ?, ?)').join(', ');
const header = db.prepare(`INSERT INTO ledger_transactions (id, user_id, amount, created_at) VALUES ${rows(1)}`);
const entries = db.prepare(
  `INSERT INTO ledger_entries (transaction_id, account, amount, created_at) VALUES ${rows(2)}`,
);
const headers = db.prepare(`INSERT INTO ledger_transactions (id, user_id, amount, created_at) VALUES ${rows(CALLS)}`);
const allEntries = db.prepare(
  `INSERT INTO ledger_entries (transaction_id, account, amount, created_at) VALUES ${rows(2 * CALLS)}`,
);

let next = 0;
/** One call's rows: a header for one of 10 users and its two entries (ids grow, as billing's do). */
function call(i: number): { header: Array<string | number>; entries: Array<string | number> } {
  const id = `txn_${(next++).toString(36).padStart(12, '0')}`;
  const user = `usr_${i % 10}`;
  const now = Date.now();
  return {
    header: [id, user, 5, now],
    entries: [id, `user:${user}:available`, -5, now, id, `user:${user}:held`, 5, now],
  };
}

/** µs per call of `TRANSACTIONS` transactions of `CALLS` calls each, written by `write`. */
function measure(write: (calls: ReturnType<typeof call>[]) => void): number {
  const started = performance.now();
  for (let t = 0; t < TRANSACTIONS; t++) {
    const calls = Array.from({ length: CALLS }, (_, i) => call(i));
    db.exec('BEGIN IMMEDIATE');
    write(calls);
    db.exec('COMMIT');
  }
  return ((performance.now() - started) * 1000) / (TRANSACTIONS * CALLS);
}

const run = (statement: StatementSync, values: Array<string | number>) => statement.run(...values);
const perCall = (calls: ReturnType<typeof call>[]) => {
  for (const c of calls) {
    run(header, c.header);
    run(entries, c.entries);
  }
};
const shared = (calls: ReturnType<typeof call>[]) => {
  run(
    headers,
    calls.flatMap((c) => c.header),
  );
  run(
    allEntries,
    calls.flatMap((c) => c.entries),
  );
};

try {
  measure(perCall);
  measure(shared);
  const results: Array<{ perCall: number; shared: number }> = [];
  for (let round = 0; round < ROUNDS; round++) results.push({ perCall: measure(perCall), shared: measure(shared) });
  const median = (values: number[]) => values.sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
  const a = median(results.map((r) => r.perCall));
  const b = median(results.map((r) => r.shared));
  console.log(
    JSON.stringify({
      callsPerTransaction: CALLS,
      'µs per call, its own 2 statements': Number(a.toFixed(1)),
      'µs per call, 2 statements shared by all': Number(b.toFixed(1)),
      'shared / own': Number((b / a).toFixed(2)),
      rounds: results.map((r) => [Number(r.perCall.toFixed(1)), Number(r.shared.toFixed(1))]),
    }),
  );
} finally {
  db.close();
  rmSync(dir, { recursive: true, force: true });
}
