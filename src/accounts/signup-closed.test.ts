import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { authorizationRequest, follow, registerTestApp, TestBrowser } from '../oauth/testing.ts';

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
const newEmail = () => `new-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;

/** Whether an account has this email. */
async function accountExists(env: TestEnv, email: string): Promise<boolean> {
  return (await env.db.selectFrom('users').select('id').where('email', '=', email).executeTakeFirst()) !== undefined;
}

/** The HTML of an app's sign-in page, reached as a signed-out browser does. */
async function appSignInPage(env: TestEnv): Promise<string> {
  const app = await registerTestApp(env, { scopes: ['read'] });
  const request = await authorizationRequest(env, app, ['read']);
  const browser = new TestBrowser();
  const outcome = await follow(env, browser, await browser.fetch(request.url), request.url);
  assert.equal(outcome.kind, 'page');
  assert.match(outcome.kind === 'page' ? outcome.html : '', /<h1>Sign in<\/h1>/);
  return outcome.kind === 'page' ? outcome.html : '';
}

describeEachDatabase(
  'sign-up closed by the operator (SIGNUP=closed)',
  (env) => {
    it('the sign-up API answers 403 SIGNUP_CLOSED, whatever the body, and writes no user and no session', async () => {
      const email = newEmail();
      const refused = await env.request('POST', '/api/auth/signup', {
        body: { email, password: 'a long new password', name: 'Nora' },
      });
      assert.equal(refused.status, 403, refused.text);
      assert.equal(refused.body.error.code, 'SIGNUP_CLOSED');
      assert.equal(refused.body.error.type, 'permission_error');
      assert.match(refused.body.error.message, /Sign-up is closed .* Ask them for one/);
      assert.equal(refused.headers.get('set-cookie'), null);
      assert.equal(await accountExists(env, email), false, 'no account was made');
      // Closed is the answer before the body is judged: a malformed one is not told how to fix itself.
      const malformed = await env.request('POST', '/api/auth/signup', { body: { email: 'not an email' } });
      assert.equal(malformed.status, 403);
      assert.equal(malformed.body.error.code, 'SIGNUP_CLOSED');
    });

    it('the sign-up page says sign-up is closed and to ask the operator, has no form, and its post writes no user', async () => {
      const page = await env.request('GET', '/signup?return_to=%2F%23%2Fkeys');
      assert.equal(page.status, 200);
      assert.match(page.text, /<h1>Sign-up is closed<\/h1>/);
      assert.match(page.text, /its operator creates the accounts\. Ask them for one, then sign in\./);
      assert.doesNotMatch(page.text, /<form/);
      assert.match(page.text, /href="\/signin\?return_to=%2F%23%2Fkeys">Sign in</, 'the way to sign in is kept');

      const email = newEmail();
      const posted = await env.request('POST', '/signup', {
        raw: form({ email, password: 'a long new password', return_to: '/' }),
        headers: FORM,
      });
      assert.equal(posted.status, 403);
      assert.match(posted.headers.get('content-type')!, /^text\/html/);
      assert.match(posted.text, /<h1>Sign-up is closed<\/h1>/);
      assert.equal(posted.headers.get('set-cookie'), null);
      assert.equal(await accountExists(env, email), false, 'no account was made');
    });

    it('no page links to sign-up: /signin (and its refusal) and an app’s sign-in page say to ask the operator', async () => {
      const hint = 'New here? Ask the operator of this service for an account.';
      const signIn = await env.request('GET', '/signin');
      assert.doesNotMatch(signIn.text, /\/signup|Create an account/);
      assert.ok(signIn.text.includes(hint));
      const wrong = await env.request('POST', '/signin', {
        raw: form({ email: newEmail(), password: 'wrong password' }),
        headers: FORM,
      });
      assert.equal(wrong.status, 401);
      assert.doesNotMatch(wrong.text, /\/signup|Create an account/);
      assert.ok(wrong.text.includes(hint));

      const appPage = await appSignInPage(env);
      assert.doesNotMatch(appPage, /\/signup|Create an account/);
      assert.ok(appPage.includes(hint));
      // The dashboard reads it here, to leave out its own "Create an account".
      assert.deepEqual((await env.request('GET', '/api/auth/state')).body, { signedIn: false, signUp: 'closed' });
    });

    it('the operator still creates accounts (POST /api/admin/users), which sign in', async () => {
      const user = await env.createUser({ name: 'Made by the operator' });
      const me = await env.dashboard(user, 'GET', '/api/user/me');
      assert.equal(me.status, 200);
      assert.equal(me.body.name, 'Made by the operator');
    });
  },
  { config: { SIGNUP: 'closed' } },
);

describeEachDatabase('sign-up open (SIGNUP unset)', (env) => {
  it('the sign-in pages link to sign-up, the state says open, and the sign-up API makes the account', async () => {
    assert.match(
      (await env.request('GET', '/signin')).text,
      /<a href="\/signup\?return_to=%2F">Create an account<\/a>/,
    );
    assert.match(
      await appSignInPage(env),
      /<a href="\/signup\?return_to=%2Fapi%2Foauth%2Finteraction%2F[^"]+">Create an account/,
    );
    assert.equal((await env.request('GET', '/api/auth/state')).body.signUp, 'open');
    const email = newEmail();
    const created = await env.request('POST', '/api/auth/signup', { body: { email, password: 'a long new password' } });
    assert.equal(created.status, 201, created.text);
    assert.equal(await accountExists(env, email), true);
  });
});
