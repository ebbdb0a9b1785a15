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
