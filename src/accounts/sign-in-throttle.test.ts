import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import {
  describeEachDatabase,
  selectedDatabases,
  startServeProcess,
  TestEnv,
  type TestEnv as Env,
} from '../testing/harness.ts';
import { loadConfig } from '../config.ts';
import { randomText } from '../platform/ids.ts';
import { authorizationRequest, registerTestApp, runAuthorization, TestBrowser } from '../oauth/testing.ts';
import { newAccount, PRODUCTION_THROTTLE } from './testing.ts';

const defaults = loadConfig({});
/** A forwarded address no other attempt of the run used. */
const freshAddress = () =>
  `10.${1 + Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`;

/** 100 wrong passwords for one account, each from another forwarded address; the statuses seen. */
async function guessFromRotatingAddresses(
  env: Env,
  email: string,
): Promise<{ statuses: number[]; lastRefusal: Awaited<ReturnType<Env['request']>> | null }> {
  const statuses: number[] = [];
  let lastRefusal = null;
  for (let i = 0; i < 100; i++) {
    const response = await env.request('POST', '/api/auth/signin', {
      body: { email, password: `guess-${i}` },
      headers: { 'x-forwarded-for': freshAddress() },
    });
    statuses.push(response.status);
    if (response.status === 429) lastRefusal = response;
  }
  return { statuses, lastRefusal };
}

function assertThrottled(statuses: number[], lastRefusal: Awaited<ReturnType<Env['request']>> | null) {
  const checked = statuses.filter((status) => status === 401).length;
  // The free failures, then one more that starts the wait; the clock is held, so every later guess waits.
  assert.equal(checked, PRODUCTION_THROTTLE.SIGNIN_FREE_FAILURES_PER_ACCOUNT + 1, JSON.stringify(statuses));
  assert.equal(statuses.filter((status) => status === 429).length, 100 - checked);
  assert.ok(lastRefusal);
  assert.equal(lastRefusal.body.error.code, 'RATE_LIMITED');
  assert.equal(lastRefusal.body.error.type, 'rate_limit_error');
  assert.equal(lastRefusal.headers.get('retry-after'), '1');
  assert.equal(lastRefusal.body.error.retryAfter, 1);
  assert.match(
    lastRefusal.body.error.message,
    /Too many failed sign-ins for this account\. Wait 1 second before trying again\./,
  );
}

