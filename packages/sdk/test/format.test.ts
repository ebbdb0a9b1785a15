import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatCredits, formatDuration, percentOf, resetsIn } from '../src/index.ts';

test('durations read in their two largest units', () => {
  assert.equal(formatDuration((3 * 60 + 12) * 60_000 + 59_000), '3h 12m');
  assert.equal(formatDuration(45 * 60_000), '45m');
  assert.equal(formatDuration(2 * 86_400_000 + 4 * 3_600_000), '2d 4h');
  assert.equal(formatDuration(3_600_000), '1h');
  assert.equal(formatDuration(10_000), '<1m');
  assert.equal(formatDuration(-5), '<1m');
});

test('resetsIn counts from the given now, and a total limit (no timestamp) has no reset', () => {
  const now = Date.parse('2030-01-01T20:48:00Z');
  assert.equal(resetsIn('2030-01-02T00:00:00Z', now), 'resets in 3h 12m');
  assert.equal(resetsIn(null, now), null);
  assert.equal(resetsIn('not a date', now), null);
});

test('credits show at least two decimals and every micro-credit they have, never rounded up', () => {
  assert.equal(formatCredits(9.999956), '9.999956');
  assert.equal(formatCredits(-0.000001), '-0.000001');
  assert.equal(formatCredits(2.5), '2.50');
  assert.equal(formatCredits(1234.5), '1,234.50');
  assert.equal(formatCredits(0.000004), '0.000004');
  assert.equal(formatCredits(0), '0.00');
});

test('usage bars are clamped to 0–100 percent', () => {
  assert.equal(percentOf(2, 2.5), 80);
  assert.equal(percentOf(3, 2.5), 100);
  assert.equal(percentOf(1, 0), 100);
  assert.equal(percentOf(0, 0), 0);
});
