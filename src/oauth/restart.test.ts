import { it } from 'node:test';
import assert from 'node:assert/strict';
import * as oauth from 'oauth4webapi';
import { describeEachDatabase, request } from '../testing/harness.ts';
import { createService } from '../service.ts';
import {
  authorizeForTest,
  discover,
  registerTestApp,
  runAuthorization,
  authorizationRequest,
  TestBrowser,
} from './testing.ts';

describeEachDatabase('oauth state survives a restart', (env) => {
  it('after a restart on the same database, tokens, refresh tokens, signing keys and half-done authorizations still work', async () => {
    const user = await env.createUser();
    const { accessToken, refreshToken, app } = await authorizeForTest(env, {
      user,
      scopes: ['read', 'offline_access'],
    });
    const jwksBefore = (await env.request('GET', '/api/oauth/jwks')).body;
    // An authorization the user is in the middle of: the consent page is open when the server restarts.
    const pending = await authorizationRequest(env, await registerTestApp(env, { scopes: ['read'] }), ['read']);
    const browser = new TestBrowser();
    const first = await browser.fetch(pending.url);
    await first.body?.cancel();

    // A restart: the first process stops, a new one starts on the same database and the same address.
    const port = Number(new URL(env.baseUrl).port);
    await env.service.close();
    env.service = await createService({ config: env.config(), clock: env.clock, timers: false });
    assert.equal(await env.service.listen(port), env.baseUrl);

    assert.equal((await request(env.baseUrl, 'GET', '/api/user/me', { token: accessToken })).body.id, user.userId);
    assert.deepEqual((await env.request('GET', '/api/oauth/jwks')).body, jwksBefore);

    const as = await discover(env);
    const client = { client_id: app.clientId };
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshToken!, {
        [oauth.allowInsecureRequests]: true,
      }),
    );
    assert.equal((await env.request('GET', '/api/user/me', { token: refreshed.access_token })).status, 200);

    // The interaction and its cookies were made by the first process; the new one carries it on (same
    // cookie keys, stored interaction).
    const interaction = new URL(first.headers.get('location')!, env.baseUrl);
    const resumedRequest = { ...pending, url: interaction };
    const outcome = await runAuthorization(env, browser, resumedRequest, { user });
    assert.equal(outcome.kind, 'callback');
    assert.ok((outcome as { url: URL }).url.searchParams.get('code'));
  });
});
