import assert from 'node:assert/strict';
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import type { Page } from 'playwright-core';
import type { TestEnv } from '../testing/harness.ts';
import { randomText } from '../platform/ids.ts';
import { SCOPES } from './scopes.ts';

/**
 * Test helpers that go through the real OAuth flow over HTTP: a registered app, a browser with a cookie
 * jar that fills in the sign-in and consent pages, and the token exchange made by `oauth4webapi`, an
 * independent client library. Other features' tests get a working access token with
 * {@link authorizeForTest}.
 */

/** A user who can sign in on the authorization pages. */
export interface TestUser {
  userId: string;
  email: string;
  password: string;
}

/** An app registered through the operator API. */
export interface TestApp {
  clientId: string;
  clientSecret?: string;
  redirectUri: string;
  scopes: string[];
  type: 'public' | 'confidential';
}

/** Every scope except `offline_access`: what a test app asks for unless told otherwise. */
export const ALL_TEST_SCOPES: string[] = SCOPES.filter(
  (scope) => !['offline_access', 'openid', 'profile', 'email'].includes(scope),
);

/** Registers an app with `POST /api/admin/apps`; the redirect URI is a made-up loopback one unless given. */
export async function registerTestApp(
  env: TestEnv,
  options: { scopes?: string[]; type?: 'public' | 'confidential'; redirectUris?: string[]; name?: string } = {},
): Promise<TestApp> {
  const scopes = options.scopes ?? [...ALL_TEST_SCOPES, 'offline_access'];
  const redirectUris = options.redirectUris ?? [`http://127.0.0.1:9/callback/${randomText(8)}`];
  const type = options.type ?? 'public';
  const response = await env.admin('POST', '/api/admin/apps', {
    name: options.name ?? 'Test App',
    redirectUris,
    scopes,
    type,
  });
  if (response.status !== 201) throw new Error(`register app: ${response.status} ${response.text}`);
  return {
    clientId: response.body.clientId,
    clientSecret: response.body.clientSecret,
    redirectUri: redirectUris[0],
    scopes,
    type,
  };
}

/** A browser: keeps cookies (by path, as a browser would) and never follows redirects on its own. */
export class TestBrowser {
  readonly cookies = new Map<string, { value: string; path: string }>();

  /** The cookie header for `path`. */
  cookieHeader(path: string): string {
    return [...this.cookies]
      .filter(([, c]) => path.startsWith(c.path))
      .map(([name, c]) => `${name}=${c.value}`)
      .join('; ');
  }

  /** Adds the dashboard session of `env.createUser()` / `env.signIn()` (a `name=value; …` header). */
  addCookies(header: string): void {
    for (const pair of header.split(/;\s*/).filter(Boolean)) {
      const at = pair.indexOf('=');
      this.cookies.set(pair.slice(0, at), { value: pair.slice(at + 1), path: '/' });
    }
  }

  async fetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
    const target = new URL(url);
    const headers = new Headers(init.headers);
    const cookie = this.cookieHeader(target.pathname);
    if (cookie) headers.set('cookie', cookie);
    const response = await fetch(target, { ...init, headers, redirect: 'manual' });
    for (const line of response.headers.getSetCookie()) {
      const [pair, ...attributes] = line.split(/;\s*/);
      const at = pair.indexOf('=');
      const name = pair.slice(0, at);
      const value = pair.slice(at + 1);
      const attr = (key: string) =>
        attributes.find((a) => a.toLowerCase().startsWith(`${key}=`))?.slice(key.length + 1);
      const expires = attr('expires');
      const gone =
        value === '' || attr('max-age') === '0' || (expires !== undefined && Date.parse(expires) <= Date.now());
      if (gone) this.cookies.delete(name);
      else this.cookies.set(name, { value, path: attr('path') ?? '/' });
    }
    return response;
  }

  /** Submits a form (urlencoded) the way a browser does. */
  submit(url: string | URL, fields: Record<string, string>): Promise<Response> {
    return this.fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams(fields).toString(),
    });
  }
}

/** The parameters of one authorization request; PKCE S256 unless the test overrides it. */
export interface AuthorizationRequest {
  app: TestApp;
  scopes: string[];
  state: string;
  codeVerifier: string;
  /** The URL the browser opens. */
  url: URL;
}

/** Builds an authorization request URL; `overrides` replace (or, with `null`, remove) query parameters. */
export async function authorizationRequest(
  env: TestEnv,
  app: TestApp,
  scopes: string[],
  overrides: Record<string, string | null> = {},
): Promise<AuthorizationRequest> {
  const codeVerifier = oauth.generateRandomCodeVerifier();
  const state = oauth.generateRandomState();
  const url = new URL('/api/oauth/authorize', env.baseUrl);
  const params: Record<string, string | null> = {
    response_type: 'code',
    client_id: app.clientId,
    redirect_uri: app.redirectUri,
    scope: scopes.join(' '),
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    ...overrides,
  };
  for (const [key, value] of Object.entries(params)) if (value !== null) url.searchParams.set(key, value);
  return { app, scopes, state, codeVerifier, url };
}

