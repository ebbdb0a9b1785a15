import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

describeEachDatabase('account forms', (env) => {
  it('a sign-in, sign-up or sign-out form posted from another site is refused with 403, and signs nobody in or out', async () => {
    const user = await env.createUser();
    const evil: Record<string, string>[] = [
      { origin: 'https://evil.example' },
      { origin: 'null' },
      { 'sec-fetch-site': 'cross-site' },
      { 'sec-fetch-site': 'same-site', origin: 'https://sub.evil.example' },
    ];
    for (const headers of evil) {
      const signin = await env.request('POST', '/signin', {
        raw: form({ email: user.email, password: user.password }),
        headers: { ...FORM, ...headers },
      });
      assert.equal(signin.status, 403, `sign-in with ${JSON.stringify(headers)}`);
      // A form post is a browser's navigation: the refusal is a page saying what to do (error-page.ts).
      assert.match(signin.headers.get('content-type')!, /^text\/html/);
      assert.match(signin.text, /This form only accepts posts from/);
      assert.equal(signin.headers.get('set-cookie'), null);
      const email = `csrf-${Math.random().toString(36).slice(2)}@example.com`;
      const signup = await env.request('POST', '/signup', {
        raw: form({ email, password: 'long-enough-pw' }),
        headers: { ...FORM, ...headers },
      });
      assert.equal(signup.status, 403);
      assert.equal(
        await env.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst(),
        undefined,
        'no account was made',
      );
      const signout = await env.request('POST', '/signout', {
        raw: '',
        headers: { ...FORM, ...headers, cookie: user.cookie },
      });
      assert.equal(signout.status, 403);
      assert.equal((await env.dashboard(user, 'GET', '/api/user/me')).status, 200, 'still signed in');
      // The JSON twins too, and an encoded path is the same route.
      assert.equal(
        (
          await env.request('POST', '/api/auth/signin', {
            body: { email: user.email, password: user.password },
            headers,
          })
        ).status,
        403,
      );
      assert.equal(
        (
          await env.request('POST', '/%73ignin', {
            raw: form({ email: user.email, password: user.password }),
            headers: { ...FORM, ...headers },
          })
        ).status,
        403,
      );
    }
  });

  it('the forms still work from our own pages and for clients that are no browser', async () => {
    const user = await env.createUser();
    const own: Record<string, string>[] = [
      { origin: new URL(env.baseUrl).origin },
      { 'sec-fetch-site': 'same-origin', origin: new URL(env.baseUrl).origin },
      { 'sec-fetch-site': 'none' },
      {},
    ];
    for (const headers of own) {
      const signin = await env.request('POST', '/signin', {
        raw: form({ email: user.email, password: user.password }),
        headers: { ...FORM, ...headers },
      });
      assert.equal(signin.status, 303, `sign-in with ${JSON.stringify(headers)}`);
      assert.ok(signin.headers.getSetCookie().some((cookie) => cookie.startsWith('tg_session=')));
    }
  });

  it('sign-up with an email that has an account answers like a new account, creates nothing and signs nobody in', async () => {
    const existing = await env.createUser();
    const db = env.db;
    const count = async () =>
      Number(
        (
          await db
            .selectFrom('users')
            .select((eb) => eb.fn.countAll().as('n'))
            .executeTakeFirstOrThrow()
        ).n,
      );
    const before = await count();

    const fresh = await env.request('POST', '/api/auth/signup', {
      body: { email: `new-${Date.now()}@example.com`, password: 'long-enough-pw' },
    });
    const taken = await env.request('POST', '/api/auth/signup', {
      body: { email: existing.email.toUpperCase(), password: 'another-password', name: 'Mallory' },
    });
    assert.equal(fresh.status, 201);
    assert.equal(taken.status, 201, 'no 409 that would reveal the account');
    assert.deepEqual(Object.keys(taken.body).sort(), Object.keys(fresh.body).sort());
    assert.deepEqual(Object.keys(taken.body.user).sort(), Object.keys(fresh.body.user).sort());
    assert.match(taken.body.user.id, /^usr_/);
    assert.notEqual(taken.body.user.id, existing.userId);
    assert.equal(taken.headers.get('set-cookie'), null, 'nobody is signed in');
    assert.equal(await count(), before + 1, 'only the fresh sign-up made an account');
    await env.signIn(existing.email, existing.password);

    const page = await env.request('POST', '/signup', {
      raw: form({ email: existing.email, password: 'another-password', return_to: '/keys' }),
      headers: FORM,
    });
    const freshPage = await env.request('POST', '/signup', {
      raw: form({ email: `page-${Date.now()}@example.com`, password: 'long-enough-pw', return_to: '/keys' }),
      headers: FORM,
    });
    assert.equal(page.status, freshPage.status);
    assert.equal(page.headers.get('location'), freshPage.headers.get('location'));
    assert.equal(page.headers.get('set-cookie'), null);
  });
});
