import { it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

const SRC = new URL('..', import.meta.url).pathname;

/** Every TypeScript file under src/, as a path relative to it. */
function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [relative(SRC, path)] : [];
  });
}

it('nothing outside billing places, extends, settles or releases holds, or writes usage records: every billable call goes through the meter', () => {
  const holdCalls =
    /\.(placeHold|extendHold|settleHold|releaseHold)\(|(insertInto|updateTable|deleteFrom)\(\s*'holds'\s*\)/;
  const usageWrites = /(insertInto|updateTable)\(\s*'usage_records'\s*\)|\b(recordUsage|usageRecordWrite)\(/;
  const offenders: string[] = [];
  for (const file of sources()) {
    if (file.startsWith('billing/')) continue;
    const text = readFileSync(join(SRC, file), 'utf8');
    if (holdCalls.test(text)) offenders.push(`${file}: touches holds`);
    // Tests may seed usage records to read them back; code may not write them.
    if (!file.endsWith('.test.ts') && usageWrites.test(text)) offenders.push(`${file}: writes usage records`);
  }
  assert.deepEqual(offenders, []);
});

it('billing owns the spending limits: no code outside billing reads or writes them (feature tables keep only their history)', () => {
  const limitColumns = /'(spending_limits|daily_limit|monthly_limit|total_limit|limit_micro|limit_period)'/;
  const offenders: string[] = [];
  for (const file of sources()) {
    if (file.startsWith('billing/') || file.endsWith('.test.ts') || file.endsWith('/migrations.ts')) continue;
    if (limitColumns.test(readFileSync(join(SRC, file), 'utf8'))) offenders.push(file);
  }
  assert.deepEqual(offenders, []);
});
