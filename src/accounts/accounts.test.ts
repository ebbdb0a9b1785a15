import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';

describeEachDatabase('accounts', (env) => {
  it('an operator-created user signs in and reads /api/user/me through the session', async () => {
    const session = await env.createUser({ name: 'Ada' });
    const me = await env.dashboard(session, 'GET', '/api/user/me');
    assert.equal(me.status, 200);
    assert.deepEqual(Object.keys(me.body).sort(), ['createdAt', 'email', 'id', 'image', 'name']);
    assert.match(me.body.id, /^usr_/);
    assert.equal(me.body.name, 'Ada');
    assert.equal(me.body.image, null);
  });

  it('GET /api/auth/state answers signed out as a 200, and a session with its user and CSRF token', async () => {
    assert.deepEqual((await env.request('GET', '/api/auth/state')).body, { signedIn: false, signUp: 'open' });
    const forged = await env.request('GET', '/api/auth/state', { headers: { cookie: 'tg_session=forged.value' } });
    assert.equal(forged.status, 200);
    assert.deepEqual(forged.body, { signedIn: false, signUp: 'open' });
    const session = await env.createUser({ name: 'Grace' });
    const state = await env.dashboard(session, 'GET', '/api/auth/state');
    assert.equal(state.status, 200);
    assert.equal(state.body.signedIn, true);
    assert.equal(state.body.user.id, session.userId);
    assert.equal(state.body.csrfToken, session.csrfToken);
    // A bearer credential is not a browser's session: the state reads the session cookie only.
    const app = await env.dashboard(session, 'POST', '/api/user/api-keys', { name: 'k', permissions: ['ai:chat'] });
    const byKey = await env.request('GET', '/api/auth/state', { token: app.body.apiKey.key });
    assert.deepEqual(byKey.body, { signedIn: false, signUp: 'open' });
    assert.equal((await env.dashboard(session, 'POST', '/api/auth/signout')).status, 200);
    assert.deepEqual((await env.dashboard(session, 'GET', '/api/auth/state')).body, {
      signedIn: false,
      signUp: 'open',
    });
  });

  it('a wrong password is refused with 401 and sets no cookie', async () => {
    const session = await env.createUser();
    const response = await env.request('POST', '/api/auth/signin', {
      body: { email: session.email, password: 'wrong-password' },
    });
    assert.equal(response.status, 401);
    assert.equal(response.body.error.code, 'UNAUTHENTICATED');
    assert.equal(response.headers.get('set-cookie'), null);
  });

  it('the password is stored as an Argon2id hash, never in clear', async () => {
    const session = await env.createUser();
    const row = await env.db
      .selectFrom('users')
      .select('password_hash')
      .where('id', '=', session.userId)
      .executeTakeFirstOrThrow();
    assert.match(row.password_hash, /^\$argon2id\$v=19\$m=19456,t=2,p=1\$/);
    assert.ok(!row.password_hash.includes(session.password));
  });

  it('a second account with the same email (any case) is a 409', async () => {
    const session = await env.createUser();
    const again = await env.admin('POST', '/api/admin/users', {
      email: session.email.toUpperCase(),
      password: 'another-password',
    });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'CONFLICT');
  });

  it('sign-up page creates an account, sets an HttpOnly SameSite cookie and redirects only to local paths', async () => {
    const form = new URLSearchParams({
      email: `page-${Date.now()}@example.com`,
      password: 'long-enough-pw',
      return_to: '//evil.example/x',
    });
    const response = await env.request('POST', '/signup', {
      raw: form.toString(),
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(response.status, 303);
    assert.equal(response.headers.get('location'), '/');
    const cookie = response.headers.get('set-cookie') ?? '';
    assert.match(cookie, /^tg_session=/);
    assert.match(cookie, /HttpOnly/);
    assert.match(cookie, /SameSite=Lax/);
  });

  it("a dashboard write without the CSRF header, with an empty one or with another session's is refused with 403", async () => {
    const session = await env.createUser();
    const other = await env.createUser();
    const attempts: Record<string, string>[] = [
      { cookie: session.cookie },
      { cookie: session.cookie, 'x-csrf-token': '' },
      { cookie: session.cookie, 'x-csrf-token': other.csrfToken },
      { cookie: session.cookie, 'x-csrf-token': session.csrfToken.slice(0, -1) },
    ];
    for (const headers of attempts) {
      const response = await env.request('POST', '/api/auth/signout', { headers });
      assert.equal(response.status, 403, JSON.stringify(headers));
      assert.equal(response.body.error.code, 'PERMISSION_DENIED');
    }
    assert.equal((await env.dashboard(session, 'GET', '/api/user/me')).status, 200, 'the session still stands');
  });

  it('sign-out ends the session: the cookie stops working', async () => {
    const session = await env.createUser();
    assert.equal((await env.dashboard(session, 'POST', '/api/auth/signout')).status, 200);
    assert.equal((await env.dashboard(session, 'GET', '/api/user/me')).status, 401);
  });

  it('operator routes refuse user sessions and missing or wrong tokens', async () => {
    const session = await env.createUser();
    const body = { email: 'x@example.com', password: 'long-enough-pw' };
    assert.equal(
      (
        await env.request('POST', '/api/admin/users', {
          body,
          headers: { cookie: session.cookie, 'x-csrf-token': session.csrfToken },
        })
      ).status,
      401,
    );
    assert.equal(
      (await env.request('POST', '/api/admin/users', { body, token: 'tga_wrong_token_wrong_token_wrong' })).status,
      401,
    );
  });
});
