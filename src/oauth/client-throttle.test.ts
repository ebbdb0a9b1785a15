import { it } from 'node:test';
import assert from 'node:assert/strict';
import * as oauth from 'oauth4webapi';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { loadConfig } from '../config.ts';
import { randomText } from '../platform/ids.ts';
import {
  authorizationRequest,
  clientAuth,
  discover,
  exchangeCode,
  registerTestApp,
  runAuthorization,
  TestBrowser,
  type TestApp,
  type TestUser,
} from './testing.ts';

const insecure = { [oauth.allowInsecureRequests]: true };
const defaults = loadConfig({});
/** Every rate limit and throttle at its production default (the harness relaxes some for other suites). */
const PRODUCTION_LIMITS = Object.fromEntries(
  Object.entries(defaults).filter(([name]) => /^(RATE_LIMIT_|SIGNIN_|OAUTH_CLIENT_)/.test(name)),
);

/** A user made through the operator API, who has never signed in. */
async function newUser(env: TestEnv): Promise<TestUser> {
  const email = `user-${randomText(10).toLowerCase()}@example.com`;
  const password = `pw-${randomText(16)}`;
  const created = await env.admin('POST', '/api/admin/users', { email, password, name: 'Office User' });
  assert.equal(created.status, 201, created.text);
  return { userId: created.body.id, email, password };
}

