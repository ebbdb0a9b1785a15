import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { TestDatabaseSpace } from '../src/testing/harness.ts';
import { benchPayers, billingBenchService, placeAndSettle, USERS } from './holds.ts';

/**
 * `node bench/wal-pages.ts [calls]`: which B-trees a billed call's place and settle write on SQLite, as WAL
 * frames per call. A commit writes every page it changed whole, so the frames are the bytes each table and
 * index costs. After a warm-up the WAL is emptied, a reader holds a snapshot so that no checkpoint restarts
 * it, `calls` holds are placed and settled one at a time (10 users, each with a key under a daily limit, a
 * usage record per settle, as bench/holds.ts), then each frame's page is named from SQLite's `dbstat`.
 */

const CALLS = Number(process.argv[2] ?? '500');
const space = new TestDatabaseSpace('sqlite');
await space.create();
const service = await billingBenchService(space);
const file = join(space.env().DATA_DIR!, 'tollgate.db');
try {
  const { ctx } = service;
  const payers = await benchPayers(ctx);
  const call = async (i: number) => {
    const { userId, keyId } = payers[i % USERS]!;
    await placeAndSettle(ctx.billing, userId, keyId);
  };
  for (let i = 0; i < 300; i++) await call(i);

  const reader = new DatabaseSync(file);
  reader.exec('PRAGMA wal_checkpoint(TRUNCATE)');
  reader.exec('BEGIN');
  reader.prepare('SELECT count(*) FROM wallets').get();
  for (let i = 0; i < CALLS; i++) await call(i);
  const wal = readFileSync(`${file}-wal`);
  reader.exec('COMMIT');
  const pageSize = wal.readUInt32BE(8);
  const frames = new Map<number, number>();
  let count = 0;
  for (let at = 32; at + 24 + pageSize <= wal.length; at += 24 + pageSize) {
    const page = wal.readUInt32BE(at);
    frames.set(page, (frames.get(page) ?? 0) + 1);
    count++;
  }
  const names = new Map<number, string>();
  for (const row of reader.prepare('SELECT name, pageno FROM dbstat').all() as Array<{ name: string; pageno: number }>)
    names.set(row.pageno, row.name);
  reader.close();
  const byTree = new Map<string, number>();
  for (const [page, n] of frames) {
    const name = names.get(page) ?? '(free or new)';
    byTree.set(name, (byTree.get(name) ?? 0) + n);
  }
  console.log(
    JSON.stringify({
      calls: CALLS,
      pageSize,
      framesPerCall: +(count / CALLS).toFixed(2),
      kbPerCall: +((count * (pageSize + 24)) / CALLS / 1024).toFixed(1),
    }),
  );
  for (const [name, n] of [...byTree].sort((a, b) => b[1] - a[1]))
    console.log(`${(n / CALLS).toFixed(2).padStart(6)}  ${name}`);
} finally {
  await service.close();
  await space.drop();
}
