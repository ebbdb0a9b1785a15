import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { ensureWebBuilt } from './browser.ts';
import { DEMO_CLIENT_ID, DEMO_SCOPES } from './demo-client.ts';

before(() => ensureWebBuilt());

describeEachDatabase('the gateway serves the dashboard, the demo app and the SDK bundle', (env) => {
  test('the dashboard page is never cached and its fingerprinted assets are cached for good', async () => {
    const page = await env.request('GET', '/');
    assert.equal(page.status, 200);
    assert.match(page.headers.get('content-type')!, /text\/html/);
    assert.equal(page.headers.get('cache-control'), 'no-cache');
    const script = /src="(\/assets\/[^"]+\.js)"/.exec(page.text)?.[1];
    assert.ok(script, 'the page loads its bundle from /assets/');
    const asset = await env.request('GET', script);
    assert.equal(asset.status, 200);
    assert.match(asset.headers.get('cache-control')!, /immutable/);
    assert.equal((await env.request('GET', '/assets/nope.js')).status, 404);
  });

  test('/demo redirects to /demo/ keeping the query; the demo page and the SDK bundle are served', async () => {
    const redirect = await env.request('GET', '/demo?client_id=app_x');
    assert.equal(redirect.status, 308);
    assert.equal(redirect.headers.get('location'), '/demo/?client_id=app_x');
    const page = await env.request('GET', '/demo/');
    assert.equal(page.status, 200);
    assert.match(page.text, /<tollgate-restriction-dialog>/);
    assert.match(page.text, /src="\/demo\/assets\/[^"]+\.js"/);
    const sdk = await env.request('GET', '/sdk/tollgate-sdk.js');
    assert.equal(sdk.status, 200);
    assert.match(sdk.text, /export/);
  });

  test('the demo config registers its public OAuth client once, with this deployment’s /demo/ redirect URI', async () => {
    const first = await env.request('GET', '/demo/config.json');
    assert.equal(first.status, 200);
    assert.deepEqual(first.body, {
      clientId: DEMO_CLIENT_ID,
      baseUrl: env.baseUrl,
      redirectUri: `${env.baseUrl}/demo/`,
    });
    await env.request('GET', '/demo/config.json');
    const rows = await env.db.selectFrom('oauth_clients').selectAll().where('client_id', '=', DEMO_CLIENT_ID).execute();
    assert.equal(rows.length, 1);
    assert.equal(rows[0].type, 'public');
    assert.equal(rows[0].client_secret_hash, null);
    assert.deepEqual(JSON.parse(rows[0].redirect_uris), [`${env.baseUrl}/demo/`]);
    assert.equal(rows[0].scopes, DEMO_SCOPES.join(' '));
    // The authorize endpoint accepts the client with that redirect (it answers with the sign-in interaction, not an error).
    const authorize = await env.request(
      'GET',
      `/api/oauth/authorize?${new URLSearchParams({
        response_type: 'code',
        client_id: DEMO_CLIENT_ID,
        redirect_uri: `${env.baseUrl}/demo/`,
        scope: DEMO_SCOPES.join(' '),
        code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
        code_challenge_method: 'S256',
        state: 'xyz',
      })}`,
    );
    assert.equal(authorize.status, 303, authorize.text);
    assert.doesNotMatch(authorize.headers.get('location')!, /error=/);
  });
});
