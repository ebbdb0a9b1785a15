import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { PAGE_STYLE_SOURCE } from '../platform/http/page.ts';
import {
  authorizationRequest,
  exchangeCode,
  follow,
  registerTestApp,
  runAuthorization,
  TestBrowser,
  type AuthorizationRequest,
  type BrowserOutcome,
  type TestApp,
} from './testing.ts';

/** Opens the authorization URL in `browser` and follows it to the page it shows (or the app's callback). */
async function open(env: TestEnv, browser: TestBrowser, url: URL): Promise<BrowserOutcome> {
  return follow(env, browser, await browser.fetch(url), url);
}

/** A browser signed in to the dashboard as `session` (its cookie). */
function browserOf(session: { cookie: string }): TestBrowser {
  const browser = new TestBrowser();
  browser.addCookies(session.cookie);
  return browser;
}

async function userOfToken(env: TestEnv, accessToken: string): Promise<string> {
  const me = await env.request('GET', '/api/user/me', { token: accessToken });
  assert.equal(me.status, 200, me.text);
  return me.body.id;
}

/** Registers an app from the dashboard, as an ordinary user would. */
async function registerUserApp(
  env: TestEnv,
  owner: { cookie: string; csrfToken: string; userId: string; email: string; password: string },
): Promise<TestApp> {
  const redirectUri = 'https://chat.example.net/oauth/callback';
  const response = await env.dashboard(owner, 'POST', '/api/user/apps', {
    name: 'Someone’s App',
    redirectUris: [redirectUri],
    scopes: ['read'],
    type: 'public',
  });
  assert.equal(response.status, 201, response.text);
  return { clientId: response.body.clientId, redirectUri, scopes: ['read'], type: 'public' };
}