/** What the browser shows at the end of a run: the app's callback URL, or a page of ours. */
export type BrowserOutcome = { kind: 'callback'; url: URL } | { kind: 'page'; status: number; html: string; url: URL };

/** Follows redirects from `url` until the browser leaves the server (the callback) or shows a page. */
export async function follow(
  env: TestEnv,
  browser: TestBrowser,
  start: Response,
  startUrl: URL,
): Promise<BrowserOutcome> {
  let response = start;
  let url = startUrl;
  for (let hops = 0; hops < 20; hops++) {
    const location = response.headers.get('location');
    if (response.status < 300 || response.status >= 400 || !location) {
      return { kind: 'page', status: response.status, html: await response.text(), url };
    }
    await response.body?.cancel();
    url = new URL(location, url);
    if (url.origin !== new URL(env.baseUrl).origin) return { kind: 'callback', url };
    response = await browser.fetch(url);
  }
  throw new Error('too many redirects');
}

/** How the browser answers the pages: the user who signs in, and the consent given. */
export interface BrowserAnswers {
  user: TestUser;
  /** Credits per day typed into the **Daily spending limit** field; empty or absent is no limit. */
  dailyLimit?: string | number;
  decision?: 'allow' | 'deny';
}

/** Opens the authorization URL and fills in the sign-in and consent pages; returns where it ended. */
export async function runAuthorization(
  env: TestEnv,
  browser: TestBrowser,
  request: AuthorizationRequest,
  answers: BrowserAnswers,
): Promise<BrowserOutcome> {
  let outcome = await follow(env, browser, await browser.fetch(request.url), request.url);
  for (let pages = 0; pages < 4 && outcome.kind === 'page'; pages++) {
    const { html, url } = outcome;
    const action = /<form method="post" action="([^"]+)"/.exec(html)?.[1];
    if (outcome.status !== 200 || !action) return outcome;
    const target = new URL(action.replaceAll('&amp;', '&'), url);
    const fields: Record<string, string> = action.endsWith('/login')
      ? { email: answers.user.email, password: answers.user.password }
      : {
          decision: answers.decision ?? 'allow',
          daily_limit: answers.dailyLimit === undefined ? '' : String(answers.dailyLimit),
        };
    outcome = await follow(env, browser, await browser.submit(target, fields), target);
  }
  return outcome;
}

/** The authorization server metadata, discovered by oauth4webapi. */
export async function discover(env: TestEnv): Promise<oauth.AuthorizationServer> {
  const issuer = new URL(env.baseUrl);
  return oauth.processDiscoveryResponse(
    issuer,
    await oauth.discoveryRequest(issuer, { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true }),
  );
}

/** oauth4webapi's client authentication for the app. */
export function clientAuth(app: TestApp, method: 'basic' | 'post' = 'basic'): oauth.ClientAuth {
  if (!app.clientSecret) return oauth.None();
  return method === 'basic' ? oauth.ClientSecretBasic(app.clientSecret) : oauth.ClientSecretPost(app.clientSecret);
}

/** Options of {@link authorizeForTest}. */
export interface AuthorizeOptions {
  /** Scopes to ask for (default: every scope but `offline_access`). */
  scopes?: string[];
  /** Daily spending limit in credits typed at consent (default: none). */
  dailyLimit?: string | number;
  /** The user who consents (default: a new user made with `env.createUser()`). */
  user?: TestUser;
  /** The app (default: a new public app allowed every scope). */
  app?: TestApp;
}

/** A finished authorization: the user, the app and its tokens. */
export interface TestAuthorization {
  user: TestUser;
  app: TestApp;
  clientId: string;
  accessToken: string;
  /** Present when `offline_access` was asked for. */
  refreshToken?: string;
  scope: string;
}

/**
 * Registers an app (or uses `options.app`), signs a user in on the authorization pages, consents with the
 * given daily limit and exchanges the code (PKCE S256) for tokens. Use the `accessToken` as a bearer:
 * `env.request('GET', '/api/user/me', { token: accessToken })`.
 */
export async function authorizeForTest(env: TestEnv, options: AuthorizeOptions = {}): Promise<TestAuthorization> {
  const user = options.user ?? (await env.createUser());
  const scopes = options.scopes ?? ALL_TEST_SCOPES;
  const app = options.app ?? (await registerTestApp(env));
  const request = await authorizationRequest(env, app, scopes);
  const outcome = await runAuthorization(env, new TestBrowser(), request, { user, dailyLimit: options.dailyLimit });
  if (outcome.kind !== 'callback')
    throw new Error(`authorization stopped on a page (${outcome.status}): ${outcome.html.slice(0, 500)}`);
  const tokens = await exchangeCode(env, request, outcome.url);
  return {
    user,
    app,
    clientId: app.clientId,
    accessToken: tokens.access_token,
    refreshToken: tokens.refresh_token,
    scope: tokens.scope ?? '',
  };
}

