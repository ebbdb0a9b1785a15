import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { MAX_APPS_PER_OWNER } from './clients.ts';
import { authorizeForTest } from './testing.ts';

const newApp = (n: number) => ({
  name: `App ${n}`,
  redirectUris: [`https://app-${n}.example.com/callback`],
  scopes: ['read', 'ai:chat'],
  type: 'public',
});

describeEachDatabase(
  'apps registered from the dashboard are bounded per user, and their owner can delete them',
  (env) => {
    it('a user registers at most MAX_APPS_PER_OWNER apps (400 beyond, nothing stored); deleting one makes room', async () => {
      const owner = await env.createUser();
      const created: string[] = [];
      for (let n = 0; n < MAX_APPS_PER_OWNER; n++) {
        const response = await env.dashboard(owner, 'POST', '/api/user/apps', newApp(n));
        assert.equal(response.status, 201, response.text);
        created.push(response.body.clientId);
      }
      const refused = await env.dashboard(owner, 'POST', '/api/user/apps', newApp(99));
      assert.equal(refused.status, 400, refused.text);
      assert.equal(refused.body.error.code, 'INVALID_REQUEST');
      assert.match(refused.body.error.message, new RegExp(`At most ${MAX_APPS_PER_OWNER} apps`));
      const stored = await env.db
        .selectFrom('oauth_clients')
        .select('client_id')
        .where('owner_user_id', '=', owner.userId)
        .execute();
      assert.equal(stored.length, MAX_APPS_PER_OWNER);

      // Another user's count is their own, and the operator's apps are not counted against anyone.
      const other = await env.createUser();
      assert.equal((await env.dashboard(other, 'POST', '/api/user/apps', newApp(1))).status, 201);
      assert.equal((await env.admin('POST', '/api/admin/apps', newApp(2))).status, 201);

      const deleted = await env.dashboard(owner, 'DELETE', `/api/user/apps/${created[0]}`);
      assert.equal(deleted.status, 200, deleted.text);
      assert.deepEqual(deleted.body, { success: true });
      assert.equal((await env.dashboard(owner, 'POST', '/api/user/apps', newApp(100))).status, 201);
    });

    it("deleting an app ends its users' tokens; another user's app, an operator's app or an app token's call is refused", async () => {
      const owner = await env.createUser();
      const registered = await env.dashboard(owner, 'POST', '/api/user/apps', {
        ...newApp(1),
        redirectUris: ['http://127.0.0.1:9/callback'],
      });
      assert.equal(registered.status, 201, registered.text);
      const clientId = registered.body.clientId;
      const consenting = await env.createUser();
      const { accessToken } = await authorizeForTest(env, {
        user: consenting,
        app: {
          clientId,
          redirectUri: 'http://127.0.0.1:9/callback',
          scopes: ['read', 'ai:chat'],
          type: 'public',
        },
        scopes: ['read'],
      });
      assert.equal((await env.request('GET', '/api/user/me', { token: accessToken })).status, 200);

      const stranger = await env.createUser();
      assert.equal((await env.dashboard(stranger, 'DELETE', `/api/user/apps/${clientId}`)).status, 404);
      assert.equal((await env.dashboard(consenting, 'DELETE', `/api/user/apps/${clientId}`)).status, 404);
      const operators = await env.admin('POST', '/api/admin/apps', newApp(3));
      assert.equal((await env.dashboard(owner, 'DELETE', `/api/user/apps/${operators.body.clientId}`)).status, 404);
      assert.equal(
        (await env.request('DELETE', `/api/user/apps/${clientId}`, { token: accessToken })).status,
        403,
        "an app's token may not manage apps",
      );
      assert.equal(
        (await env.request('DELETE', `/api/user/apps/${clientId}`, { headers: { cookie: owner.cookie } })).status,
        403,
        'a dashboard write needs its CSRF header',
      );
      assert.equal((await env.request('GET', '/api/user/me', { token: accessToken })).status, 200);

      assert.equal((await env.dashboard(owner, 'DELETE', `/api/user/apps/${clientId}`)).status, 200);
      assert.equal((await env.request('GET', '/api/user/me', { token: accessToken })).status, 401);
      assert.deepEqual((await env.dashboard(owner, 'GET', '/api/user/apps')).body.apps, []);
      assert.equal((await env.dashboard(owner, 'DELETE', `/api/user/apps/${clientId}`)).status, 404);
    });
  },
);
