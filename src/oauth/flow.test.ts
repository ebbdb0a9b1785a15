import { it } from 'node:test';
import assert from 'node:assert/strict';
import * as oauth from 'oauth4webapi';
import { describeEachDatabase } from '../testing/harness.ts';
import {
  authorizationRequest,
  authorizeForTest,
  clientAuth,
  discover,
  exchangeCode,
  registerTestApp,
  runAuthorization,
  TestBrowser,
} from './testing.ts';

const insecure = { [oauth.allowInsecureRequests]: true };

describeEachDatabase('oauth authorization code flow', (env) => {
  it('oauth4webapi completes code + PKCE through the sign-in and consent pages, and the token reads /api/user/me', async () => {
    const user = await env.createUser({ name: 'Grace' });
    const app = await registerTestApp(env, { scopes: ['read', 'ai:chat'] });
    const as = await discover(env);
    assert.equal(as.issuer, env.baseUrl);
    assert.deepEqual(as.code_challenge_methods_supported, ['S256']);

    const request = await authorizationRequest(env, app, ['read', 'ai:chat']);
    const browser = new TestBrowser();
    const first = await browser.fetch(request.url);
    assert.equal(first.status, 303);
    const loginUrl = new URL(first.headers.get('location')!, env.baseUrl);
    const loginPage = await browser.fetch(loginUrl);
    const loginHtml = await loginPage.text();
    assert.equal(loginPage.status, 200);
    assert.match(loginHtml, /<label for="email">Email<\/label>/);
    assert.match(loginHtml, /<label for="password">Password<\/label>/);
    assert.match(loginHtml, /<button[^>]*type="submit">Sign in<\/button>/);

    const afterLogin = await browser.submit(new URL(`${loginUrl.pathname}/login`, env.baseUrl), {
      email: user.email,
      password: user.password,
    });
    assert.equal(afterLogin.status, 303);
    const resumed = await browser.fetch(new URL(afterLogin.headers.get('location')!, env.baseUrl));
    const consentUrl = new URL(resumed.headers.get('location')!, env.baseUrl);
    const consentPage = await browser.fetch(consentUrl);
    const consentHtml = await consentPage.text();
    assert.match(consentHtml, /Test App/);
    assert.match(consentHtml, /<code>read<\/code>: See your profile/);
    assert.match(consentHtml, /<code>ai:chat<\/code>: Use chat models/);
    assert.match(consentHtml, /<label for="daily_limit">Daily spending limit<\/label>/);
    assert.match(consentHtml, />Allow<\/button>/);
    assert.match(consentHtml, />Deny<\/button>/);

    const afterConsent = await browser.submit(new URL(`${consentUrl.pathname}/consent`, env.baseUrl), {
      decision: 'allow',
      daily_limit: '2.5',
    });
    const callback = await browser.fetch(new URL(afterConsent.headers.get('location')!, env.baseUrl));
    const callbackUrl = new URL(callback.headers.get('location')!);
    assert.equal(`${callbackUrl.origin}${callbackUrl.pathname}`, app.redirectUri);

    const client = { client_id: app.clientId };
    const params = oauth.validateAuthResponse(as, client, callbackUrl, request.state);
    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(
        as,
        client,
        oauth.None(),
        params,
        app.redirectUri,
        request.codeVerifier,
        insecure,
      ),
    );
    assert.equal(tokens.token_type.toLowerCase(), 'bearer');
    assert.equal(tokens.refresh_token, undefined, 'no refresh token without offline_access');
    assert.doesNotMatch(tokens.access_token, /^ey/, 'access tokens are opaque, not JWTs');

    const me = await env.request('GET', '/api/user/me', { token: tokens.access_token });
    assert.equal(me.status, 200);
    assert.equal(me.body.id, user.userId);
    assert.equal(me.body.name, 'Grace');
  });

  it('consent records the granted scopes and the daily limit in micro-credits', async () => {
    const { user, clientId } = await authorizeForTest(env, {
      scopes: ['read', 'billing:read', 'ai:chat'],
      dailyLimit: '12.345678',
    });
    const row = await env.db
      .selectFrom('authorized_apps')
      .selectAll()
      .where('user_id', '=', user.userId)
      .where('client_id', '=', clientId)
      .executeTakeFirstOrThrow();
    assert.deepEqual(row.scopes.split(' ').sort(), ['ai:chat', 'billing:read', 'read']);
    assert.deepEqual(
      await env.service.ctx.billing.appLimits(user.userId, clientId),
      { daily: 12_345_678, weekly: null, monthly: null, total: null },
      'billing keeps the limit',
    );
    assert.equal(row.revoked_at, null);
  });

  it('an empty daily limit is recorded as no limit, and 7 decimals are refused on the page', async () => {
    const user = await env.createUser();
    const app = await registerTestApp(env);
    const refused = await runAuthorization(env, new TestBrowser(), await authorizationRequest(env, app, ['read']), {
      user,
      dailyLimit: '1.1234567',
    });
    assert.equal(refused.kind, 'page');
    assert.equal((refused as { status: number }).status, 400);
    assert.match((refused as { html: string }).html, /at most 6 decimals/);

    await authorizeForTest(env, { user, app, scopes: ['read'] });
    assert.equal((await env.service.ctx.billing.appLimits(user.userId, app.clientId)).daily, null);
  });

  it('a token without the needed scope gets 403, a wrong token 401', async () => {
    const { accessToken } = await authorizeForTest(env, { scopes: ['ai:chat'] });
    assert.equal((await env.request('GET', '/api/user/me', { token: accessToken })).status, 403);
    assert.equal((await env.request('GET', '/api/user/me', { token: `${accessToken}x` })).status, 401);
  });

  it('Deny sends access_denied back to the app and records nothing', async () => {
    const user = await env.createUser();
    const app = await registerTestApp(env);
    const request = await authorizationRequest(env, app, ['read']);
    const outcome = await runAuthorization(env, new TestBrowser(), request, { user, decision: 'deny' });
    assert.equal(outcome.kind, 'callback');
    const url = (outcome as { url: URL }).url;
    assert.equal(url.searchParams.get('error'), 'access_denied');
    assert.equal(url.searchParams.get('state'), request.state);
    assert.equal(url.searchParams.get('code'), null);
    assert.throws(
      () =>
        oauth.validateAuthResponse(
          { issuer: env.baseUrl } as oauth.AuthorizationServer,
          { client_id: app.clientId },
          url,
          request.state,
        ),
      (e: any) => e.error === 'access_denied',
    );
    const row = await env.db
      .selectFrom('authorized_apps')
      .select('user_id')
      .where('user_id', '=', user.userId)
      .executeTakeFirst();
    assert.equal(row, undefined);
  });

  it('a wrong password stays on the sign-in page with 401', async () => {
    const user = await env.createUser();
    const app = await registerTestApp(env);
    const outcome = await runAuthorization(env, new TestBrowser(), await authorizationRequest(env, app, ['read']), {
      user: { ...user, password: 'not-the-password' },
    });
    assert.equal(outcome.kind, 'page');
    assert.equal((outcome as { status: number }).status, 401);
    assert.match((outcome as { html: string }).html, /That email and password do not match/);
  });

  it('a browser with a dashboard session skips the sign-in page and goes straight to consent', async () => {
    const user = await env.createUser();
    const app = await registerTestApp(env);
    const browser = new TestBrowser();
    browser.addCookies(user.cookie);
    const request = await authorizationRequest(env, app, ['read']);
    const outcome = await runAuthorization(env, browser, request, { user: { ...user, password: 'never-typed' } });
    assert.equal(outcome.kind, 'callback');
    const tokens = await exchangeCode(env, request, (outcome as { url: URL }).url);
    assert.equal((await env.request('GET', '/api/user/me', { token: tokens.access_token })).body.id, user.userId);
  });

  it('a confidential app authenticates with its secret (Basic and post), and a wrong secret is refused', async () => {
    const app = await registerTestApp(env, { type: 'confidential', scopes: ['read'] });
    assert.match(app.clientSecret!, /^tgs_/);
    const stored = await env.db
      .selectFrom('oauth_clients')
      .select('client_secret_hash')
      .where('client_id', '=', app.clientId)
      .executeTakeFirstOrThrow();
    assert.notEqual(stored.client_secret_hash, app.clientSecret);
    assert.match(stored.client_secret_hash!, /^[0-9a-f]{64}$/);

    const user = await env.createUser();
    const as = await discover(env);
    const client = { client_id: app.clientId };
    for (const [method, secret, ok] of [
      ['basic', app.clientSecret!, true],
      ['post', app.clientSecret!, true],
      ['basic', `${app.clientSecret}x`, false],
      ['post', 'tgs_wrong', false],
    ] as const) {
      const request = await authorizationRequest(env, app, ['read']);
      const outcome = await runAuthorization(env, new TestBrowser(), request, { user });
      const params = oauth.validateAuthResponse(as, client, (outcome as { url: URL }).url, request.state);
      const response = await oauth.authorizationCodeGrantRequest(
        as,
        client,
        clientAuth({ ...app, clientSecret: secret }, method),
        params,
        app.redirectUri,
        request.codeVerifier,
        insecure,
      );
      if (ok) {
        const tokens = await oauth.processAuthorizationCodeResponse(as, client, response);
        assert.equal((await env.request('GET', '/api/user/me', { token: tokens.access_token })).status, 200);
      } else {
        assert.equal(response.status, 401, `${method} with a wrong secret`);
        assert.equal((await response.json()).error, 'invalid_client');
      }
    }
  });

  it('a confidential app without its secret is refused', async () => {
    const app = await registerTestApp(env, { type: 'confidential', scopes: ['read'] });
    const user = await env.createUser();
    const request = await authorizationRequest(env, app, ['read']);
    const outcome = await runAuthorization(env, new TestBrowser(), request, { user });
    const response = await fetch(`${env.baseUrl}/api/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'authorization_code',
        client_id: app.clientId,
        code: (outcome as { url: URL }).url.searchParams.get('code')!,
        redirect_uri: app.redirectUri,
        code_verifier: request.codeVerifier,
      }),
    });
    assert.equal(response.status, 401);
    assert.equal((await response.json()).error, 'invalid_client');
  });

  it('serves RFC 8414 metadata at /.well-known/oauth-authorization-server', async () => {
    const response = await env.request('GET', '/.well-known/oauth-authorization-server');
    assert.equal(response.status, 200);
    assert.equal(response.body.issuer, env.baseUrl);
    assert.equal(response.body.authorization_endpoint, `${env.baseUrl}/api/oauth/authorize`);
    assert.equal(response.body.token_endpoint, `${env.baseUrl}/api/oauth/token`);
    assert.equal(response.body.revocation_endpoint, `${env.baseUrl}/api/oauth/revoke`);
    assert.equal(response.body.introspection_endpoint, `${env.baseUrl}/api/oauth/introspect`);
    assert.deepEqual(response.body.response_types_supported, ['code']);
    assert.deepEqual(response.body.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(response.body.scopes_supported, [
      'read',
      'write',
      'billing:read',
      'apikeys:read',
      'apikeys:write',
      'ai:chat',
      'ai:completions',
      'ai:models',
      'ai:images',
      'ai:embeddings',
      'ai:audio',
      'offline_access',
      'openid',
      'profile',
      'email',
    ]);
    assert.equal((await env.request('GET', '/api/oauth/jwks')).status, 200);
  });

  it('introspection answers for the app’s own token', async () => {
    const authorization = await authorizeForTest(env, { scopes: ['read', 'ai:chat'] });
    const as = await discover(env);
    const client = { client_id: authorization.clientId };
    const response = await oauth.introspectionRequest(as, client, oauth.None(), authorization.accessToken, insecure);
    const result = await oauth.processIntrospectionResponse(as, client, response);
    assert.equal(result.active, true);
    assert.equal(result.sub, authorization.user.userId);
    assert.equal(result.client_id, authorization.clientId);
  });
});
