import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { registerTestApp, runAuthorization, TestBrowser } from '../oauth/testing.ts';
import { createTollgateClient, memoryStorage, type TollgateStorage } from '../../packages/sdk/src/index.ts';

/**
 * Two tabs of one app share its `localStorage`, so they share one rotating refresh token. Against a real
 * Tollgate, whose reuse detection revokes the whole grant when a rotated refresh token comes back
 * (decisions.md "OAuth", RFC 9700 §4.14.2): two tabs that refresh at once must not both present it.
 */
describeEachDatabase('the SDK refreshing in several tabs at once', (env) => {
  it('two tabs whose access token expired together both get a working token, and the grant survives', async () => {
    const user = await env.createUser();
    const redirectUri = 'http://127.0.0.1:9/tabs/callback';
    const app = await registerTestApp(env, { scopes: ['read', 'offline_access'], redirectUris: [redirectUri] });
    // The tabs' shared localStorage; each tab has its own sessionStorage and its own clock reading.
    const localStorage: TollgateStorage = memoryStorage();
    let now = Date.now();
    let navigatedTo = '';
    const tab = () =>
      createTollgateClient({
        baseUrl: env.baseUrl,
        clientId: app.clientId,
        redirectUri,
        scopes: ['read', 'offline_access'],
        storage: localStorage,
        transientStorage: memoryStorage(),
        navigate: (url) => void (navigatedTo = url),
        now: () => now,
      });
    const first = tab();
    const second = tab();

    await first.signIn();
    const outcome = await runAuthorization(
      env,
      new TestBrowser(),
      { app, scopes: ['read', 'offline_access'], state: '', codeVerifier: '', url: new URL(navigatedTo) },
      { user },
    );
    assert.equal(outcome.kind, 'callback');
    const signedIn = await first.handleRedirect(outcome.url.toString());
    assert.ok(signedIn?.refreshToken, 'offline_access brought a refresh token');
    assert.ok(second.isSignedIn(), 'the second tab sees the same tokens');

    // An hour later both tabs wake up (a restored browser session) and call the gateway at the same moment.
    now += 3600_000;
    const [a, b] = await Promise.all([first.getAccessToken(), second.getAccessToken()]);
    assert.ok(a, 'the first tab has a token');
    assert.ok(b, 'the second tab has a token');
    assert.equal(a, b, 'one refresh served both tabs');
    for (const [name, client] of [
      ['first', first],
      ['second', second],
    ] as const) {
      assert.equal((await client.getUser()).id, user.userId, `the ${name} tab's calls still work`);
    }
    const me = await env.request('GET', '/api/user/me', { token: a });
    assert.equal(me.status, 200, 'the grant was not revoked as a refresh-token reuse');
  });
});
