import { it } from 'node:test';
import assert from 'node:assert/strict';
import { get } from 'node:http';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { authorizationRequest, exchangeCode, registerTestApp, runAuthorization, TestBrowser } from './testing.ts';

/** A browser that keeps each host's cookies to that host, as a real one does (TestBrowser keeps one jar). */
class HostBrowser extends TestBrowser {
  readonly jars = new Map<string, TestBrowser>();
  override fetch(url: string | URL, init: RequestInit = {}): Promise<Response> {
    const host = new URL(url).host;
    if (!this.jars.has(host)) this.jars.set(host, new TestBrowser());
    return this.jars.get(host)!.fetch(url, init);
  }
}

/** A GET with these headers, Host included (fetch sends its own): status, Location and Set-Cookie lines. */
function rawGet(url: URL, headers: Record<string, string>) {
  return new Promise<{ status: number; location: string; setCookies: string[] }>((resolve, reject) => {
    get(url, { headers }, (response) => {
      response.resume();
      resolve({
        status: response.statusCode!,
        location: response.headers.location ?? '',
        setCookies: response.headers['set-cookie'] ?? [],
      });
    }).on('error', reject);
  });
}

/**
 * Opens the authorization URL with `headers` (what a proxy in front sent), follows it to the sign-in page and
 * signs in there; returns the authorization request's Set-Cookie lines and where the sign-in sends the browser.
 */
async function signInThrough(env: TestEnv, headers: Record<string, string>) {
  const user = await env.createUser();
  const app = await registerTestApp(env, { scopes: ['read'] });
  const { url } = await authorizationRequest(env, app, ['read']);
  const authorize = await rawGet(url, headers);
  assert.equal(authorize.status, 303);
  const browser = new TestBrowser();
  for (const line of authorize.setCookies) {
    const [pair, ...attributes] = line.split(/;\s*/);
    const path = attributes.find((a) => a.startsWith('path='))?.slice(5) ?? '/';
    browser.cookies.set(pair.slice(0, pair.indexOf('=')), { value: pair.slice(pair.indexOf('=') + 1), path });
  }
  const page = await browser.fetch(new URL(authorize.location, env.baseUrl));
  const action = /<form method="post" action="([^"]+\/login)"/.exec(await page.text())?.[1];
  assert.ok(action, 'the sign-in page');
  const signedIn = await browser.submit(new URL(action, env.baseUrl), { email: user.email, password: user.password });
  assert.equal(signedIn.status, 303);
  return { setCookies: authorize.setCookies, next: signedIn.headers.get('location')! };
}

describeEachDatabase('oauth: the public address, not the request, names the server', (env) => {
  it('after the sign-in page the browser goes back to PUBLIC_BASE_URL, whatever Host or X-Forwarded-Host the authorization request carried', async () => {
    // A proxy that passes the client's X-Forwarded-Host on, or sets Host to its upstream (nginx's default).
    const proxies: Record<string, string>[] = [
      { host: 'tollgate-upstream:3000' },
      { 'x-forwarded-host': 'evil.example' },
    ];
    for (const headers of proxies) {
      const { next } = await signInThrough(env, headers);
      assert.ok(
        new URL(next, env.baseUrl).href.startsWith(`${env.baseUrl}/api/oauth/authorize/`),
        `${JSON.stringify(headers)} → ${next}`,
      );
    }
  });

  it('an authorization opened at another name of this server (localhost for 127.0.0.1) ends with a code: its sign-in sends the browser back to the address it used, where its cookies are', async () => {
    // A newcomer types http://localhost:3000 where PUBLIC_BASE_URL says http://127.0.0.1:3000: the
    // authorization server's cookies are then localhost's, and a sign-in that sent the browser on to
    // 127.0.0.1 left them behind ('authorization request has expired').
    const user = await env.createUser();
    const app = await registerTestApp(env, { scopes: ['read'] });
    const request = await authorizationRequest(env, app, ['read']);
    const other = new URL(env.baseUrl);
    other.hostname = 'localhost';
    request.url.host = other.host;
    // `runAuthorization` reads only `baseUrl` of its env: the address the browser is at.
    const outcome = await runAuthorization({ baseUrl: other.origin } as TestEnv, new HostBrowser(), request, { user });
    assert.equal(outcome.kind, 'callback', outcome.kind === 'page' ? outcome.html.slice(0, 300) : '');
    assert.ok(outcome.url.href.startsWith(app.redirectUri), outcome.url.href);
    const tokens = await exchangeCode(env, request, outcome.url);
    assert.ok(tokens.access_token);
  });
});

describeEachDatabase('oauth: an https public address behind a proxy', (env) => {
  it('the authorization server’s cookies are Secure and its own URLs https, though the proxy sends no X-Forwarded-Proto', async () => {
    // The server listens on plain http behind a TLS proxy (the harness sets PUBLIC_BASE_URL after listening;
    // oidc-provider is built on the first OAuth request, with this issuer).
    env.service.ctx.config.PUBLIC_BASE_URL = 'https://tollgate.example';
    const proxies: Record<string, string>[] = [{}, { 'x-forwarded-proto': 'http' }];
    for (const headers of proxies) {
      const { setCookies, next } = await signInThrough(env, headers);
      assert.ok(setCookies.length > 0);
      for (const line of setCookies) assert.match(line, /;\s*secure/i, line);
      // A path resolves against the page the browser is on: https://tollgate.example, through the proxy.
      assert.ok(
        new URL(next, 'https://tollgate.example').href.startsWith('https://tollgate.example/api/oauth/authorize/'),
        next,
      );
    }
  });
});