describeEachDatabase(
  'sign-in throttle, TRUST_PROXY off',
  (env) => {
    it('100 wrong passwords for one account from rotating forwarded addresses are throttled, and the right one works after the wait', async () => {
      const account = await newAccount(env);
      const { statuses, lastRefusal } = await guessFromRotatingAddresses(env, account.email);
      assertThrottled(statuses, lastRefusal);

      // The right password is refused too while the account waits: a guess that happens to be right learns nothing.
      assert.equal((await env.request('POST', '/api/auth/signin', { body: account })).status, 429);
      env.manualClock.advance(1000);
      const signedIn = await env.request('POST', '/api/auth/signin', { body: account });
      assert.equal(signedIn.status, 200);
      // A success clears the account: the next typo is a plain 401, not a wait.
      assert.equal(
        (await env.request('POST', '/api/auth/signin', { body: { ...account, password: 'typo' } })).status,
        401,
      );
    });

    it('the forwarded header is not believed: failures spread over many accounts and "addresses" are throttled per peer address', async () => {
      env.manualClock.advance(25 * 60 * 60_000);
      const statuses: number[] = [];
      for (let i = 0; i < PRODUCTION_THROTTLE.SIGNIN_FREE_FAILURES_PER_ADDRESS + 5; i++) {
        const response = await env.request('POST', '/api/auth/signin', {
          body: { email: `sprayed-${i}-${randomText(6).toLowerCase()}@example.com`, password: 'Winter2026!' },
          headers: { 'x-forwarded-for': freshAddress() },
        });
        statuses.push(response.status);
      }
      assert.equal(
        statuses.filter((status) => status === 401).length,
        PRODUCTION_THROTTLE.SIGNIN_FREE_FAILURES_PER_ADDRESS + 1,
        JSON.stringify(statuses),
      );
      const refused = await env.request('POST', '/api/auth/signin', {
        body: { email: 'someone@example.com', password: 'x' },
        headers: { 'x-forwarded-for': freshAddress() },
      });
      assert.equal(refused.status, 429);
      assert.match(refused.body.error.message, /Too many failed sign-ins from your network/);
      env.manualClock.advance(25 * 60 * 60_000);
    });

    it("an office behind one address: its people's typos, 12 an hour for five hours among their sign-ins, never make anyone wait", async () => {
      env.manualClock.advance(25 * 60 * 60_000);
      const people = await Promise.all([1, 2, 3].map(() => newAccount(env)));
      for (let i = 0; i < 60; i++) {
        const person = people[i % people.length]!;
        const typo = await env.request('POST', '/api/auth/signin', { body: { ...person, password: 'typo' } });
        assert.equal(typo.status, 401, `typo ${i + 1}: ${typo.text}`);
        env.manualClock.advance(60_000);
        const signedIn = await env.request('POST', '/api/auth/signin', { body: person });
        assert.equal(signedIn.status, 200, `sign-in ${i + 1}: ${signedIn.text}`);
        env.manualClock.advance(4 * 60_000);
      }
      env.manualClock.advance(25 * 60 * 60_000);
    });

    it('a busy office behind one address: 25 people in a row each mistype once, then sign in, within one minute, and nobody waits', async () => {
      // More typos at once than the address's free failures: each person's own typo is forgiven at the address
      // when they get their password right, so only failures on accounts that never sign in (a spray) add up.
      env.manualClock.advance(25 * 60 * 60_000);
      const office = await Promise.all(Array.from({ length: 25 }, () => newAccount(env)));
      for (const [i, person] of office.entries()) {
        const typo = await env.request('POST', '/api/auth/signin', { body: { ...person, password: 'typo' } });
        assert.equal(typo.status, 401, `typo ${i + 1}: ${typo.text}`);
        const signedIn = await env.request('POST', '/api/auth/signin', { body: person });
        assert.equal(signedIn.status, 200, `sign-in ${i + 1}: ${signedIn.text}`);
      }
      env.manualClock.advance(25 * 60 * 60_000);
    });

    it('the sign-in page and the OAuth sign-in page show the wait, with 429 and Retry-After', async () => {
      const account = await newAccount(env);
      for (let i = 0; i <= PRODUCTION_THROTTLE.SIGNIN_FREE_FAILURES_PER_ACCOUNT; i++) {
        assert.equal(
          (await env.request('POST', '/api/auth/signin', { body: { ...account, password: `wrong-${i}` } })).status,
          401,
        );
      }
      const page = await env.request('POST', '/signin', {
        raw: new URLSearchParams({ ...account, return_to: '/' }).toString(),
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
      });
      assert.equal(page.status, 429);
      assert.equal(page.headers.get('retry-after'), '1');
      assert.match(
        page.text,
        /role="alert"[^>]*>Too many failed sign-ins for this account\. Wait 1 second before trying again\./,
      );

      const app = await registerTestApp(env);
      const outcome = await runAuthorization(env, new TestBrowser(), await authorizationRequest(env, app, ['read']), {
        user: { userId: '', ...account },
      });
      assert.equal(outcome.kind, 'page');
      assert.equal((outcome as { status: number }).status, 429);
      assert.match((outcome as { html: string }).html, /Too many failed sign-ins for this account\. Wait 1 second/);
    });

    it('an encoded path (/api/auth/%73ignin) is the same route and counts the same', async () => {
      const account = await newAccount(env);
      const statuses: number[] = [];
      for (let i = 0; i < PRODUCTION_THROTTLE.SIGNIN_FREE_FAILURES_PER_ACCOUNT + 3; i++) {
        statuses.push(
          (await env.request('POST', '/api/auth/%73ignin', { body: { ...account, password: `wrong-${i}` } })).status,
        );
      }
      assert.deepEqual(statuses.slice(-2), [429, 429], JSON.stringify(statuses));
      assert.equal((await env.request('POST', '/api/auth/signin', { body: account })).status, 429);
    });

    it('sign-ups are limited per address, matched by route: an encoded path counts the same', async () => {
      const signUp = (path: string) =>
        env.request('POST', path, {
          body: { email: `new-${randomText(8).toLowerCase()}@example.com`, password: `pw-${randomText(12)}` },
        });
      for (let i = 0; i < 3; i++)
        assert.notEqual((await signUp(i % 2 ? '/api/auth/%73ignup' : '/api/auth/signup')).status, 429);
      const limited = await signUp('/api/auth/%73ignup');
      assert.equal(limited.status, 429);
      assert.equal(limited.body.error.code, 'RATE_LIMITED');
      assert.ok(Number(limited.headers.get('retry-after')) >= 1);
    });
  },
  { config: { ...PRODUCTION_THROTTLE, TRUST_PROXY: 'false', RATE_LIMIT_SIGNUP_PER_MINUTE: 3 }, manualClock: true },
);

