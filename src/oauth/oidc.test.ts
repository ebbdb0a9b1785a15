import { it } from 'node:test';
import assert from 'node:assert/strict';
import * as client from 'openid-client';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import {
  authorizeForTest,
  discoverWithOpenidClient,
  startSignIn,
  registerTestApp,
  runAuthorization,
  TestBrowser,
  type TestApp,
  type TestUser,
} from './testing.ts';

/** "Sign in with Tollgate" as an app does it with openid-client: code + PKCE + nonce, through the pages. */
async function signInWithTollgate(env: TestEnv, app: TestApp, user: TestUser, scopes: string[]) {
  const { config, codeVerifier, state, nonce, url } = await startSignIn(env, app, scopes);
  const outcome = await runAuthorization(env, new TestBrowser(), { app, scopes, state, codeVerifier, url }, { user });
  if (outcome.kind !== 'callback')
    throw new Error(`stopped on a page (${outcome.status}): ${outcome.html.slice(0, 300)}`);
  // Validates the callback (state, iss) and the ID token (signature against the JWKS, iss, aud, exp, nonce).
  const tokens = await client.authorizationCodeGrant(config, outcome.url, {
    pkceCodeVerifier: codeVerifier,
    expectedState: state,
    expectedNonce: nonce,
    idTokenExpected: true,
  });
  return { config, tokens };
}

describeEachDatabase('Sign in with Tollgate (OpenID Connect)', (env) => {
  it('openid-client discovers the provider by default, signs a user in with code + PKCE, validates the ID token and reads userinfo', async () => {
    const user = await env.createUser({ name: 'Ada Lovelace' });
    const app = await registerTestApp(env, { scopes: ['openid', 'profile', 'email', 'read'] });
    const { config, tokens } = await signInWithTollgate(env, app, user, ['openid', 'profile', 'email', 'read']);

    assert.equal(config.serverMetadata().issuer, env.baseUrl);
    const claims = tokens.claims()!;
    assert.equal(claims.sub, user.userId);
    assert.equal(claims.iss, env.baseUrl);
    assert.equal(claims.aud, app.clientId);
    assert.doesNotMatch(tokens.access_token, /^ey/, 'access tokens stay opaque');

    const info = await client.fetchUserInfo(config, tokens.access_token, user.userId);
    assert.equal(info.sub, user.userId);
    assert.equal(info.name, 'Ada Lovelace');
    assert.equal(info.email, user.email);
    assert.equal(info.email_verified, false, 'Tollgate does not verify addresses and says so');

    // The same token is an ordinary Tollgate access token for the API scopes it carries.
    const me = await env.request('GET', '/api/user/me', { token: tokens.access_token });
    assert.equal(me.status, 200, me.text);
    assert.equal(me.body.id, user.userId);
  });

  it('userinfo releases only the claims of the granted scopes', async () => {
    const user = await env.createUser({ name: 'Grace Hopper' });
    const app = await registerTestApp(env, { scopes: ['openid', 'profile', 'email'] });
    const { config, tokens } = await signInWithTollgate(env, app, user, ['openid']);
    const info = await client.fetchUserInfo(config, tokens.access_token, user.userId);
    assert.deepEqual(Object.keys(info).sort(), ['sub']);
  });

  it('a confidential app gets an ID token and a refresh token, and the refreshed tokens still sign in', async () => {
    const user = await env.createUser();
    const app = await registerTestApp(env, { scopes: ['openid', 'email', 'offline_access'], type: 'confidential' });
    const { config, tokens } = await signInWithTollgate(env, app, user, ['openid', 'email', 'offline_access']);
    assert.ok(tokens.refresh_token);
    const refreshed = await client.refreshTokenGrant(config, tokens.refresh_token!);
    assert.equal(refreshed.claims()?.sub, user.userId);
    assert.equal((await client.fetchUserInfo(config, refreshed.access_token, user.userId)).email, user.email);
  });

  it('without the openid scope the flow stays plain OAuth: no ID token', async () => {
    const authorization = await authorizeForTest(env, { scopes: ['read'] });
    assert.ok(authorization.accessToken);
    const userinfo = await env.request('GET', '/api/oauth/userinfo', { token: authorization.accessToken });
    assert.equal(userinfo.status, 403, 'userinfo needs a token granted openid');
  });

  it('publishes OpenID Connect discovery beside the OAuth metadata, with the same issuer and endpoints', async () => {
    const oidc = await env.request('GET', '/.well-known/openid-configuration');
    const oauth = await env.request('GET', '/.well-known/oauth-authorization-server');
    assert.equal(oidc.status, 200);
    for (const field of ['issuer', 'authorization_endpoint', 'token_endpoint', 'jwks_uri', 'scopes_supported'])
      assert.deepEqual(oidc.body[field], oauth.body[field], field);
    assert.equal(oidc.body.userinfo_endpoint, `${env.baseUrl}/api/oauth/userinfo`);
    assert.deepEqual(oidc.body.id_token_signing_alg_values_supported, ['ES256']);
    assert.deepEqual(oidc.body.subject_types_supported, ['public']);
    for (const scope of ['openid', 'profile', 'email']) assert.ok(oidc.body.scopes_supported.includes(scope), scope);
  });
});
