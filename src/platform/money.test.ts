import { it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { creditsToMicros, groupThousands, MAX_CREDITS, MAX_MICROS, microsToCredits } from './money.ts';

it("groupThousands writes a whole number as toLocaleString('en-US') does, without asking ICU", () => {
  for (const whole of [0, 7, 999, 1_000, 12_345, 100_000, 1_000_000, 25_000_000, MAX_CREDITS, Number.MAX_SAFE_INTEGER])
    assert.equal(groupThousands(whole), whole.toLocaleString('en-US'), String(whole));
  assert.equal(groupThousands(-1_234_567), '-1,234,567');
});

/** An amount as the API sends it and a client sends it back: its JSON text, read again, parsed into micro-credits. */
function roundTrip(micros: number): { text: string; back: number | null } {
  const text = JSON.stringify(microsToCredits(micros));
  return { text, back: creditsToMicros(JSON.parse(text) as number) };
}

function assertExact(micros: number): void {
  const { text, back } = roundTrip(micros);
  assert.equal(back, micros + 0, `${micros} micro-credits are sent as ${text}`); // + 0: -0 is 0
  assert.match(text, /^-?\d+(\.\d{1,6})?$/, `${micros} micro-credits are sent as ${text}`);
}

it('every amount up to MAX_CREDITS is sent as its own number with at most 6 decimals and read back to the same micro-credits', () => {
  assert.equal(MAX_CREDITS, 2 ** 33);
  assert.equal(MAX_MICROS, 8_589_934_592_000_000);
  // The 200,000 amounts just below the bound, where doubles are sparsest, and the bound itself (either sign).
  for (let micros = MAX_MICROS - 200_000; micros <= MAX_MICROS; micros++) {
    assertExact(micros);
    assertExact(-micros);
  }
  // From 2^51 to 2^52 micro-credits `credits × 10^6` is rounded to halves: a quarter of these amounts came back
  // one micro-credit off (4,342,521,359.759752 as 4342521359759753) before creditsToMicros looked for the
  // amount whose number it was given.
  for (let micros = 4_342_521_359_700_000; micros <= 4_342_521_359_800_000; micros++) {
    assertExact(micros);
    assertExact(-micros);
  }
  // Random amounts below it, at every magnitude, and in that stretch.
  for (const [min, max] of [
    [-MAX_MICROS, MAX_MICROS],
    [2 ** 51, 2 ** 52],
  ])
    fc.assert(
      fc.property(fc.integer({ min, max }), (micros) => {
        assertExact(micros);
        assertExact(-micros);
      }),
      { numRuns: 100_000 },
    );
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 52 }), fc.integer({ min: 0, max: 2 ** 20 }), (shift, low) =>
      assertExact(Math.min(MAX_MICROS, Math.floor(2 ** shift) + low)),
    ),
    { numRuns: 20_000 },
  );
});

it('the bound is tight: the next micro-credit has no number of its own, and every amount past the bound is refused', () => {
  // 8,589,934,592.000001 credits is the same double as 8,589,934,592.0000019073…, sent as 8589934592.000002.
  assert.equal(JSON.stringify(microsToCredits(MAX_MICROS + 1)), '8589934592.000002');
  assert.equal(creditsToMicros(MAX_CREDITS), MAX_MICROS);
  // Still refused for a 7th decimal, still read within rounding when a client's arithmetic left some.
  assert.equal(creditsToMicros(0.1234567), null);
  assert.equal(creditsToMicros(0.1 + 0.2), 300_000);
  assert.equal(creditsToMicros(-MAX_CREDITS), -MAX_MICROS);
  for (const credits of [
    8_589_934_592.000001, -8_589_934_592.000001, 8_589_934_593, 9_007_199_254, 9_007_199_254.123456,
  ])
    assert.equal(creditsToMicros(credits), null, String(credits));
  // Past 2^33 about half the micro-credit amounts share their double with a neighbour: the old bound,
  // 9,007,199,254 credits, let these through one micro-credit off.
  assert.equal(JSON.stringify(microsToCredits(9_007_199_254_123_456)), '9007199254.123455');
});
