import { it } from 'node:test';
import assert from 'node:assert/strict';
import * as oauth from 'oauth4webapi';
import { describeEachDatabase } from '../testing/harness.ts';
import {
  authorizationRequest,
  authorizeForTest,
  discover,
  registerTestApp,
  runAuthorization,
  TestBrowser,
  type TestApp,
} from './testing.ts';

const insecure = { [oauth.allowInsecureRequests]: true };

describeEachDatabase('oauth policy', (env) => {
  /** Runs the pages and returns the callback's parameters, validated by oauth4webapi. */
  async function authorizedCallback(app: TestApp, scopes: string[]) {
    const user = await env.createUser();
    const request = await authorizationRequest(env, app, scopes);
    const outcome = await runAuthorization(env, new TestBrowser(), request, { user });
    assert.equal(outcome.kind, 'callback');
    const as = await discover(env);
    const client = { client_id: app.clientId };
    return {
      as,
      client,
      request,
      user,
      params: oauth.validateAuthResponse(as, client, (outcome as { url: URL }).url, request.state),
    };
  }

  it('a code used twice is refused, and the tokens issued from it stop working', async () => {
    const app = await registerTestApp(env, { scopes: ['read'] });
    const { as, client, request, params } = await authorizedCallback(app, ['read']);
    const first = await oauth.processAuthorizationCodeResponse(
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
    assert.equal((await env.request('GET', '/api/user/me', { token: first.access_token })).status, 200);

    const again = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      params,
      app.redirectUri,
      request.codeVerifier,
      insecure,
    );
    assert.equal(again.status, 400);
    assert.equal((await again.json()).error, 'invalid_grant');
    assert.equal((await env.request('GET', '/api/user/me', { token: first.access_token })).status, 401);
  });

  it('two simultaneous exchanges of one code: one gets tokens, the other invalid_grant, and the tokens are revoked', async () => {
    const app = await registerTestApp(env, { scopes: ['read'] });
    const { as, client, request, params } = await authorizedCallback(app, ['read']);
    const responses = await Promise.all(
      [1, 2].map(() =>
        oauth.authorizationCodeGrantRequest(
          as,
          client,
          oauth.None(),
          params,
          app.redirectUri,
          request.codeVerifier,
          insecure,
        ),
      ),
    );
    const bodies = await Promise.all(responses.map((r) => r.json()));
    const issued = bodies.filter((b) => b.access_token);
    assert.equal(bodies.filter((b) => b.error === 'invalid_grant').length, 2 - issued.length);
    assert.ok(issued.length <= 1, 'a code never yields two sets of tokens that both work');
    for (const body of issued)
      assert.equal((await env.request('GET', '/api/user/me', { token: body.access_token })).status, 401);
  });

  it('refresh tokens rotate, and reusing a rotated one revokes the grant: the newest tokens stop working too', async () => {
    const { app, accessToken, refreshToken } = await authorizeForTest(env, { scopes: ['read', 'offline_access'] });
    assert.ok(refreshToken, 'offline_access yields a refresh token');
    const as = await discover(env);
    const client = { client_id: app.clientId };
    const rotated = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshToken, insecure),
    );
    assert.ok(rotated.refresh_token);
    assert.notEqual(rotated.refresh_token, refreshToken);
    assert.equal((await env.request('GET', '/api/user/me', { token: rotated.access_token })).status, 200);
    assert.equal((await env.request('GET', '/api/user/me', { token: accessToken })).status, 200);

    const reuse = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshToken, insecure);
    assert.equal(reuse.status, 400);
    assert.equal((await reuse.json()).error, 'invalid_grant');

    assert.equal((await env.request('GET', '/api/user/me', { token: rotated.access_token })).status, 401);
    assert.equal((await env.request('GET', '/api/user/me', { token: accessToken })).status, 401);
    const newest = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), rotated.refresh_token!, insecure);
    assert.equal(newest.status, 400);
    assert.equal((await newest.json()).error, 'invalid_grant');
  });

  it('redirect URIs must match exactly: a character, a path, a port, a trailing slash or the host differs and the request is refused', async () => {
    const registered = 'http://127.0.0.1:8123/cb';
    const app = await registerTestApp(env, { scopes: ['read'], redirectUris: [registered] });
    for (const variant of [
      'http://127.0.0.1:8123/cc',
      'http://127.0.0.1:8123/cb/more',
      'http://127.0.0.1:8124/cb',
      'http://127.0.0.1:8123/cb/',
      'http://localhost:8123/cb',
      'http://127.0.0.1:8123/cb?x=1',
    ]) {
      const request = await authorizationRequest(env, { ...app, redirectUri: variant }, ['read']);
      const response = await fetch(request.url, { redirect: 'manual' });
      assert.equal(response.status, 400, variant);
      assert.equal(response.headers.get('location'), null, `never redirects to ${variant}`);
      assert.match(await response.text(), /redirect_uri/);
    }
    const exact = await fetch((await authorizationRequest(env, app, ['read'])).url, { redirect: 'manual' });
    assert.equal(exact.status, 303);
  });

  it('PKCE is required and only S256 is accepted', async () => {
    const app = await registerTestApp(env, { scopes: ['read'] });
    const cases: Record<string, Record<string, string | null>> = {
      missing: { code_challenge: null, code_challenge_method: null },
      plain: { code_challenge: 'a'.repeat(43), code_challenge_method: 'plain' },
    };
    for (const [name, overrides] of Object.entries(cases)) {
      const request = await authorizationRequest(env, app, ['read'], overrides);
      const response = await fetch(request.url, { redirect: 'manual' });
      assert.equal(response.status, 303, name);
      const location = new URL(response.headers.get('location')!);
      assert.equal(`${location.origin}${location.pathname}`, app.redirectUri);
      assert.equal(location.searchParams.get('error'), 'invalid_request', name);
      assert.equal(location.searchParams.get('code'), null);
    }
  });

  it('a wrong code_verifier is refused at the token endpoint', async () => {
    const app = await registerTestApp(env, { scopes: ['read'] });
    const { as, client, params } = await authorizedCallback(app, ['read']);
    const response = await oauth.authorizationCodeGrantRequest(
      as,
      client,
      oauth.None(),
      params,
      app.redirectUri,
      oauth.generateRandomCodeVerifier(),
      insecure,
    );
    assert.equal(response.status, 400);
    assert.equal((await response.json()).error, 'invalid_grant');
  });

  it('only response_type=code: implicit is refused, and so are the password and client-credentials grants', async () => {
    const app = await registerTestApp(env, { scopes: ['read'] });
    const implicit = await fetch((await authorizationRequest(env, app, ['read'], { response_type: 'token' })).url, {
      redirect: 'manual',
    });
    assert.equal(implicit.status, 303);
    const fragment = new URLSearchParams(new URL(implicit.headers.get('location')!).hash.slice(1));
    assert.equal(fragment.get('error'), 'unsupported_response_type');
    assert.equal(fragment.get('access_token'), null);
    for (const grant of ['password', 'client_credentials']) {
      const response = await fetch(`${env.baseUrl}/api/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: grant, client_id: app.clientId, username: 'a', password: 'b' }),
      });
      assert.equal(response.status, 400, grant);
      assert.equal((await response.json()).error, 'unsupported_grant_type', grant);
    }
  });

  it('a scope outside the app’s registration (openid included, for an app not registered for it) is refused with invalid_scope', async () => {
    const app = await registerTestApp(env, { scopes: ['read'] });
    for (const scope of ['read ai:chat', 'openid read']) {
      const response = await fetch((await authorizationRequest(env, app, scope.split(' '))).url, {
        redirect: 'manual',
      });
      assert.equal(response.status, 303);
      assert.equal(new URL(response.headers.get('location')!).searchParams.get('error'), 'invalid_scope', scope);
    }
  });

  it('a scope Tollgate does not know is ignored, not refused: the request goes on to sign-in with the known ones (README "Scopes")', async () => {
    const app = await registerTestApp(env, { scopes: ['read'] });
    const response = await fetch((await authorizationRequest(env, app, ['read', 'ai:chats'])).url, {
      redirect: 'manual',
    });
    assert.equal(response.status, 303);
    const location = new URL(response.headers.get('location')!, env.baseUrl);
    assert.equal(location.searchParams.get('error'), null, location.href);
    assert.notEqual(location.origin + location.pathname, app.redirectUri, location.href);
  });

  it('a token revoked at /api/oauth/revoke is refused with 401 on its next use', async () => {
    const { app, accessToken } = await authorizeForTest(env, { scopes: ['read'] });
    assert.equal((await env.request('GET', '/api/user/me', { token: accessToken })).status, 200);
    const as = await discover(env);
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, { client_id: app.clientId }, oauth.None(), accessToken, insecure),
    );
    const after = await env.request('GET', '/api/user/me', { token: accessToken });
    assert.equal(after.status, 401);
    assert.equal(after.body.error.code, 'UNAUTHENTICATED');
  });

  it('revoking a refresh token revokes the whole grant', async () => {
    const { app, accessToken, refreshToken } = await authorizeForTest(env, { scopes: ['read', 'offline_access'] });
    assert.equal((await env.request('GET', '/api/user/me', { token: accessToken })).status, 200);
    const as = await discover(env);
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, { client_id: app.clientId }, oauth.None(), refreshToken!, insecure),
    );
    assert.equal((await env.request('GET', '/api/user/me', { token: accessToken })).status, 401);
  });

  it('another app cannot revoke or introspect an app’s token', async () => {
    const victim = await authorizeForTest(env, { scopes: ['read'] });
    const other = await registerTestApp(env, { scopes: ['read'] });
    const as = await discover(env);
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, { client_id: other.clientId }, oauth.None(), victim.accessToken, insecure),
    );
    assert.equal((await env.request('GET', '/api/user/me', { token: victim.accessToken })).status, 200);
    const introspection = await oauth.processIntrospectionResponse(
      as,
      { client_id: other.clientId },
      await oauth.introspectionRequest(as, { client_id: other.clientId }, oauth.None(), victim.accessToken, insecure),
    );
    assert.equal(introspection.active, false);
  });
});
