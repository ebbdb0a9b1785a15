import { it } from 'node:test';
import assert from 'node:assert/strict';
import * as oauth from 'oauth4webapi';
import { describeEachDatabase } from '../testing/harness.ts';
import { authorizeForTest, discover } from './testing.ts';

const insecure = { [oauth.allowInsecureRequests]: true };
const newApp = {
  name: 'Notes',
  redirectUris: ['https://notes.example.com/callback'],
  scopes: ['read', 'ai:chat'],
  type: 'public',
};

describeEachDatabase('oauth apps and authorizations', (env) => {
  it('the operator registers public and confidential apps; only a confidential one gets a secret, shown once', async () => {
    const pub = await env.admin('POST', '/api/admin/apps', newApp);
    assert.equal(pub.status, 201);
    assert.match(pub.body.clientId, /^app_/);
    assert.equal(pub.body.clientSecret, undefined);

    const conf = await env.admin('POST', '/api/admin/apps', { ...newApp, type: 'confidential' });
    assert.equal(conf.status, 201);
    assert.match(conf.body.clientSecret, /^tgs_[\w-]{43}$/);
    const row = await env.db
      .selectFrom('oauth_clients')
      .selectAll()
      .where('client_id', '=', conf.body.clientId)
      .executeTakeFirstOrThrow();
    assert.equal(row.type, 'confidential');
    assert.ok(!JSON.stringify(row).includes(conf.body.clientSecret));
  });

  it('answers that carry a secret (an app’s client secret, API key values) say Cache-Control: no-store', async () => {
    const owner = await env.createUser();
    const { accessToken } = await authorizeForTest(env, {
      user: owner,
      scopes: ['apikeys:read', 'apikeys:write', 'ai:models'],
    });
    const answers = {
      'operator registers an app': await env.admin('POST', '/api/admin/apps', { ...newApp, type: 'confidential' }),
      'user registers an app': await env.dashboard(owner, 'POST', '/api/user/apps', {
        ...newApp,
        type: 'confidential',
      }),
      'app creates a key': await env.request('POST', '/api/user/api-keys', {
        token: accessToken,
        body: { name: 'k', permissions: ['ai:models'] },
      }),
      'app lists its keys': await env.request('GET', '/api/user/api-keys', { token: accessToken }),
      'dashboard lists keys': await env.dashboard(owner, 'GET', '/api/user/api-keys'),
    };
    for (const [what, answer] of Object.entries(answers)) {
      assert.ok(answer.status < 300, `${what}: ${answer.status} ${answer.text}`);
      assert.equal(answer.headers.get('cache-control'), 'no-store', what);
    }
  });

  it('app registration refuses unknown scopes and unsafe redirect URIs with 400, and user credentials with 401', async () => {
    for (const body of [
      { ...newApp, scopes: ['read', 'admin'] },
      { ...newApp, redirectUris: ['http://notes.example.com/callback'] },
      { ...newApp, redirectUris: ['https://notes.example.com/callback#x'] },
      { ...newApp, redirectUris: ['not a url'] },
      { ...newApp, redirectUris: [] },
      { ...newApp, type: 'other' },
    ]) {
      const response = await env.admin('POST', '/api/admin/apps', body);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(response.body.error.code, 'INVALID_REQUEST');
    }
    const loopback = await env.admin('POST', '/api/admin/apps', {
      ...newApp,
      redirectUris: ['http://127.0.0.1:8080/cb', 'http://localhost/cb', 'http://[::1]:9/cb'],
    });
    assert.equal(loopback.status, 201);
    const session = await env.createUser();
    assert.equal((await env.dashboard(session, 'POST', '/api/admin/apps', newApp)).status, 401);
  });

  it('an app name with a right-to-left override or a control character is refused: on the consent page it reversed the sentence around it', async () => {
    const user = await env.createUser();
    for (const name of [
      '\u202eppA setoN',
      'Notes\u2067 official',
      'Notes\u200f',
      'Notes\nby Tollgate',
      'Notes\u0007',
    ]) {
      const refused = await env.dashboard(user, 'POST', '/api/user/apps', { ...newApp, name });
      assert.equal(refused.status, 400, JSON.stringify(name));
      assert.equal(refused.body.error.code, 'INVALID_REQUEST');
      assert.match(refused.body.error.message, /bidirectional/);
    }
    assert.equal((await env.admin('POST', '/api/admin/apps', { ...newApp, name: '\u202eppA setoN' })).status, 400);
    // Other scripts, accents and emoji (a ZWJ sequence included) stay allowed.
    for (const name of ['ملاحظات', 'Nötes 📝', 'Family 👨‍👩‍👧']) {
      assert.equal((await env.dashboard(user, 'POST', '/api/user/apps', { ...newApp, name })).status, 201, name);
    }
  });

  it('a dashboard user registers and lists their own apps; an app token may not', async () => {
    const owner = await env.createUser();
    const other = await env.createUser();
    const created = await env.dashboard(owner, 'POST', '/api/user/apps', { ...newApp, type: 'confidential' });
    assert.equal(created.status, 201);
    assert.ok(created.body.clientSecret);

    const listed = await env.dashboard(owner, 'GET', '/api/user/apps');
    assert.equal(listed.status, 200);
    assert.deepEqual(
      listed.body.apps.map((a: any) => a.clientId),
      [created.body.clientId],
    );
    assert.deepEqual(listed.body.apps[0].redirectUris, newApp.redirectUris);
    assert.equal(listed.body.apps[0].clientSecret, undefined);
    assert.deepEqual((await env.dashboard(other, 'GET', '/api/user/apps')).body.apps, []);

    const { accessToken } = await authorizeForTest(env, { user: owner });
    assert.equal((await env.request('GET', '/api/user/apps', { token: accessToken })).status, 403);
    assert.equal((await env.request('POST', '/api/user/apps', { token: accessToken, body: newApp })).status, 403);
  });

  it('revoking an app from the dashboard kills its access and refresh tokens at once; a new consent restores access', async () => {
    const user = await env.createUser();
    const first = await authorizeForTest(env, { user, scopes: ['read', 'offline_access'], dailyLimit: 3 });
    assert.equal((await env.request('GET', '/api/user/me', { token: first.accessToken })).status, 200);

    assert.equal(
      (await env.request('DELETE', `/api/user/authorized-apps/${first.clientId}`, { token: first.accessToken })).status,
      403,
      'an app cannot revoke apps',
    );
    const revoked = await env.dashboard(user, 'DELETE', `/api/user/authorized-apps/${first.clientId}`);
    assert.equal(revoked.status, 200);
    assert.deepEqual(revoked.body, { success: true });

    assert.equal((await env.request('GET', '/api/user/me', { token: first.accessToken })).status, 401);
    const as = await discover(env);
    const refresh = await oauth.refreshTokenGrantRequest(
      as,
      { client_id: first.clientId },
      oauth.None(),
      first.refreshToken!,
      insecure,
    );
    assert.equal(refresh.status, 400);
    const db = env.db;
    const row = await db
      .selectFrom('authorized_apps')
      .selectAll()
      .where('user_id', '=', user.userId)
      .where('client_id', '=', first.clientId)
      .executeTakeFirstOrThrow();
    assert.notEqual(row.revoked_at, null);
    const left = await db
      .selectFrom('oidc_payloads')
      .select('model')
      .where('account_id', '=', user.userId)
      .where('client_id', '=', first.clientId)
      .execute();
    assert.deepEqual(left, []);

    const again = await authorizeForTest(env, { user, app: first.app, scopes: ['read'] });
    assert.equal((await env.request('GET', '/api/user/me', { token: again.accessToken })).status, 200);
    const renewed = await db
      .selectFrom('authorized_apps')
      .selectAll()
      .where('user_id', '=', user.userId)
      .where('client_id', '=', first.clientId)
      .executeTakeFirstOrThrow();
    assert.equal(renewed.revoked_at, null);
  });

  it('revoking an app the user never authorized, or another user’s, is a 404', async () => {
    const owner = await env.createUser();
    const stranger = await env.createUser();
    const { clientId } = await authorizeForTest(env, { user: owner, scopes: ['read'] });
    assert.equal((await env.dashboard(stranger, 'DELETE', `/api/user/authorized-apps/${clientId}`)).status, 404);
    assert.equal((await env.dashboard(owner, 'DELETE', '/api/user/authorized-apps/app_doesnotexist')).status, 404);
  });

  it('using a token records when the app was last used', async () => {
    const user = await env.createUser();
    const { accessToken, clientId } = await authorizeForTest(env, { user, scopes: ['read'] });
    assert.equal((await env.request('GET', '/api/user/me', { token: accessToken })).status, 200);
    await env.service.ctx.oauth.settled();
    const row = await env.db
      .selectFrom('authorized_apps')
      .select('last_used_at')
      .where('user_id', '=', user.userId)
      .where('client_id', '=', clientId)
      .executeTakeFirstOrThrow();
    assert.notEqual(row.last_used_at, null);
  });
});
