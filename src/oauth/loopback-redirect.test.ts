import { it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import {
  authorizationRequest,
  discoverWithOpenidClient,
  registerTestApp,
  runAuthorization,
  TestBrowser,
  type TestApp,
  type TestUser,
} from './testing.ts';

/**
 * What a CLI or desktop app does for "Sign in with Tollgate" (RFC 8252 §7.3): listens for its callback on a
 * loopback address, on whatever port the system gives it, and reads the code from the request it receives.
 */
async function startCallbackListener(host: '127.0.0.1' | '::1') {
  let deliver!: (url: URL) => void;
  const received = new Promise<URL>((resolve) => (deliver = resolve));
  const server: Server = createServer((request, response) => {
    deliver(new URL(request.url ?? '/', origin));
    response.writeHead(200, { 'content-type': 'text/plain' }).end('Signed in. You can close this tab.');
  });
  await new Promise<void>((resolve) => server.listen(0, host, resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://${host === '::1' ? '[::1]' : host}:${port}`;
  return { origin, port, received, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/**
 * Signs `user` in for `app` with openid-client (code + PKCE S256) and `redirectUri`, through the sign-in and
 * consent pages; the browser then lands on the app's listener. Returns what the listener received.
 */
async function authorizeTo(env: TestEnv, app: TestApp, user: TestUser, redirectUri: string, received: Promise<URL>) {
  const config = await discoverWithOpenidClient(env, app);
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: redirectUri,
    scope: 'read',
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
  });
  const outcome = await runAuthorization(
    env,
    new TestBrowser(),
    { app, scopes: ['read'], state, codeVerifier, url },
    { user },
  );
  if (outcome.kind !== 'callback')
    throw new Error(`stopped on a page (${outcome.status}): ${outcome.html.slice(0, 300)}`);
  assert.ok(outcome.url.href.startsWith(`${redirectUri}?`), outcome.url.href);
  // The browser delivers the answer to the app's listener, as it would for a real CLI.
  const landed = await fetch(outcome.url);
  assert.equal(landed.status, 200);
  await landed.body?.cancel();
  return { config, codeVerifier, state, callback: await received };
}

/** The user an access token acts for. */
async function userOf(env: TestEnv, accessToken: string): Promise<string> {
  const me = await env.request('GET', '/api/user/me', { token: accessToken });
  assert.equal(me.status, 200, me.text);
  return me.body.id;
}

/** The authorization endpoint's answer to a request naming `redirectUri`. */
async function authorizeStatus(env: TestEnv, app: TestApp, redirectUri: string, overrides = {}) {
  const request = await authorizationRequest(env, { ...app, redirectUri }, ['read'], overrides);
  const response = await fetch(request.url, { redirect: 'manual' });
  return { status: response.status, location: response.headers.get('location'), text: await response.text() };
}

describeEachDatabase(
  'OAuth loopback redirect URIs on any port (OAUTH_LOOPBACK_ANY_PORT)',
  (env) => {
    it('a public app registered as http://127.0.0.1/callback signs in from the port its listener got (openid-client, code + PKCE)', async () => {
      const user = await env.createUser();
      const app = await registerTestApp(env, { scopes: ['read'], redirectUris: ['http://127.0.0.1/callback'] });
      const listener = await startCallbackListener('127.0.0.1');
      try {
        const redirectUri = `${listener.origin}/callback`;
        const { config, codeVerifier, state, callback } = await authorizeTo(
          env,
          app,
          user,
          redirectUri,
          listener.received,
        );
        assert.equal(`${callback.origin}${callback.pathname}`, redirectUri);
        // openid-client sends the redirect_uri of the callback it was given, port included.
        const tokens = await client.authorizationCodeGrant(config, callback, {
          pkceCodeVerifier: codeVerifier,
          expectedState: state,
        });
        assert.equal(await userOf(env, tokens.access_token), user.userId);
      } finally {
        await listener.close();
      }
    });

    it('a confidential app registered as http://[::1]:8080/callback signs in from another port (openid-client, client_secret_basic + PKCE)', async () => {
      const user = await env.createUser();
      const app = await registerTestApp(env, {
        scopes: ['read'],
        type: 'confidential',
        redirectUris: ['http://[::1]:8080/callback'],
      });
      assert.ok(app.clientSecret);
      const listener = await startCallbackListener('::1');
      try {
        assert.notEqual(listener.port, 8080);
        const redirectUri = `${listener.origin}/callback`;
        const { config, codeVerifier, state, callback } = await authorizeTo(
          env,
          app,
          user,
          redirectUri,
          listener.received,
        );
        const tokens = await client.authorizationCodeGrant(config, callback, {
          pkceCodeVerifier: codeVerifier,
          expectedState: state,
        });
        assert.equal(await userOf(env, tokens.access_token), user.userId);
      } finally {
        await listener.close();
      }
    });

    it('the token endpoint still wants the redirect_uri of the authorization request: the code of one port is refused for another', async () => {
      const user = await env.createUser();
      const app = await registerTestApp(env, { scopes: ['read'], redirectUris: ['http://127.0.0.1/callback'] });
      const listener = await startCallbackListener('127.0.0.1');
      try {
        const { config, codeVerifier, state, callback } = await authorizeTo(
          env,
          app,
          user,
          `${listener.origin}/callback`,
          listener.received,
        );
        const elsewhere = new URL(callback);
        elsewhere.port = String(listener.port === 65535 ? 1024 : listener.port + 1);
        await assert.rejects(
          client.authorizationCodeGrant(config, elsewhere, { pkceCodeVerifier: codeVerifier, expectedState: state }),
          (error: any) => error.error === 'invalid_grant',
        );
      } finally {
        await listener.close();
      }
    });

    it('an error of a request from another loopback port is sent back to that port', async () => {
      const app = await registerTestApp(env, { scopes: ['read'], redirectUris: ['http://127.0.0.1:8123/callback'] });
      const answer = await authorizeStatus(env, app, 'http://127.0.0.1:53121/callback', {
        code_challenge: null,
        code_challenge_method: null,
      });
      assert.equal(answer.status, 303, answer.text);
      const location = new URL(answer.location!);
      assert.equal(`${location.origin}${location.pathname}`, 'http://127.0.0.1:53121/callback');
      assert.equal(location.searchParams.get('error'), 'invalid_request');
    });

    it('refuses every other difference: another host, path, query, scheme, an https or localhost or non-loopback port, a disguised loopback address', async () => {
      const app = await registerTestApp(env, {
        scopes: ['read'],
        redirectUris: [
          'http://127.0.0.1/callback',
          'https://app.example.com/callback',
          'https://app.example.com:8443/callback',
          'http://localhost/callback',
          'http://localhost:8080/callback',
          'https://192.0.2.10/callback',
        ],
      });
      for (const variant of [
        'http://127.0.0.2:5000/callback', // another loopback host
        'http://[::1]:5000/callback', // the other loopback literal
        'http://app.example.com:5000/callback', // another host
        'http://127.0.0.1:5000/other', // another path
        'http://127.0.0.1:5000/callback/', // a trailing slash
        'http://127.0.0.1:5000/callback?x=1', // a query
        'https://127.0.0.1:5000/callback', // https on loopback
        'https://app.example.com:9443/callback', // https, another port
        'https://app.example.com/callback:5000',
        'http://localhost:5000/callback', // localhost keeps exact matching (RFC 8252 §8.3)
        'http://localhost:8081/callback',
        'https://192.0.2.10:8443/callback', // a port on a non-loopback IP
        'http://192.0.2.10:5000/callback',
        'http://0x7f000001:5000/callback', // URL parsers read these as 127.0.0.1
        'http://127.1:5000/callback',
        'http://127.0.0.1:5000@evil.example/callback', // credentials, host evil.example
        'http://127.0.0.1:99999/callback', // no such port
        'HTTP://127.0.0.1:5000/callback',
      ]) {
        const answer = await authorizeStatus(env, app, variant);
        assert.equal(answer.status, 400, variant);
        assert.equal(answer.location, null, `never redirects to ${variant}`);
        assert.match(answer.text, /redirect_uri/, variant);
      }
      for (const exact of [
        'http://127.0.0.1/callback',
        'https://app.example.com:8443/callback',
        'http://localhost:8080/callback',
      ])
        assert.equal((await authorizeStatus(env, app, exact)).status, 303, exact);
    });

    it('grants no CORS to a page on another loopback port: its token call and API calls are refused, the registered origin is served', async () => {
      const app = await registerTestApp(env, { scopes: ['read'], redirectUris: ['http://127.0.0.1:5173/callback'] });
      const tokenCall = (origin: string) =>
        env.request('POST', '/api/oauth/token', {
          headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
          raw: new URLSearchParams({
            grant_type: 'authorization_code',
            client_id: app.clientId,
            code: 'not-a-code',
            redirect_uri: 'http://127.0.0.1:5174/callback',
            code_verifier: 'v'.repeat(43),
          }).toString(),
        });
      const registered = await tokenCall('http://127.0.0.1:5173');
      assert.equal(registered.headers.get('access-control-allow-origin'), 'http://127.0.0.1:5173');
      assert.equal(registered.body.error, 'invalid_grant', registered.text);
      const otherPort = await tokenCall('http://127.0.0.1:5174');
      assert.equal(otherPort.status, 400);
      assert.equal(otherPort.headers.get('access-control-allow-origin'), null);
      assert.equal(otherPort.body.error, 'invalid_request', otherPort.text);
      assert.match(otherPort.body.error_description, /origin/);
      const api = await env.request('OPTIONS', '/api/user/me', {
        headers: { origin: 'http://127.0.0.1:5174', 'access-control-request-method': 'GET' },
      });
      assert.equal(api.headers.get('access-control-allow-origin'), null);
    });
  },
  { config: { OAUTH_LOOPBACK_ANY_PORT: true } },
);

describeEachDatabase('OAuth loopback redirect URIs, OAUTH_LOOPBACK_ANY_PORT off (the default)', (env) => {
  it('a loopback redirect URI on another port than the registered one is refused (exact matching)', async () => {
    const app = await registerTestApp(env, { scopes: ['read'], redirectUris: ['http://127.0.0.1/callback'] });
    const answer = await authorizeStatus(env, app, 'http://127.0.0.1:53121/callback');
    assert.equal(answer.status, 400);
    assert.equal(answer.location, null);
    assert.equal((await authorizeStatus(env, app, 'http://127.0.0.1/callback')).status, 303);
  });
});
