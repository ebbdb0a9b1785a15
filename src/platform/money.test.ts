import { it } from 'node:test';
import assert from 'node:assert/strict';
import { groupThousands, MAX_CREDITS } from './money.ts';

it("groupThousands writes a whole number as toLocaleString('en-US') does, without asking ICU", () => {
  for (const whole of [0, 7, 999, 1_000, 12_345, 100_000, 1_000_000, 25_000_000, MAX_CREDITS, Number.MAX_SAFE_INTEGER])
    assert.equal(groupThousands(whole), whole.toLocaleString('en-US'), String(whole));
  assert.equal(groupThousands(-1_234_567), '-1,234,567');
});
