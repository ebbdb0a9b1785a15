import { it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { sql } from 'kysely';
import * as oauth from 'oauth4webapi';
import { describeEachDatabase, request, startServeProcess, type TestEnv } from '../testing/harness.ts';
import { sha256Hex } from '../platform/crypto.ts';
import { allMigrations } from '../features.ts';
import { createAdapterFactory } from './adapter.ts';
import {
  authorizationRequest,
  authorizeForTest,
  discover,
  exchangeCode,
  registerTestApp,
  runAuthorization,
  TestBrowser,
} from './testing.ts';

const insecure = { [oauth.allowInsecureRequests]: true } as const;

/**
 * Everything the database holds, as one string to search: on SQLite the raw bytes of the database file and
 * its WAL (what a copied data folder gives away, deleted pages included); on PostgreSQL every stored row.
 */
async function databaseContents(env: TestEnv): Promise<string> {
  if (env.kind === 'sqlite') {
    const dir = env.space.dataDir;
    return readdirSync(dir)
      .filter((name) => name.startsWith('tollgate.db'))
      .map((name) => readFileSync(join(dir, name)).toString('latin1'))
      .join('\n');
  }
  const rows = await sql<{ row: string }>`select row_to_json(p)::text as row from oidc_payloads p`.execute(env.db);
  return rows.rows.map((r) => r.row).join('\n');
}

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describeEachDatabase('oauth storage', (env) => {
  it('the database holds no issued code, access token or refresh token, and each still works', async () => {
    const user = await env.createUser();
    const app = await registerTestApp(env, { scopes: ['read', 'offline_access'] });
    const authorization = await authorizationRequest(env, app, ['read', 'offline_access']);
    const outcome = await runAuthorization(env, new TestBrowser(), authorization, { user });
    assert.equal(outcome.kind, 'callback');
    const code = (outcome as { url: URL }).url.searchParams.get('code')!;
    const tokens = await exchangeCode(env, authorization, (outcome as { url: URL }).url);
    const as = await discover(env);
    const client = { client_id: app.clientId };
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure),
    );

    const issued = {
      code,
      accessToken: tokens.access_token,
      refreshToken: tokens.refresh_token!,
      refreshedAccessToken: refreshed.access_token,
      rotatedRefreshToken: refreshed.refresh_token!,
    };
    const contents = await databaseContents(env);
    assert.ok(contents.includes(app.clientId), 'the search does see what the database holds');
    for (const [name, value] of Object.entries(issued)) {
      assert.ok(value.length >= 20, `${name} was issued`);
      assert.equal(contents.includes(value), false, `${name} is not in the database`);
    }

    const introspected = await oauth.processIntrospectionResponse(
      as,
      client,
      await oauth.introspectionRequest(as, client, oauth.None(), refreshed.access_token, insecure),
    );
    assert.equal(introspected.active, true);
    assert.equal((await env.request('GET', '/api/user/me', { token: refreshed.access_token })).status, 200);
    const replayed = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), tokens.refresh_token!, insecure);
    assert.equal(replayed.status, 400, 'the first refresh token was consumed');
    // The replay revoked the grant: every token under it is gone (found by grant id, not by token).
    assert.equal((await env.request('GET', '/api/user/me', { token: refreshed.access_token })).status, 401);
    const after = await oauth.refreshTokenGrantRequest(as, client, oauth.None(), refreshed.refresh_token!, insecure);
    assert.equal(after.status, 400);
  });

  it('an upgrade hashes the ids of rows stored in clear, and their tokens keep working', async () => {
    const db = env.db;
    const authorization = await authorizeForTest(env, { scopes: ['read', 'offline_access'] });
    // Put the rows back the way earlier versions stored them: the token as the id and as the payload's jti.
    for (const [model, token] of [
      ['AccessToken', authorization.accessToken],
      ['RefreshToken', authorization.refreshToken!],
    ] as const) {
      const row = await db
        .selectFrom('oidc_payloads')
        .select('payload')
        .where('model', '=', model)
        .where('id', '=', sha256Hex(token))
        .executeTakeFirstOrThrow();
      await db
        .updateTable('oidc_payloads')
        .set({ id: token, payload: JSON.stringify({ ...JSON.parse(row.payload), jti: token }) })
        .where('model', '=', model)
        .where('id', '=', sha256Hex(token))
        .execute();
    }
    assert.equal(
      (await databaseContents(env)).includes(authorization.accessToken),
      true,
      'the legacy rows are in place',
    );

    // The upgrade's own migration, run as the migrator would: later migrations (other features', 1630+) are applied
    // already, and Kysely refuses to apply one that sorts before an applied one, so it is not re-run through it.
    await allMigrations()['1500_oidc_payload_ids_hashed'].up(db);
    const contents = await databaseContents(env);
    if (env.kind === 'postgres') {
      assert.equal(contents.includes(authorization.accessToken), false);
      assert.equal(contents.includes(authorization.refreshToken!), false);
    }
    const left = await db
      .selectFrom('oidc_payloads')
      .select('id')
      .where('id', 'in', [authorization.accessToken, authorization.refreshToken!])
      .execute();
    assert.deepEqual(left, [], 'no row is keyed by a token any more');
    assert.equal((await env.request('GET', '/api/user/me', { token: authorization.accessToken })).status, 200);
    const as = await discover(env);
    const client = { client_id: authorization.clientId };
    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, oauth.None(), authorization.refreshToken!, insecure),
    );
    assert.equal((await env.request('GET', '/api/user/me', { token: refreshed.access_token })).status, 200);
  });

  it('a session found by uid keeps working although its id is stored only hashed: it saves and destroys its own row', async () => {
    const adapter = createAdapterFactory(env.service.ctx.db, () => {})('Session');
    const cookie = `session-cookie-${Date.now()}-abcdefghijklmnopqrstuvwxyz`;
    const uid = `uid-${Date.now()}`;
    await adapter.upsert(cookie, { jti: cookie, uid, accountId: 'usr_someone', kind: 'Session' }, 3600);
    assert.equal((await adapter.find(cookie))?.jti, cookie, 'found by its cookie, with its id');
    assert.equal((await databaseContents(env)).includes(cookie), false, 'the cookie is not stored');

    const byUid = await adapter.findByUid(uid);
    assert.equal(byUid?.accountId, 'usr_someone');
    assert.notEqual(byUid!.jti, cookie);
    await adapter.upsert(byUid!.jti!, { ...byUid!, accountId: 'usr_changed' }, 3600);
    assert.equal(
      (await adapter.find(cookie))?.accountId,
      'usr_changed',
      'saving through the uid-found session updates the same row',
    );
    await adapter.destroy(byUid!.jti!);
    assert.equal(await adapter.find(cookie), undefined, 'destroying it ends the session');
    // The handle is this process's own: the stored hash sent as a cookie names nothing.
    await adapter.upsert(cookie, { jti: cookie, uid, kind: 'Session' }, 3600);
    assert.equal(await adapter.find(sha256Hex(cookie)), undefined);
  });

  it('a revoked access token stops working, with its grant', async () => {
    const authorization = await authorizeForTest(env, { scopes: ['read', 'offline_access'] });
    const as = await discover(env);
    const client = { client_id: authorization.clientId };
    assert.equal((await env.request('GET', '/api/user/me', { token: authorization.accessToken })).status, 200);
    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, oauth.None(), authorization.accessToken, insecure),
    );
    assert.equal((await env.request('GET', '/api/user/me', { token: authorization.accessToken })).status, 401);
    const introspected = await oauth.processIntrospectionResponse(
      as,
      client,
      await oauth.introspectionRequest(as, client, oauth.None(), authorization.accessToken, insecure),
    );
    assert.equal(introspected.active, false);
    assert.equal(
      (await oauth.refreshTokenGrantRequest(as, client, oauth.None(), authorization.refreshToken!, insecure)).status,
      400,
    );
  });

  it('every artefact of a flow is a database row: session, grant, consumed code, access and refresh tokens', async () => {
    const { user, clientId } = await authorizeForTest(env, { scopes: ['read', 'offline_access'] });
    const rows = await env.db
      .selectFrom('oidc_payloads')
      .select(['model', 'consumed_at', 'account_id', 'client_id'])
      .where('account_id', '=', user.userId)
      .execute();
    const models = new Set(rows.map((row) => row.model));
    for (const model of ['Session', 'Grant', 'AuthorizationCode', 'AccessToken', 'RefreshToken'])
      assert.ok(models.has(model), `${model} is stored`);
    const code = rows.find((row) => row.model === 'AuthorizationCode')!;
    assert.notEqual(code.consumed_at, null, 'the used code is kept, marked consumed, so a replay is recognised');
    assert.ok(rows.filter((row) => row.model !== 'Session').every((row) => row.client_id === clientId));
  });

  it('the oauth-expired job deletes rows whose time is up, and only those', async () => {
    const db = env.db;
    const base = {
      payload: '{}',
      grant_id: null,
      user_code: null,
      uid: null,
      consumed_at: null,
      account_id: null,
      client_id: null,
    };
    await db
      .insertInto('oidc_payloads')
      .values([
        { ...base, id: 'expired-one', model: 'AccessToken', expires_at: Date.now() - 3_600_000 },
        { ...base, id: 'still-live', model: 'AccessToken', expires_at: Date.now() + 3_600_000 },
      ])
      .execute();
    const run = await env.admin('POST', '/api/admin/cron/oauth-expired');
    assert.equal(run.status, 200);
    assert.ok(run.body.result.deleted >= 1);
    const left = await db
      .selectFrom('oidc_payloads')
      .select('id')
      .where('id', 'in', ['expired-one', 'still-live'])
      .execute();
    assert.deepEqual(
      left.map((row) => row.id),
      ['still-live'],
    );
  });
});

describeEachDatabase(
  'oauth revocation across processes',
  (env) => {
    it('a token revoked in one process is refused by another that had it cached', async (t) => {
      if (env.kind !== 'postgres') return t.skip('needs a database two processes share');
      const child = await startServeProcess(env, { REDIS_URL });
      t.after(() => child.stop());
      const { app, accessToken } = await authorizeForTest(env, { scopes: ['read'] });
      assert.equal((await request(child.baseUrl, 'GET', '/api/user/me', { token: accessToken })).status, 200);

      const as = await discover(env);
      await oauth.processRevocationResponse(
        await oauth.revocationRequest(as, { client_id: app.clientId }, oauth.None(), accessToken, {
          [oauth.allowInsecureRequests]: true,
        }),
      );
      // Pub/sub delivery is asynchronous: allow it a moment, far less than the 30 s the cache would keep it.
      let status = 0;
      for (let attempt = 0; attempt < 40 && status !== 401; attempt++) {
        if (attempt) await new Promise((resolve) => setTimeout(resolve, 25));
        status = (await request(child.baseUrl, 'GET', '/api/user/me', { token: accessToken })).status;
      }
      assert.equal(status, 401);
    });
  },
  { config: { REDIS_URL } },
);