/** Validates the callback with oauth4webapi and exchanges its code for tokens. */
export async function exchangeCode(
  env: TestEnv,
  request: AuthorizationRequest,
  callback: URL,
): Promise<oauth.TokenEndpointResponse> {
  const as = await discover(env);
  const client: oauth.Client = { client_id: request.app.clientId };
  const params = oauth.validateAuthResponse(as, client, callback, request.state);
  const response = await oauth.authorizationCodeGrantRequest(
    as,
    client,
    clientAuth(request.app),
    params,
    request.app.redirectUri,
    request.codeVerifier,
    { [oauth.allowInsecureRequests]: true },
  );
  return oauth.processAuthorizationCodeResponse(as, client, response);
}

/** openid-client's default discovery (`/.well-known/openid-configuration` of the issuer), over plain http. */
export function discoverWithOpenidClient(env: TestEnv, app: TestApp): Promise<client.Configuration> {
  return client.discovery(
    new URL(env.baseUrl),
    app.clientId,
    app.clientSecret,
    app.clientSecret ? client.ClientSecretBasic(app.clientSecret) : client.None(),
    { execute: [client.allowInsecureRequests] },
  );
}

/**
 * An app's "Sign in with Tollgate" as openid-client builds it: code + PKCE + state, and a nonce with `openid`;
 * `extra` adds parameters (`prompt`, `max_age`).
 */
export async function startSignIn(env: TestEnv, app: TestApp, scopes: string[], extra: Record<string, string> = {}) {
  const config = await discoverWithOpenidClient(env, app);
  const codeVerifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = scopes.includes('openid') ? client.randomNonce() : undefined;
  const url = client.buildAuthorizationUrl(config, {
    redirect_uri: app.redirectUri,
    scope: scopes.join(' '),
    code_challenge: await client.calculatePKCECodeChallenge(codeVerifier),
    code_challenge_method: 'S256',
    state,
    ...(nonce ? { nonce } : {}),
    ...extra,
  });
  return { config, codeVerifier, state, nonce, url };
}

/** An email no account has. */
export const newEmail = () => `new-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;

/** The uid of the interaction whose page `page` shows. */
export function interactionUid(page: Page): string {
  const uid = /^\/api\/oauth\/interaction\/([A-Za-z0-9_-]+)$/.exec(new URL(page.url()).pathname)?.[1];
  assert.ok(uid, `not on an interaction page: ${page.url()}`);
  return uid;
}

/** Fills and sends the sign-up form the page shows. */
export async function signUp(page: Page, account: { name?: string; email: string; password: string }) {
  await page.getByRole('heading', { name: 'Create your account' }).waitFor();
  if (account.name) await page.getByLabel('Name').fill(account.name);
  await page.getByLabel('Email').fill(account.email);
  await page.getByLabel('Password').fill(account.password);
  await page.getByRole('button', { name: 'Create account' }).click();
}

/** An ES256 key pair a key-pair app (`private_key_jwt`) signs its client assertions with. */
export interface TestClientKey {
  kid: string;
  privateKey: CryptoKey;
  /** What the app registers: public members only, with `kid`. */
  publicJwk: Record<string, string>;
}

/** A fresh {@link TestClientKey}. */
export async function newTestClientKey(kid = `key-${randomText(8)}`): Promise<TestClientKey> {
  const pair = await crypto.subtle.generateKey({ name: 'ECDSA', namedCurve: 'P-256' }, true, ['sign', 'verify']);
  const { kty, crv, x, y } = await crypto.subtle.exportKey('jwk', pair.publicKey);
  return { kid, privateKey: pair.privateKey, publicJwk: { kty: kty!, crv: crv!, x: x!, y: y!, kid } };
}

/**
 * What the token endpoint answers a client assertion for `clientId` signed with `key` (fresh `jti`, a minute's
 * `exp`), sent with a made-up code: `invalid_grant` once the app authenticated (the code is checked after the
 * client), `invalid_client` when the key is not the app's.
 */
export async function tokenEndpointErrorWithKey(env: TestEnv, clientId: string, key: TestClientKey): Promise<string> {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  const claims = { iss: clientId, sub: clientId, aud: env.baseUrl, jti: randomText(16), iat: now, exp: now + 60 };
  const input = `${part({ alg: 'ES256', kid: key.kid, typ: 'JWT' })}.${part(claims)}`;
  const signature = await crypto.subtle.sign({ name: 'ECDSA', hash: 'SHA-256' }, key.privateKey, Buffer.from(input));
  const response = await fetch(`${env.baseUrl}/api/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code: 'not-a-code',
      redirect_uri: 'http://127.0.0.1:9/callback',
      client_id: clientId,
      client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer',
      client_assertion: `${input}.${Buffer.from(signature).toString('base64url')}`,
    }),
  });
  return ((await response.json()) as { error: string }).error;
}
