import { it } from 'node:test';
import assert from 'node:assert/strict';
import { get } from 'node:http';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { authorizationRequest, registerTestApp, TestBrowser } from './testing.ts';

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
      assert.ok(next.startsWith(`${env.baseUrl}/api/oauth/authorize/`), `${JSON.stringify(headers)} → ${next}`);
    }
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
      assert.ok(next.startsWith('https://tollgate.example/api/oauth/authorize/'), next);
    }
  });
});