describeEachDatabase('oauth pages: one account per browser, what consent shows, headers', (env) => {
  it('an authorization whose provider session is for another account than the dashboard asks again, and the code is for the dashboard user', async () => {
    const alice = await env.createUser();
    const bob = await env.createUser();
    const app = await registerTestApp(env, { scopes: ['read'] });

    // Alice authorizes the app on this browser: the provider session is hers.
    const browser = browserOf(alice);
    const first = await authorizationRequest(env, app, ['read']);
    const aliceOutcome = await runAuthorization(env, browser, first, { user: alice });
    assert.equal(aliceOutcome.kind, 'callback');

    // The dashboard session becomes Bob's without going through sign-out (an expired session, another
    // tab…): only the provider cookie is left of Alice.
    for (const name of [...browser.cookies.keys()]) if (!name.startsWith('tg_oauth_')) browser.cookies.delete(name);
    browser.addCookies(bob.cookie);

    const second = await authorizationRequest(env, app, ['read']);
    const page = await open(env, browser, second.url);
    assert.equal(page.kind, 'page', 'Bob is asked, not sent back with a code');
    assert.match((page as { html: string }).html, new RegExp(`Signed in as <strong>${bob.email}</strong>`));
    const outcome = await runAuthorization(env, browser, second, { user: bob });
    assert.equal(outcome.kind, 'callback');
    const tokens = await exchangeCode(env, second, (outcome as { url: URL }).url);
    assert.equal(await userOfToken(env, tokens.access_token), bob.userId);
  });

  it('the same user authorizing an app again on the same browser is not asked again', async () => {
    const alice = await env.createUser();
    const app = await registerTestApp(env, { scopes: ['read'] });
    const browser = browserOf(alice);
    assert.equal(
      (await runAuthorization(env, browser, await authorizationRequest(env, app, ['read']), { user: alice })).kind,
      'callback',
    );
    const again = await authorizationRequest(env, app, ['read']);
    const outcome = await open(env, browser, again.url);
    assert.equal(outcome.kind, 'callback', 'no page: the grant and the session are Alice’s');
    const tokens = await exchangeCode(env, again, (outcome as { url: URL }).url);
    assert.equal(await userOfToken(env, tokens.access_token), alice.userId);
  });

  it('a user who signs out and back in is not asked again for an app they already allowed', async () => {
    const alice = await env.createUser();
    const app = await registerTestApp(env, { scopes: ['read'] });
    const browser = new TestBrowser();
    assert.equal(
      (await runAuthorization(env, browser, await authorizationRequest(env, app, ['read']), { user: alice })).kind,
      'callback',
    );

    const { csrfToken } = (await (await browser.fetch(new URL('/api/auth/session', env.baseUrl))).json()) as {
      csrfToken: string;
    };
    const signOut = await browser.fetch(new URL('/api/auth/signout', env.baseUrl), {
      method: 'POST',
      headers: { 'x-csrf-token': csrfToken },
    });
    assert.equal(signOut.status, 200);
    const signIn = await browser.fetch(new URL('/api/auth/signin', env.baseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: alice.email, password: alice.password }),
    });
    assert.equal(signIn.status, 200);

    const again = await authorizationRequest(env, app, ['read']);
    const outcome = await open(env, browser, again.url);
    assert.equal(outcome.kind, 'callback', 'no consent page: Alice’s grant is found again');
    const tokens = await exchangeCode(env, again, (outcome as { url: URL }).url);
    assert.equal(await userOfToken(env, tokens.access_token), alice.userId);

    // Asking for more than was allowed still asks.
    const wider = await registerTestApp(env, { scopes: ['read', 'ai:chat'] });
    assert.equal(
      (await runAuthorization(env, browser, await authorizationRequest(env, wider, ['read']), { user: alice })).kind,
      'callback',
    );
    const more = await open(env, browser, (await authorizationRequest(env, wider, ['read', 'ai:chat'])).url);
    assert.equal(more.kind, 'page');
    assert.match((more as { html: string }).html, /<code>ai:chat<\/code>/);
  });

  it('signing in on the authorization page signs the browser in to the dashboard as that user', async () => {
    const alice = await env.createUser();
    const app = await registerTestApp(env, { scopes: ['read'] });
    const browser = new TestBrowser();
    assert.equal(
      (await runAuthorization(env, browser, await authorizationRequest(env, app, ['read']), { user: alice })).kind,
      'callback',
    );
    const session = await browser.fetch(new URL('/api/auth/session', env.baseUrl));
    assert.equal(session.status, 200);
    assert.equal(((await session.json()) as { user: { id: string } }).user.id, alice.userId);
  });

  it('signing in to the dashboard as someone else ends the provider session of the previous user', async () => {
    const alice = await env.createUser();
    const bob = await env.createUser();
    const app = await registerTestApp(env, { scopes: ['read'] });
    const browser = new TestBrowser();
    assert.equal(
      (await runAuthorization(env, browser, await authorizationRequest(env, app, ['read']), { user: alice })).kind,
      'callback',
    );

    const before = await env.db
      .selectFrom('oidc_payloads')
      .select('id')
      .where('model', '=', 'Session')
      .where('account_id', '=', alice.userId)
      .execute();
    assert.equal(before.length, 1);

    // Bob signs in through the dashboard's JSON sign-in on the same browser (cookies and all).
    const signIn = await browser.fetch(new URL('/api/auth/signin', env.baseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: bob.email, password: bob.password }),
    });
    assert.equal(signIn.status, 200);
    assert.equal(browser.cookies.has('tg_oauth_session'), false, 'the provider session cookie is cleared');
    const aliceSessions = await env.db
      .selectFrom('oidc_payloads')
      .select('id')
      .where('model', '=', 'Session')
      .where('account_id', '=', alice.userId)
      .execute();
    assert.equal(aliceSessions.length, 0, 'and the provider session itself is gone');

    const again = await authorizationRequest(env, app, ['read']);
    const outcome = await runAuthorization(env, browser, again, { user: bob });
    assert.equal(outcome.kind, 'callback');
    const tokens = await exchangeCode(env, again, (outcome as { url: URL }).url);
    assert.equal(await userOfToken(env, tokens.access_token), bob.userId);
  });

  it('a forced sign-in (prompt=login) answered with another account signs the browser in as that account, and the code is theirs', async () => {
    const alice = await env.createUser();
    const bob = await env.createUser();
    const app = await registerTestApp(env, { scopes: ['read'] });
    const browser = browserOf(alice);
    assert.equal(
      (await runAuthorization(env, browser, await authorizationRequest(env, app, ['read']), { user: alice })).kind,
      'callback',
    );

    const forced = await authorizationRequest(env, app, ['read'], { prompt: 'login' });
    const page = await open(env, browser, forced.url);
    assert.equal(page.kind, 'page');
    assert.match(
      (page as { html: string }).html,
      /<button[^>]*type="submit">Sign in<\/button>/,
      'prompt=login shows the sign-in form even to a signed-in browser',
    );
    const outcome = await runAuthorization(env, browser, forced, { user: bob });
    assert.equal(
      outcome.kind,
      'callback',
      JSON.stringify(outcome.kind === 'page' ? outcome.html.slice(0, 400) : outcome.url),
    );
    const tokens = await exchangeCode(env, forced, (outcome as { url: URL }).url);
    assert.equal(await userOfToken(env, tokens.access_token), bob.userId);
    const session = await browser.fetch(new URL('/api/auth/session', env.baseUrl));
    assert.equal(
      ((await session.json()) as { user: { id: string } }).user.id,
      bob.userId,
      'the dashboard is Bob’s too',
    );
  });

  it('a forced sign-in (prompt=login) answered with the same account goes on to the code without asking twice', async () => {
    const alice = await env.createUser();
    const app = await registerTestApp(env, { scopes: ['read'] });
    const browser = browserOf(alice);
    assert.equal(
      (await runAuthorization(env, browser, await authorizationRequest(env, app, ['read']), { user: alice })).kind,
      'callback',
    );
    const forced = await authorizationRequest(env, app, ['read'], { prompt: 'login' });
    const outcome = await runAuthorization(env, browser, forced, { user: alice });
    assert.equal(outcome.kind, 'callback');
    const tokens = await exchangeCode(env, forced, (outcome as { url: URL }).url);
    assert.equal(await userOfToken(env, tokens.access_token), alice.userId);
  });

  it('an app’s max_age is measured from when the password was given: a dashboard sign-in older than it is asked again, and the ID token’s auth_time is the real sign-in', async () => {
    const alice = await env.createUser();
    const signedInAt = Math.floor(Date.now() / 1000);
    const app = await registerTestApp(env, { scopes: ['openid', 'read'] });
    const browser = browserOf(alice);
    // The ID token's auth_time (its signature is openid-client's business in oidc.test.ts).
    const authTime = async (request: AuthorizationRequest, callback: URL) => {
      const response = await fetch(new URL('/api/oauth/token', env.baseUrl), {
        method: 'POST',
        body: new URLSearchParams({
          grant_type: 'authorization_code',
          code: callback.searchParams.get('code')!,
          redirect_uri: app.redirectUri,
          code_verifier: request.codeVerifier,
          client_id: app.clientId,
        }),
      });
      const { id_token } = (await response.json()) as { id_token: string };
      return (JSON.parse(Buffer.from(id_token.split('.')[1]!, 'base64url').toString()) as { auth_time: number })
        .auth_time;
    };
    const first = await authorizationRequest(env, app, ['openid', 'read']);
    assert.equal((await runAuthorization(env, browser, first, { user: alice })).kind, 'callback');

    await new Promise((resolve) => setTimeout(resolve, 2100));
    for (const maxAge of ['1', '0']) {
      const bounded = await authorizationRequest(env, app, ['openid', 'read'], { max_age: maxAge });
      const page = await open(env, browser, bounded.url);
      assert.equal(page.kind, 'page', `max_age=${maxAge} was answered with a sign-in 2 s old`);
      assert.match((page as { html: string }).html, /<button[^>]*type="submit">Sign in<\/button>/);
      const outcome = await runAuthorization(env, browser, bounded, { user: alice });
      assert.equal(outcome.kind, 'callback');
      assert.ok((await authTime(bounded, (outcome as { url: URL }).url)) >= signedInAt + 2);
    }
    // Within its bound the sign-in just made is used, dated when it was made.
    const within = await authorizationRequest(env, app, ['openid', 'read'], { max_age: '3600' });
    const outcome = await open(env, browser, within.url);
    assert.equal(outcome.kind, 'callback');
    const at = await authTime(within, (outcome as { url: URL }).url);
    assert.ok(at >= signedInAt + 2 && at <= Math.floor(Date.now() / 1000), String(at));
  });

  it('the consent page shows the account, the redirect host, and marks an app registered by a user as unverified', async () => {
    const owner = await env.createUser();
    const user = await env.createUser();
    const userApp = await registerUserApp(env, owner);
    const operatorApp = await registerTestApp(env, {
      scopes: ['read'],
      redirectUris: ['https://partner.example.org/cb'],
    });

    const forUserApp = await open(env, browserOf(user), (await authorizationRequest(env, userApp, ['read'])).url);
    assert.equal(forUserApp.kind, 'page');
    const html = (forUserApp as { html: string }).html;
    assert.match(html, new RegExp(`Signed in as <strong>${user.email}</strong>. Not you\\?`));
    assert.match(html, />Use another account<\/button>/);
    assert.match(html, /sent to <strong>chat\.example\.net<\/strong>/);
    assert.match(html, /Unverified app/);

    const forOperatorApp = await open(
      env,
      browserOf(user),
      (await authorizationRequest(env, operatorApp, ['read'])).url,
    );
    const operatorHtml = (forOperatorApp as { html: string }).html;
    assert.match(operatorHtml, /sent to <strong>partner\.example\.org<\/strong>/);
    assert.doesNotMatch(operatorHtml, /Unverified/);
  });

  it('the sign-in and consent pages carry a strict Content-Security-Policy: no script, no inline style but their own stylesheet', async () => {
    const user = await env.createUser();
    const app = await registerTestApp(env, { scopes: ['read'] });
    const browser = new TestBrowser();
    const request = await authorizationRequest(env, app, ['read']);
    const first = await browser.fetch(request.url);
    const loginUrl = new URL(first.headers.get('location')!, env.baseUrl);
    const login = await browser.fetch(loginUrl);
    const consent = await open(env, browserOf(user), (await authorizationRequest(env, app, ['read'])).url);
    assert.equal(consent.kind, 'page');
    const consentResponse = await browserOf(user).fetch((consent as { url: URL }).url);

    for (const response of [login, consentResponse]) {
      const csp = response.headers.get('content-security-policy') ?? '';
      assert.match(csp, /default-src 'none'/);
      assert.match(csp, /script-src 'none'/);
      assert.doesNotMatch(csp, /unsafe-inline/);
      assert.match(csp, /frame-ancestors 'none'/);
      assert.ok(csp.includes(`style-src ${PAGE_STYLE_SOURCE}`), csp);
    }
    assert.doesNotMatch(await login.text(), /<script|style="/, 'nothing on the page needs more than the policy allows');
  });

  it('responses written by oidc-provider itself carry the security headers of every other answer', async () => {
    const app = await registerTestApp(env, { scopes: ['read'] });
    const authorize = await fetch((await authorizationRequest(env, app, ['read'])).url, { redirect: 'manual' });
    const token = await fetch(`${env.baseUrl}/api/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: 'grant_type=authorization_code&code=nope',
    });
    const jwks = await fetch(`${env.baseUrl}/api/oauth/jwks`);
    const badRequest = await fetch(`${env.baseUrl}/api/oauth/authorize?client_id=${app.clientId}&response_type=code`, {
      redirect: 'manual',
    });
    for (const response of [authorize, token, jwks, badRequest]) {
      await response.arrayBuffer();
      assert.equal(response.headers.get('x-content-type-options'), 'nosniff', response.url);
      assert.equal(response.headers.get('x-frame-options'), 'DENY', response.url);
      assert.equal(response.headers.get('referrer-policy'), 'no-referrer', response.url);
      assert.equal(response.headers.get('cross-origin-opener-policy'), 'same-origin', response.url);
      assert.ok(response.headers.get('x-request-id'), response.url);
      assert.match(
        response.headers.get('content-security-policy') ?? '',
        /default-src 'none'.*frame-ancestors 'none'/,
        response.url,
      );
    }
  });
});