/** A raw token request with the app's secret in HTTP Basic (or none), from `address` when given. */
async function tokenRequest(
  env: TestEnv,
  app: TestApp,
  fields: Record<string, string>,
  options: { secret?: string; address?: string } = {},
) {
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
  const secret = options.secret ?? app.clientSecret;
  if (secret)
    headers.authorization = `Basic ${Buffer.from(`${encodeURIComponent(app.clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
  else fields = { client_id: app.clientId, ...fields };
  if (options.address) headers['x-forwarded-for'] = options.address;
  return env.request('POST', '/api/oauth/token', { raw: new URLSearchParams(fields).toString(), headers });
}

/** A user signs in to `app` for `scopes` (a new user unless given) and the app exchanges the code, from `address` when given. */
async function signInAndExchange(
  env: TestEnv,
  app: TestApp,
  scopes: string[],
  options: { user?: TestUser; address?: string } = {},
) {
  const request = await authorizationRequest(env, app, scopes);
  const user = options.user ?? (await newUser(env));
  const outcome = await runAuthorization(env, new TestBrowser(), request, { user });
  const code = (outcome as { url: URL }).url.searchParams.get('code')!;
  return tokenRequest(
    env,
    app,
    { grant_type: 'authorization_code', code, redirect_uri: app.redirectUri, code_verifier: request.codeVerifier },
    { address: options.address },
  );
}

describeEachDatabase(
  'a busy app signing in an office (production limits)',
  (env) => {
    it('200 users sign in through the browser flow one after another from one address, and a server-side app exchanges and refreshes their tokens: none is refused', async () => {
      const app = await registerTestApp(env, { type: 'confidential', scopes: ['read', 'offline_access'] });
      const users: TestUser[] = [];
      // Accounts are made by the operator, four at a time (the sign-ins under test are one after another).
      while (users.length < 200) users.push(...(await Promise.all([1, 2, 3, 4].map(() => newUser(env)))));

      const as = await discover(env);
      const client = { client_id: app.clientId };
      const refreshTokens: string[] = [];
      for (const user of users) {
        // The sign-in and consent pages, driven over HTTP with a cookie jar (TestBrowser): a real Chromium
        // for 200 sign-ins would take minutes and test the same requests.
        const request = await authorizationRequest(env, app, ['read', 'offline_access']);
        const outcome = await runAuthorization(env, new TestBrowser(), request, { user });
        assert.equal(
          outcome.kind,
          'callback',
          `user ${refreshTokens.length + 1}: ${outcome.kind === 'page' ? `${outcome.status} ${outcome.html.slice(0, 300)}` : ''}`,
        );
        const tokens = await exchangeCode(env, request, (outcome as { url: URL }).url);
        assert.ok(tokens.refresh_token);
        refreshTokens.push(tokens.refresh_token!);
      }
      for (const [i, refreshToken] of refreshTokens.entries()) {
        const response = await oauth.refreshTokenGrantRequest(as, client, clientAuth(app), refreshToken, insecure);
        assert.equal(response.status, 200, `refresh ${i + 1}`);
        const tokens = await oauth.processRefreshTokenResponse(as, client, response);
        assert.equal(
          (await env.request('GET', '/api/user/me', { token: tokens.access_token })).body.id,
          users[i]!.userId,
        );
      }
    });

    it("a server-side app refreshing from one address is not locked out by its users' revoked grants, while a wrong secret still is", async () => {
      const app = await registerTestApp(env, { type: 'confidential', scopes: ['read', 'offline_access'] });
      const failures = defaults.OAUTH_CLIENT_FAILURES_PER_MINUTE;
      const office = '198.51.100.40';
      const signIn = async () => {
        const request = await authorizationRequest(env, app, ['read', 'offline_access']);
        const outcome = await runAuthorization(env, new TestBrowser(), request, { user: await newUser(env) });
        const tokens = await exchangeCode(env, request, (outcome as { url: URL }).url);
        return tokens.refresh_token!;
      };
      const kept = await signIn();
      // Users who revoked the app: their refresh tokens, which the app still keeps, are gone.
      const revoked: string[] = [];
      for (let i = 0; i < 3; i++) {
        const token = await signIn();
        const revocation = await env.request('POST', '/api/oauth/revoke', {
          raw: new URLSearchParams({ token, token_type_hint: 'refresh_token' }).toString(),
          headers: {
            'content-type': 'application/x-www-form-urlencoded',
            authorization: `Basic ${Buffer.from(`${encodeURIComponent(app.clientId)}:${encodeURIComponent(app.clientSecret!)}`).toString('base64')}`,
          },
        });
        assert.equal(revocation.status, 200, revocation.text);
        revoked.push(token);
      }
      // The app's nightly refresh job meets more of them than the failure throttle allows a minute.
      for (let i = 0; i < failures + 10; i++) {
        const refused = await tokenRequest(
          env,
          app,
          { grant_type: 'refresh_token', refresh_token: revoked[i % revoked.length]! },
          { address: office },
        );
        assert.equal(refused.status, 400, `stale refresh ${i + 1}: ${refused.text}`);
        assert.equal(refused.body.error, 'invalid_grant');
      }
      const refreshed = await tokenRequest(
        env,
        app,
        { grant_type: 'refresh_token', refresh_token: kept },
        { address: office },
      );
      assert.equal(refreshed.status, 200, refreshed.text);

      // Guessing at the secret from that address is still counted there.
      for (let i = 0; i < failures; i++) {
        const wrong = await tokenRequest(
          env,
          app,
          { grant_type: 'refresh_token', refresh_token: kept },
          { secret: `tgs_wrong_${i}`, address: office },
        );
        assert.equal(wrong.status, 401);
      }
      const locked = await tokenRequest(
        env,
        app,
        { grant_type: 'refresh_token', refresh_token: kept },
        { address: office },
      );
      assert.equal(locked.status, 429);
    });

    it("a public app's users behind one address are not locked out by each other's stale refresh tokens", async () => {
      env.manualClock.advance(60_000);
      const app = await registerTestApp(env, { scopes: ['read', 'offline_access'] });
      const office = '198.51.100.41';
      // More stale or mistyped refresh tokens from the office's one address than the failure throttle allows.
      for (let i = 0; i < defaults.OAUTH_CLIENT_FAILURES_PER_MINUTE + 5; i++) {
        const refused = await tokenRequest(
          env,
          app,
          { grant_type: 'refresh_token', refresh_token: `stale-${i}` },
          { address: office },
        );
        assert.equal(refused.status, 400, `stale refresh ${i + 1}: ${refused.text}`);
        assert.equal(refused.body.error, 'invalid_grant');
      }
      // Another user at that address signs in, and the app exchanges the code and refreshes.
      const exchanged = await signInAndExchange(env, app, ['read', 'offline_access'], { address: office });
      assert.equal(exchanged.status, 200, exchanged.text);
      const refreshed = await tokenRequest(
        env,
        app,
        { grant_type: 'refresh_token', refresh_token: exchanged.body.refresh_token },
        { address: office },
      );
      assert.equal(refreshed.status, 200, refreshed.text);
    });
  },
  // A settable clock: the throttles count in minute windows of the service's clock, and on the wall clock a
  // burst that straddled a minute's end was counted in two windows (a CI run under load saw 400, not 429).
  { config: { ...PRODUCTION_LIMITS, TRUST_PROXY: '1' }, manualClock: true },
);

describeEachDatabase(
  'token endpoint throttling',
  (env) => {
    it('failed client authentication is throttled per app and address, answered 429 in RFC 6749 shape with Retry-After', async () => {
      const app = await registerTestApp(env, { type: 'confidential', scopes: ['read'] });
      const attacker = '203.0.113.7';
      for (let i = 0; i < 3; i++) {
        const refused = await tokenRequest(
          env,
          app,
          { grant_type: 'refresh_token', refresh_token: 'x' },
          { secret: `tgs_wrong_${i}`, address: attacker },
        );
        assert.equal(refused.status, 401);
        assert.equal(refused.body.error, 'invalid_client');
      }
      const limited = await tokenRequest(
        env,
        app,
        { grant_type: 'refresh_token', refresh_token: 'x' },
        { secret: 'tgs_wrong', address: attacker },
      );
      assert.equal(limited.status, 429);
      assert.match(limited.headers.get('content-type') ?? '', /^application\/json/);
      assert.equal(limited.headers.get('cache-control'), 'no-store');
      assert.deepEqual(Object.keys(limited.body).sort(), ['error', 'error_description']);
      assert.equal(limited.body.error, 'temporarily_unavailable');
      assert.match(
        limited.body.error_description,
        /Too many failed requests for this app from your address \(at most 3 a minute\)\. Retry after \d+ s\./,
      );
      const retryAfter = Number(limited.headers.get('retry-after'));
      assert.ok(retryAfter >= 1 && retryAfter <= 60);

      // The app's own server, at another address, is not locked out by a stranger's failures.
      const exchanged = await signInAndExchange(env, app, ['read'], { address: '198.51.100.2' });
      assert.equal(exchanged.status, 200, exchanged.text);

      // Once the minute is over, the address may try again.
      env.manualClock.advance(retryAfter * 1000);
      assert.equal(
        (
          await tokenRequest(
            env,
            app,
            { grant_type: 'refresh_token', refresh_token: 'x' },
            { secret: 'tgs_wrong', address: attacker },
          )
        ).status,
        401,
      );
    });

    it("invalid grants (made-up codes) are throttled per app and address too: a confidential app's at the failure limit, a public app's at its rate", async () => {
      env.manualClock.advance(60_000);
      const statusesOf = async (app: TestApp) => {
        const statuses: number[] = [];
        for (let i = 0; i < 6; i++) {
          const response = await tokenRequest(env, app, {
            grant_type: 'authorization_code',
            code: `made-up-${i}`,
            redirect_uri: app.redirectUri,
            code_verifier: 'v'.repeat(43),
          });
          statuses.push(response.status);
          if (response.status === 429) assert.match(response.body.error_description, /Retry after/);
          else assert.equal(response.body.error, 'invalid_grant');
        }
        return statuses;
      };
      // With its secret, the app's refused grants are its own (markClientProven): they count against its rate.
      const confidential = await registerTestApp(env, { type: 'confidential', scopes: ['read'] });
      assert.deepEqual(await statusesOf(confidential), [400, 400, 400, 400, 429, 429]);
      // Without a secret, they count against the public app's rate at this address (4 here), not the failures (3).
      const publicApp = await registerTestApp(env, { scopes: ['read'] });
      assert.deepEqual(await statusesOf(publicApp), [400, 400, 400, 400, 429, 429]);
    });

    it('successful token requests are limited only by the per-app rate, which other apps do not share', async () => {
      env.manualClock.advance(60_000);
      const busy = await registerTestApp(env, { type: 'confidential', scopes: ['read'] });
      const other = await registerTestApp(env, { type: 'confidential', scopes: ['read'] });
      const user = await newUser(env);
      const exchange = (app: TestApp) => signInAndExchange(env, app, ['read'], { user });
      for (let i = 0; i < 4; i++) assert.equal((await exchange(busy)).status, 200);
      const limited = await exchange(busy);
      assert.equal(limited.status, 429);
      assert.equal(limited.body.error, 'temporarily_unavailable');
      assert.match(limited.body.error_description, /This app reached its 4 token requests a minute/);
      assert.equal((await exchange(other)).status, 200);
    });

    it("a stranger revoking and introspecting made-up tokens in a public app's name (answered 200, RFC 7009) uses up only its own address's rate: the app's users still get tokens", async () => {
      env.manualClock.advance(60_000);
      // A public app's client_id is public (it is in every authorization URL) and it has no secret to prove.
      const app = await registerTestApp(env, { scopes: ['read', 'offline_access'] });
      const stranger = '203.0.113.9';
      // oidc-provider takes an empty client_secret or client_assertion for none at all: no proof either.
      const disguises: Array<Record<string, string>> = [{}, { client_secret: '', client_assertion: '' }];
      const send = (path: string, token: string, disguise: Record<string, string> = {}) =>
        env.request('POST', path, {
          raw: new URLSearchParams({ client_id: app.clientId, token, ...disguise }).toString(),
          headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-forwarded-for': stranger },
        });
      for (const [i, disguise] of disguises.entries()) {
        assert.equal((await send('/api/oauth/revoke', `made-up-${i}`, disguise)).status, 200);
        const introspected = await send('/api/oauth/introspect', `made-up-${i}`, disguise);
        assert.equal(introspected.status, 200);
        assert.deepEqual(introspected.body, { active: false });
      }
      const limited = await send('/api/oauth/revoke', 'made-up-more');
      assert.equal(limited.status, 429);
      assert.match(limited.body.error_description, /from your address/);

      // A user of the app, from their own address, signs in and refreshes as if nothing happened.
      const exchanged = await signInAndExchange(env, app, ['read', 'offline_access'], { address: '198.51.100.3' });
      assert.equal(exchanged.status, 200, exchanged.text);
      const refreshed = await tokenRequest(
        env,
        app,
        { grant_type: 'refresh_token', refresh_token: exchanged.body.refresh_token },
        { address: '198.51.100.3' },
      );
      assert.equal(refreshed.status, 200, refreshed.text);
    });

    it('an oversized token request is refused with 413 in RFC 6749 shape', async () => {
      const app = await registerTestApp(env, { scopes: ['read'] });
      const response = await tokenRequest(env, app, {
        grant_type: 'refresh_token',
        refresh_token: 'x'.repeat(100 * 1024),
      });
      assert.equal(response.status, 413);
      assert.equal(response.body.error, 'invalid_request');
      assert.match(response.body.error_description, /larger than the 57344 bytes/);
    });
  },
  {
    config: { OAUTH_CLIENT_FAILURES_PER_MINUTE: 3, RATE_LIMIT_OAUTH_CLIENT_PER_MINUTE: 4, TRUST_PROXY: '1' },
    manualClock: true,
  },
);
