import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, request, startServeProcess, type TestEnv } from '../testing/harness.ts';
import { authorizeForTest } from '../oauth/testing.ts';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** An app authorized by a new dashboard user, and an API key the app created with its token. */
async function appWithKey(env: TestEnv) {
  const user = await env.createUser();
  const authorization = await authorizeForTest(env, { user });
  const created = await env.request('POST', '/api/user/api-keys', {
    token: authorization.accessToken,
    body: { name: 'minted by the app', permissions: ['ai:models'] },
  });
  assert.equal(created.status, 200, created.text);
  return {
    user,
    app: authorization.app,
    clientId: authorization.clientId,
    accessToken: authorization.accessToken,
    key: created.body.apiKey.key as string,
    keyId: created.body.apiKey.id as string,
  };
}

/** Asks `baseUrl` with the key until it answers `status`, for up to ~1 s (a bus message crossing Redis). */
async function eventually(baseUrl: string, key: string, status: number): Promise<number> {
  let seen = 0;
  for (let attempt = 0; attempt < 50; attempt++) {
    seen = (await request(baseUrl, 'GET', '/api/v1/models', { token: key })).status;
    if (seen === status) return seen;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  return seen;
}

describeEachDatabase('revoking an app revokes the keys it minted (hole 2)', (env) => {
  it('hole 2: revoking an app from the dashboard stops the keys it minted at once, and a new consent does not bring them back', async () => {
    const { user, app, clientId, key, keyId } = await appWithKey(env);
    assert.equal(
      (await env.request('GET', '/api/v1/models', { token: key })).status,
      200,
      'the key works (and is now cached)',
    );
    const dashboardKey = await env.dashboard(user, 'POST', '/api/user/api-keys', {
      name: 'mine',
      permissions: ['ai:models'],
    });

    assert.equal((await env.dashboard(user, 'DELETE', `/api/user/authorized-apps/${clientId}`)).status, 200);
    assert.equal(
      (await env.request('GET', '/api/v1/models', { token: key })).status,
      401,
      "the app's key is refused on the next call",
    );
    const listed = await env.dashboard(user, 'GET', '/api/user/api-keys');
    assert.deepEqual(
      listed.body.apiKeys.map((k: { id: string }) => k.id),
      [dashboardKey.body.apiKey.id],
      "the revoked key leaves the list; the user's own key stays",
    );
    assert.equal(
      (await env.request('GET', '/api/v1/models', { token: dashboardKey.body.apiKey.key })).status,
      200,
      'keys the app did not mint keep working',
    );

    // The user authorizes the app again: its old key stays revoked.
    await authorizeForTest(env, { user, app });
    assert.equal((await env.request('GET', '/api/v1/models', { token: key })).status, 401);
    const row = await env.db
      .selectFrom('api_keys')
      .select('revoked_at')
      .where('id', '=', keyId)
      .executeTakeFirstOrThrow();
    assert.notEqual(row.revoked_at, null);
  });

  it("revoking one user's authorization leaves the keys the same app minted for other users working", async () => {
    const first = await appWithKey(env);
    const otherUser = await env.createUser();
    const other = await authorizeForTest(env, { user: otherUser });
    const otherKey = await env.request('POST', '/api/user/api-keys', {
      token: other.accessToken,
      body: { name: 'other', permissions: ['ai:models'] },
    });
    assert.equal(
      (await env.dashboard(first.user, 'DELETE', `/api/user/authorized-apps/${first.clientId}`)).status,
      200,
    );
    assert.equal((await env.request('GET', '/api/v1/models', { token: first.key })).status, 401);
    assert.equal((await env.request('GET', '/api/v1/models', { token: otherKey.body.apiKey.key })).status, 200);
  });

  it('a key an app minted is refused once its authorization is revoked, even if the key itself was not', async () => {
    const { user, clientId, key } = await appWithKey(env);
    // The revocation's first step only (as if the process died before revoking the keys).
    await env.db
      .updateTable('authorized_apps')
      .set({ revoked_at: env.service.ctx.clock.now() })
      .where('user_id', '=', user.userId)
      .where('client_id', '=', clientId)
      .execute();
    env.service.ctx.keys.forget(
      (await env.db.selectFrom('api_keys').select('id').where('app_id', '=', clientId).executeTakeFirstOrThrow()).id,
    );
    assert.equal((await env.request('GET', '/api/v1/models', { token: key })).status, 401);
  });

  it('the operator deleting an app stops its tokens and every key it minted, for every user', async () => {
    const first = await appWithKey(env);
    const second = await authorizeForTest(env, { app: first.app });
    const secondKey = await env.request('POST', '/api/user/api-keys', {
      token: second.accessToken,
      body: { name: 'second', permissions: ['ai:models'] },
    });
    assert.equal(secondKey.status, 200, secondKey.text);
    for (const token of [first.key, secondKey.body.apiKey.key, first.accessToken])
      assert.equal((await env.request('GET', '/api/v1/models', { token })).status, 200);

    assert.equal((await env.admin('DELETE', `/api/admin/apps/${first.clientId}`)).status, 200);
    for (const token of [first.key, secondKey.body.apiKey.key, first.accessToken, second.accessToken])
      assert.equal((await env.request('GET', '/api/v1/models', { token })).status, 401);
    assert.equal((await env.admin('DELETE', `/api/admin/apps/${first.clientId}`)).status, 404);
    const session = await env.createUser();
    assert.equal(
      (await env.dashboard(session, 'DELETE', `/api/admin/apps/${first.clientId}`)).status,
      401,
      'an operator route',
    );
  });
});

describeEachDatabase(
  'revoking an app across instances',
  (env) => {
    it('a key an app minted, cached by a second instance, is refused there as soon as the user revokes the app through the first', async () => {
      const other = await startServeProcess(env, { REDIS_URL });
      try {
        const { user, clientId, key } = await appWithKey(env);
        assert.equal(
          (await request(other.baseUrl, 'GET', '/api/v1/models', { token: key })).status,
          200,
          'the other instance knows the key (and now caches it)',
        );
        assert.equal((await env.dashboard(user, 'DELETE', `/api/user/authorized-apps/${clientId}`)).status, 200);
        // Far below the 10-second key cache lifetime that would otherwise end it.
        assert.equal(await eventually(other.baseUrl, key, 401), 401);
      } finally {
        await other.stop();
      }
    });
  },
  { config: { REDIS_URL } },
);
