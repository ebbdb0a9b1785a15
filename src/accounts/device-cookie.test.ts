import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { randomText } from '../platform/ids.ts';
import { DEVICE_COOKIE, DEVICE_TTL_MS } from './device-cookie.ts';
import { newAccount, PRODUCTION_THROTTLE } from './testing.ts';

/** Signs in through the JSON API, with `cookie` when given; the answer and the device cookie it set, if any. */
async function signIn(env: TestEnv, credentials: { email: string; password: string }, cookie?: string) {
  const response = await env.request('POST', '/api/auth/signin', {
    body: credentials,
    headers: cookie ? { cookie } : {},
  });
  const device = (response.headers.getSetCookie?.() ?? [])
    .map((line) => line.split(';')[0]!)
    .find((pair) => pair.startsWith(`${DEVICE_COOKIE}=`));
  return { response, device };
}

/** Failed sign-ins on accounts that never sign in, from this (the one test) address, until it is made to wait. */
async function spray(env: TestEnv): Promise<void> {
  for (let i = 0; i <= PRODUCTION_THROTTLE.SIGNIN_FREE_FAILURES_PER_ADDRESS; i++) {
    const { response } = await signIn(env, {
      email: `sprayed-${i}-${randomText(6)}@example.com`,
      password: 'Winter2026!',
    });
    assert.equal(response.status, 401, `spray ${i}: ${response.text}`);
  }
}

describeEachDatabase(
  'device cookies: a spray from a shared address does not lock out the people who signed in there before',
  (env) => {
    it('a browser that signed in to an account before signs in to it while its address must wait; others wait', async () => {
      env.manualClock.advance(25 * 60 * 60_000);
      const regular = await newAccount(env, 'office');
      const newcomer = await newAccount(env, 'office');
      const first = await signIn(env, regular);
      assert.equal(first.response.status, 200, first.response.text);
      assert.ok(first.device, 'a sign-in sets the device cookie');
      assert.match(
        first.response.headers.getSetCookie().join('\n'),
        new RegExp(`${DEVICE_COOKIE}=[^;]+;.*HttpOnly`, 'i'),
      );

      await spray(env);
      const waiting = await signIn(env, newcomer);
      assert.equal(waiting.response.status, 429, 'a browser without the cookie waits, right password or not');
      assert.match(waiting.response.body.error.message, /Too many failed sign-ins from your network/);

      const known = await signIn(env, regular, first.device);
      assert.equal(known.response.status, 200, known.response.text);
      assert.ok(known.device, 'the cookie is renewed');

      const otherAccount = await signIn(env, newcomer, first.device);
      assert.equal(otherAccount.response.status, 429, 'the cookie vouches only for the account it signed in to');
      const forged = `${DEVICE_COOKIE}=${first.device!.slice(DEVICE_COOKIE.length + 1).replace(/^./, (c) => (c === 'a' ? 'b' : 'a'))}`;
      assert.equal((await signIn(env, regular, forged)).response.status, 429, 'an altered cookie vouches for nothing');
      assert.equal((await signIn(env, regular)).response.status, 429, 'nor does its absence');
      assert.equal((await signIn(env, newcomer)).response.status, 429, "the known browser's success lifted nothing");
      env.manualClock.advance(25 * 60 * 60_000);
    });

    it('the cookie does not lift the per-account throttle, and it lapses after its lifetime', async () => {
      env.manualClock.advance(25 * 60 * 60_000);
      const person = await newAccount(env, 'office');
      const { device } = await signIn(env, person);
      for (let i = 0; i <= PRODUCTION_THROTTLE.SIGNIN_FREE_FAILURES_PER_ACCOUNT; i++) {
        const typo = await signIn(env, { ...person, password: `typo-${i}` }, device);
        assert.equal(typo.response.status, 401, `typo ${i}`);
      }
      const waits = await signIn(env, person, device);
      assert.equal(waits.response.status, 429);
      assert.match(waits.response.body.error.message, /Too many failed sign-ins for this account/);

      env.manualClock.advance(25 * 60 * 60_000);
      const renewed = await signIn(env, person, device);
      assert.equal(renewed.response.status, 200, renewed.response.text);
      await spray(env);
      env.manualClock.advance(DEVICE_TTL_MS);
      await spray(env);
      assert.equal((await signIn(env, person, renewed.device)).response.status, 429, 'a cookie past its lifetime');
      env.manualClock.advance(25 * 60 * 60_000);
    });
  },
  { config: { ...PRODUCTION_THROTTLE, TRUST_PROXY: 'false' }, manualClock: true },
);
