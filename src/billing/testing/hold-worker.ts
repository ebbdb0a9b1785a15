/**
 * Another process for the cross-process concurrency test: it opens its own connection pool on the database
 * its environment names (the test's PostgreSQL schema) and its own billing service over it, exactly as a
 * second gateway process would (without the HTTP server and the other features, whose loading would only
 * slow the test). It waits for "go" on stdin so that every worker fires at once, places `count` holds
 * concurrently, and prints one JSON line: how many were placed and each refusal's envelope with its count.
 *
 * Usage: node src/billing/testing/hold-worker.ts '{"userId":"usr_…","appId":null,"count":100,"amount":100000,"at":"2026-…Z"}'
 */
import { createInterface } from 'node:readline';
import { loadConfig } from '../../config.ts';
import { ManualClock } from '../../platform/clock.ts';
import { openDatabase } from '../../platform/db/connect.ts';
import { ApiError } from '../../platform/errors.ts';
import { createBilling } from '../service.ts';

const job = JSON.parse(process.argv[2]) as {
  userId: string;
  appId: string | null;
  count: number;
  amount: number;
  at: string;
};
const config = loadConfig(process.env, { LOG_LEVEL: 'silent' });
const database = openDatabase(config);
const billing = createBilling({ config, db: database.db, dialect: database.dialect, clock: new ManualClock(job.at) });
console.log(JSON.stringify({ ready: true }));

const lines = createInterface({ input: process.stdin });
for await (const line of lines) if (line.trim() === 'go') break;

const refusals: Record<string, number> = {};
let placed = 0;
await Promise.all(
  Array.from({ length: job.count }, async () => {
    try {
      await billing.placeHold({ userId: job.userId, appId: job.appId, keyId: null, amount: job.amount });
      placed += 1;
    } catch (error) {
      const body =
        error instanceof ApiError
          ? JSON.stringify({ status: error.status, ...error.toEnvelope() })
          : `unexpected: ${error}`;
      refusals[body] = (refusals[body] ?? 0) + 1;
    }
  }),
);
console.log(JSON.stringify({ placed, refusals }));
await database.close();
process.exit(0);