// Both forms of TRUST_PROXY: a hop count, and a list of proxy addresses/CIDRs (the test client is the proxy).
for (const trustProxy of ['1', 'loopback, 192.0.2.0/24'])
  describeEachDatabase(
    `sign-in throttle, TRUST_PROXY=${trustProxy}`,
    (env) => {
      it('100 wrong passwords for one account from rotating forwarded addresses are throttled per account', async () => {
        const account = await newAccount(env);
        const { statuses, lastRefusal } = await guessFromRotatingAddresses(env, account.email);
        assertThrottled(statuses, lastRefusal);
      });

      it('the forwarded address is believed: one address spraying accounts waits, another one does not', async () => {
        const sprayer = freshAddress();
        for (let i = 0; i <= PRODUCTION_THROTTLE.SIGNIN_FREE_FAILURES_PER_ADDRESS; i++) {
          const response = await env.request('POST', '/api/auth/signin', {
            body: { email: `s-${i}-${randomText(6).toLowerCase()}@example.com`, password: 'x' },
            headers: { 'x-forwarded-for': sprayer },
          });
          assert.equal(response.status, 401);
        }
        const refused = await env.request('POST', '/api/auth/signin', {
          body: { email: 'a@example.com', password: 'x' },
          headers: { 'x-forwarded-for': sprayer },
        });
        assert.equal(refused.status, 429);
        // A client that writes its own X-Forwarded-For gets it appended to by the proxy: the proxy's entry counts.
        const spoofed = await env.request('POST', '/api/auth/signin', {
          body: { email: 'a@example.com', password: 'x' },
          headers: { 'x-forwarded-for': `${freshAddress()}, ${sprayer}` },
        });
        assert.equal(spoofed.status, 429);
        const account = await newAccount(env);
        assert.equal(
          (
            await env.request('POST', '/api/auth/signin', {
              body: account,
              headers: { 'x-forwarded-for': freshAddress() },
            })
          ).status,
          200,
        );
      });

      it("an account holder's typos made at another address do not erase a spray's failures here when they sign in here", async () => {
        const [sprayer, elsewhere] = [freshAddress(), freshAddress()];
        const signIn = (body: { email: string; password: string }, address: string) =>
          env.request('POST', '/api/auth/signin', { body, headers: { 'x-forwarded-for': address } });
        const own = await newAccount(env);
        for (let i = 0; i < PRODUCTION_THROTTLE.SIGNIN_FREE_FAILURES_PER_ACCOUNT; i++)
          assert.equal((await signIn({ ...own, password: `typo-${i}` }, elsewhere)).status, 401);
        for (let i = 0; i < PRODUCTION_THROTTLE.SIGNIN_FREE_FAILURES_PER_ADDRESS - 1; i++)
          assert.equal(
            (await signIn({ email: `s-${i}-${randomText(6)}@example.com`, password: 'x' }, sprayer)).status,
            401,
          );
        assert.equal((await signIn(own, sprayer)).status, 200, 'the holder signs in at the spraying address');
        // The success gave back only its own attempt there, not the five typos counted elsewhere.
        const statuses: number[] = [];
        for (let i = 0; i < 3; i++)
          statuses.push(
            (await signIn({ email: `t-${i}-${randomText(6)}@example.com`, password: 'x' }, sprayer)).status,
          );
        assert.deepEqual(
          statuses,
          [401, 401, 429],
          'the last free failure, the one that starts the wait, then the wait',
        );
      });
    },
    { config: { ...PRODUCTION_THROTTLE, TRUST_PROXY: trustProxy }, manualClock: true },
  );

describe('sign-in throttle defaults', () => {
  it('are the ones these tests run with', () => {
    for (const [name, value] of Object.entries(PRODUCTION_THROTTLE))
      assert.equal(defaults[name as keyof typeof defaults], value, name);
  });
});

describe('TRUST_PROXY values', () => {
  it('accepts off, a hop count or a list of addresses/CIDRs, and refuses `true`, which would believe any client', () => {
    assert.equal(loadConfig({}).TRUST_PROXY, 'false');
    assert.equal(loadConfig({ TRUST_PROXY: '2' }).TRUST_PROXY, '2');
    assert.equal(
      loadConfig({ TRUST_PROXY: '10.0.0.1, 192.168.0.0/16,loopback' }).TRUST_PROXY,
      '10.0.0.1, 192.168.0.0/16,loopback',
    );
    assert.throws(() => loadConfig({ TRUST_PROXY: 'true' }), /TRUST_PROXY: .*hop count/s);
    assert.throws(() => loadConfig({ TRUST_PROXY: 'everyone' }), /TRUST_PROXY/);
  });
});

// Two processes on one PostgreSQL database and one Redis: failures counted by one are seen by the other.
if (selectedDatabases().includes('postgres')) {
  describe('sign-in throttle across instances through Redis [postgres]', () => {
    const shared = { REDIS_URL: 'redis://127.0.0.1:6379' };
    const env = new TestEnv('postgres', { config: shared });
    let second: Awaited<ReturnType<typeof startServeProcess>>;
    before(async () => {
      await env.start();
      second = await startServeProcess(env, shared);
    });
    after(async () => {
      await second?.stop();
      await env.stop();
    });

    it('wrong passwords sent to two instances in turn are throttled as one count', async () => {
      const account = await newAccount(env);
      const statuses: Array<[string, number]> = [];
      // Alone, each instance would see only 5 failures here: the free ones, never a wait.
      for (let i = 0; i < 2 * PRODUCTION_THROTTLE.SIGNIN_FREE_FAILURES_PER_ACCOUNT; i++) {
        const base = i % 2 === 0 ? env.baseUrl : second.baseUrl;
        const response = await fetch(`${base}/api/auth/signin`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email: account.email, password: `wrong-${i}` }),
        });
        await response.body?.cancel();
        statuses.push([i % 2 === 0 ? 'first' : 'second', response.status]);
      }
      assert.ok(
        statuses.some(([, status]) => status === 429),
        JSON.stringify(statuses),
      );
      assert.ok(
        statuses.filter(([, status]) => status === 401).length <
          2 * PRODUCTION_THROTTLE.SIGNIN_FREE_FAILURES_PER_ACCOUNT,
      );
    });
  });
}
