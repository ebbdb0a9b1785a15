import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { registerTestApp, runAuthorization, TestBrowser } from '../oauth/testing.ts';
import { createTollgateClient, memoryStorage, TollgateOAuthError } from '../../packages/sdk/src/index.ts';

/**
 * The mix-up defence (RFC 9207) against a real Tollgate, whose metadata says it sends `iss` on its authorization
 * responses: the SDK redeems a code only when the response names the issuer of the gateway it signs in to.
 */
describeEachDatabase("the SDK checks the authorization response's issuer", (env) => {
  const redirectUri = 'http://127.0.0.1:9/iss/callback';

  /** An SDK client that signed in up to the redirect back: the callback URL Tollgate sent, and the token calls. */
  async function signedInUpToTheCallback() {
    const user = await env.createUser();
    const app = await registerTestApp(env, { scopes: ['read'], redirectUris: [redirectUri] });
    const tokenCalls: string[] = [];
    let navigatedTo = '';
    const client = createTollgateClient({
      baseUrl: env.baseUrl,
      clientId: app.clientId,
      redirectUri,
      scopes: ['read'],
      storage: memoryStorage(),
      transientStorage: memoryStorage(),
      navigate: (url) => void (navigatedTo = url),
      fetch: (input, init) => {
        if (String(input).endsWith('/api/oauth/token')) tokenCalls.push(String(init?.body));
        return fetch(input, init);
      },
    });
    await client.signIn();
    const outcome = await runAuthorization(
      env,
      new TestBrowser(),
      { app, scopes: ['read'], state: '', codeVerifier: '', url: new URL(navigatedTo) },
      { user },
    );
    assert.equal(outcome.kind, 'callback');
    return { client, callback: outcome.url, tokenCalls };
  }

  const refusedAsMixUp = (pattern: RegExp) => (error: unknown) =>
    error instanceof TollgateOAuthError && error.error === 'issuer_mismatch' && pattern.test(error.message);

  it("Tollgate's response names its issuer, and the SDK signs in with it", async () => {
    const metadata = (await env.request('GET', '/.well-known/oauth-authorization-server')).body;
    assert.equal(metadata.authorization_response_iss_parameter_supported, true);
    const { client, callback, tokenCalls } = await signedInUpToTheCallback();
    assert.equal(callback.searchParams.get('iss'), metadata.issuer);
    assert.ok((await client.handleRedirect(callback.toString()))?.accessToken);
    assert.equal(tokenCalls.length, 1);
    assert.equal(client.isSignedIn(), true);
  });

  it('a response without iss is refused before its code is redeemed', async () => {
    const { client, callback, tokenCalls } = await signedInUpToTheCallback();
    callback.searchParams.delete('iss');
    await assert.rejects(client.handleRedirect(callback.toString()), refusedAsMixUp(/names no issuer \(iss\)/));
    assert.deepEqual(tokenCalls, []);
    assert.equal(client.isSignedIn(), false);
  });

  it("a response naming another server's issuer is refused before its code is redeemed, an error response too", async () => {
    const { client, callback, tokenCalls } = await signedInUpToTheCallback();
    callback.searchParams.set('iss', 'https://attacker.example');
    await assert.rejects(
      client.handleRedirect(callback.toString()),
      refusedAsMixUp(new RegExp(`comes from https://attacker\\.example, not from ${env.baseUrl},`)),
    );
    assert.deepEqual(tokenCalls, []);
    assert.equal(client.isSignedIn(), false);

    // Another sign-in's denial, relayed from the other server: not shown as this gateway's answer.
    const second = await signedInUpToTheCallback();
    const denial = new URL(redirectUri);
    denial.search = new URLSearchParams({
      error: 'access_denied',
      state: second.callback.searchParams.get('state')!,
      iss: 'https://attacker.example',
    }).toString();
    await assert.rejects(second.client.handleRedirect(denial.toString()), refusedAsMixUp(/attacker\.example/));
  });

  it("any page may read the gateway's metadata, which the SDK reads before redeeming a code", async () => {
    const response = await env.request('GET', '/.well-known/oauth-authorization-server', {
      headers: { origin: 'https://some-app.example' },
    });
    assert.equal(response.status, 200);
    assert.equal(response.headers.get('access-control-allow-origin'), '*');
    assert.equal(response.headers.get('access-control-allow-credentials'), null, 'never with credentials');
  });
});
