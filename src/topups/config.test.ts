import { it } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '../config.ts';
import { topupSettings } from './settings.ts';

it('a currency without cents (jpy, krw: Stripe takes whole units) or with thousandths (kwd, bhd) stops the start, naming TOPUP_CURRENCY', () => {
  // Top-ups send hundredths: in yen a 5-unit top-up would charge 500 yen, in dinars 0.500 of the 5.
  for (const currency of ['jpy', 'krw', 'clp', 'vnd', 'xof', 'kwd', 'bhd', 'jod', 'omr', 'tnd'])
    assert.throws(
      () => loadConfig({ TOPUP_CURRENCY: currency }),
      /TOPUP_CURRENCY: .*hundredths.*not supported/s,
      `${currency} should be refused`,
    );
  for (const currency of ['usd', 'eur', 'gbp', 'chf', 'cad'])
    assert.equal(topupSettings(loadConfig({ TOPUP_CURRENCY: currency })).currency, currency);
});

it('TOPUP_CURRENCY is taken in any case (USD, Eur) and used in lower case; an unsupported one is refused in any case too', () => {
  // ISO 4217 codes are written in upper case; Stripe takes them in any case and answers them in lower case.
  assert.equal(topupSettings(loadConfig({ TOPUP_CURRENCY: 'USD' })).currency, 'usd');
  assert.equal(topupSettings(loadConfig({ TOPUP_CURRENCY: 'Eur' })).currency, 'eur');
  for (const currency of ['JPY', 'Kwd', 'bHD'])
    assert.throws(
      () => loadConfig({ TOPUP_CURRENCY: currency }),
      /TOPUP_CURRENCY: .*hundredths.*not supported/s,
      `${currency} should be refused`,
    );
  for (const currency of ['US', 'usdx', 'u5d'])
    assert.throws(() => loadConfig({ TOPUP_CURRENCY: currency }), /TOPUP_CURRENCY/);
});

it('a refused TOPUP_CURRENCY is told in a sentence, without the pattern that checks it', () => {
  assert.throws(
    () => loadConfig({ TOPUP_CURRENCY: 'JPY' }),
    (error: Error) =>
      /^ {2}TOPUP_CURRENCY: is not valid — expected: ISO currency of top-ups/m.test(error.message) &&
      !error.message.includes('[jJ][pP][yY]'),
  );
});

it('top-up amounts that cannot be sold stop the start: an offered 0, a minimum above the maximum, credits past exact integers', () => {
  // An offered 0 priced 0 credits: its top-up broke the table's check and the user got a 500.
  assert.throws(() => topupSettings(loadConfig({ TOPUP_AMOUNTS: '0 5 10' })), /TOPUP_AMOUNTS/);
  assert.throws(
    () => topupSettings(loadConfig({ TOPUP_MIN_AMOUNT: '50', TOPUP_MAX_AMOUNT: '5' })),
    /TOPUP_MIN_AMOUNT \(50\) is above TOPUP_MAX_AMOUNT \(5\)/,
  );
  // 10,000 units at 1,000,000 credits each is 10^10 credits, and 8,600 units 8.6 × 10^9 (below 2^53 micro-credits):
  // both past 8,589,934,592 credits, the most an amount can be exactly, so no wallet could take that top-up.
  for (const max of ['10000', '8600'])
    assert.throws(
      () => topupSettings(loadConfig({ TOPUP_CREDITS_PER_UNIT: '1000000', TOPUP_MAX_AMOUNT: max })),
      /TOPUP_CREDITS_PER_UNIT.*TOPUP_MAX_AMOUNT.*8,589,934,592 credits/s,
    );
  assert.equal(
    topupSettings(loadConfig({ TOPUP_CREDITS_PER_UNIT: '1000000', TOPUP_MAX_AMOUNT: '8589' })).maxAmount,
    8589,
  );
  assert.equal(
    topupSettings(loadConfig({ TOPUP_CREDITS_PER_UNIT: '1000000', TOPUP_MAX_AMOUNT: '500' })).maxAmount,
    500,
  );
  assert.deepEqual(topupSettings(loadConfig({ TOPUP_AMOUNTS: '5 10 100' })).amounts, [5, 10, 100]);
});
