import { it } from 'node:test';
import assert from 'node:assert/strict';
import * as oauth from 'oauth4webapi';
import { describeEachDatabase, request, startServeProcess } from '../testing/harness.ts';
import { authorizeForTest, discover } from './testing.ts';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describeEachDatabase('oauth storage', (env) => {
  it('every artefact of a flow is a database row: session, grant, consumed code, access and refresh tokens', async () => {
    const { user, clientId } = await authorizeForTest(env, { scopes: ['read', 'offline_access'] });
    const rows = await env.service.ctx.db.selectFrom('oidc_payloads').select(['model', 'consumed_at', 'account_id', 'client_id']).where('account_id', '=', user.userId).execute();
    const models = new Set(rows.map((row) => row.model));
    for (const model of ['Session', 'Grant', 'AuthorizationCode', 'AccessToken', 'RefreshToken']) assert.ok(models.has(model), `${model} is stored`);
    const code = rows.find((row) => row.model === 'AuthorizationCode')!;
    assert.notEqual(code.consumed_at, null, 'the used code is kept, marked consumed, so a replay is recognised');
    assert.ok(rows.filter((row) => row.model !== 'Session').every((row) => row.client_id === clientId));
  });

  it('the oauth-expired job deletes rows whose time is up, and only those', async () => {
    const db = env.service.ctx.db;
    const base = { payload: '{}', grant_id: null, user_code: null, uid: null, consumed_at: null, account_id: null, client_id: null };
    await db.insertInto('oidc_payloads').values([
      { ...base, id: 'expired-one', model: 'AccessToken', expires_at: Date.now() - 3_600_000 },
      { ...base, id: 'still-live', model: 'AccessToken', expires_at: Date.now() + 3_600_000 },
    ]).execute();
    const run = await env.admin('POST', '/api/admin/cron/oauth-expired');
    assert.equal(run.status, 200);
    assert.ok(run.body.result.deleted >= 1);
    const left = await db.selectFrom('oidc_payloads').select('id').where('id', 'in', ['expired-one', 'still-live']).execute();
    assert.deepEqual(left.map((row) => row.id), ['still-live']);
  });
});

describeEachDatabase('oauth revocation across processes', (env) => {
  it('a token revoked in one process is refused by another that had it cached', async (t) => {
    if (env.kind !== 'postgres') return t.skip('needs a database two processes share');
    const child = await startServeProcess(env, { REDIS_URL });
    t.after(() => child.stop());
    const { app, accessToken } = await authorizeForTest(env, { scopes: ['read'] });
    assert.equal((await request(child.baseUrl, 'GET', '/api/user/me', { token: accessToken })).status, 200);

    const as = await discover(env);
    await oauth.processRevocationResponse(await oauth.revocationRequest(as, { client_id: app.clientId }, oauth.None(), accessToken, { [oauth.allowInsecureRequests]: true }));
    // Pub/sub delivery is asynchronous: allow it a moment, far less than the 30 s the cache would keep it.
    let status = 0;
    for (let attempt = 0; attempt < 40 && status !== 401; attempt++) {
      if (attempt) await new Promise((resolve) => setTimeout(resolve, 25));
      status = (await request(child.baseUrl, 'GET', '/api/user/me', { token: accessToken })).status;
    }
    assert.equal(status, 401);
  });
}, { config: { REDIS_URL } });
