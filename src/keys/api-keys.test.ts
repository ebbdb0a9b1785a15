import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type DashboardSession, type TestEnv } from '../testing/harness.ts';
import { authorizeForTest } from '../oauth/testing.ts';
import { MAX_LIVE_KEYS_PER_USER } from './store.ts';
import { MAX_KEY_LIFETIME_MS } from './fields.ts';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** An app's OAuth access token for the user, with `scopes`, through the real authorization-code + PKCE flow. */
async function appToken(
  env: TestEnv,
  session: DashboardSession,
  scopes: string[],
): Promise<{ token: string; appId: string }> {
  const authorization = await authorizeForTest(env, { user: session, scopes });
  assert.deepEqual(authorization.scope.split(' ').sort(), [...scopes].sort());
  return { token: authorization.accessToken, appId: authorization.clientId };
}

async function createKey(env: TestEnv, session: DashboardSession, body: Record<string, unknown> = {}) {
  const response = await env.dashboard(session, 'POST', '/api/user/api-keys', {
    name: 'My key',
    permissions: ['ai:chat'],
    ...body,
  });
  assert.equal(response.status, 200, response.text);
  return response.body.apiKey as { id: string; name: string; key: string; permissions: string[]; createdAt: string };
}

describeEachDatabase('API keys endpoints', (env) => {
  it('create answers 200 with exactly { success, apiKey: { id, name, key, permissions, createdAt } }', async () => {
    const session = await env.createUser();
    const response = await env.dashboard(session, 'POST', '/api/user/api-keys', {
      name: 'Laptop',
      permissions: ['ai:chat', 'ai:models'],
    });
    assert.equal(response.status, 200);
    assert.deepEqual(Object.keys(response.body).sort(), ['apiKey', 'success']);
    assert.equal(response.body.success, true);
    const key = response.body.apiKey;
    assert.deepEqual(Object.keys(key).sort(), ['createdAt', 'id', 'key', 'name', 'permissions']);
    assert.match(key.id, /^key_/);
    assert.equal(key.name, 'Laptop');
    assert.match(key.key, /^ak_[0-9A-Za-z]{46}$/);
    assert.deepEqual(key.permissions, ['ai:chat', 'ai:models']);
    assert.match(key.createdAt, ISO);
  });

  it('list answers { success, apiKeys } with every §2.1 field, the key value and its limit, newest first', async () => {
    const session = await env.createUser();
    const first = await createKey(env, session, { name: 'first' });
    const second = await createKey(env, session, {
      name: 'second',
      permissions: ['billing:read'],
      limit: 12.5,
      limitPeriod: 'daily',
    });
    const response = await env.dashboard(session, 'GET', '/api/user/api-keys');
    assert.equal(response.status, 200);
    assert.deepEqual(Object.keys(response.body).sort(), ['apiKeys', 'success']);
    assert.equal(response.body.success, true);
    const listed = response.body.apiKeys;
    assert.deepEqual(listed.map((k: any) => k.id).sort(), [first.id, second.id].sort());
    const byId = new Map(listed.map((k: any) => [k.id, k]));
    assert.deepEqual(byId.get(first.id), {
      id: first.id,
      name: 'first',
      key: first.key,
      permissions: ['ai:chat'],
      lastUsed: null,
      createdAt: first.createdAt,
      limit: null,
      limitPeriod: null,
      limitUsage: null,
      expiresAt: null,
      models: null,
    });
    const now = new Date(env.clock.now());
    const midnight = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1));
    assert.deepEqual(byId.get(second.id), {
      id: second.id,
      name: 'second',
      key: second.key,
      permissions: ['billing:read'],
      lastUsed: null,
      createdAt: second.createdAt,
      limit: 12.5,
      limitPeriod: 'daily',
      limitUsage: { spent: 0, reserved: 0, remaining: 12.5, resetsAt: midnight.toISOString() },
      expiresAt: null,
      models: null,
    });
    if (first.createdAt !== second.createdAt) assert.equal(listed[0].id, second.id);
  });

  it("a limit without a period never resets ('total') and is stored in micro-credits", async () => {
    const session = await env.createUser();
    const key = await createKey(env, session, { limit: 0.000001 });
    const rows = await env.db
      .selectFrom('spending_limits')
      .select(['period', 'amount'])
      .where('subject', '=', `key:${key.id}`)
      .execute();
    assert.deepEqual(
      rows.map((row) => ({ period: row.period, amount: Number(row.amount) })),
      [{ period: 'total', amount: 1 }],
    );
  });

  it('a limit with a 7th decimal, a negative limit or a period without a limit is a 400', async () => {
    const session = await env.createUser();
    for (const extra of [
      { limit: 0.0000001 },
      { limit: -1 },
      { limitPeriod: 'daily' },
      { limit: 5, limitPeriod: 'hourly' },
    ]) {
      const response = await env.dashboard(session, 'POST', '/api/user/api-keys', {
        name: 'k',
        permissions: ['ai:chat'],
        ...extra,
      });
      assert.equal(response.status, 400, JSON.stringify(extra));
      assert.equal(response.body.success, false);
      assert.equal(typeof response.body.error, 'string');
    }
    // A limit too large to hold exactly is refused for being too large, not for its decimals.
    const huge = await env.dashboard(session, 'POST', '/api/user/api-keys', {
      name: 'k',
      permissions: ['ai:chat'],
      limit: 99999999999999,
    });
    assert.deepEqual(huge.body, {
      success: false,
      error: 'limit must be a number of credits with at most 6 decimals and at most 8,589,934,592',
    });
  });

  it('a limit of 8,589,934,592 credits is kept exactly, and one micro-credit more is refused with the rule', async () => {
    // Past 2^33 credits a micro-credit amount may share its JSON number with a neighbour: 8589934592.000001
    // reads as 8,589,934,592.000002 credits, so it cannot be kept exactly and is refused, at creation and change.
    const session = await env.createUser();
    const rule = 'limit must be a number of credits with at most 6 decimals and at most 8,589,934,592';
    const refused = await env.dashboard(session, 'POST', '/api/user/api-keys', {
      name: 'k',
      permissions: ['ai:chat'],
      limit: 8_589_934_592.000001,
    });
    assert.equal(refused.status, 400, refused.text);
    assert.deepEqual(refused.body, { success: false, error: rule });
    const key = await createKey(env, session, { limit: 8_589_934_592 });
    const stored = async () => {
      const row = await env.db
        .selectFrom('spending_limits')
        .select('amount')
        .where('subject', '=', `key:${key.id}`)
        .executeTakeFirstOrThrow();
      const listed = (await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys[0];
      return [Number(row.amount), listed.limit];
    };
    assert.deepEqual(await stored(), [8_589_934_592_000_000, 8_589_934_592]);
    const changed = await env.dashboard(session, 'PATCH', `/api/user/api-keys/${key.id}`, {
      limit: 8_589_934_592.000001,
    });
    assert.equal(changed.status, 400, changed.text);
    assert.deepEqual(changed.body, { success: false, error: rule });
    // Just below the bound, where doubles are sparsest, the limit is kept to the micro-credit; and from 2^51 to
    // 2^52 micro-credits, where the parse used to round a quarter of the amounts to their neighbour.
    for (const [limit, micros] of [
      [8_589_934_591.999999, 8_589_934_591_999_999],
      [4_342_521_359.759752, 4_342_521_359_759_752],
    ]) {
      const response = await env.dashboard(session, 'PATCH', `/api/user/api-keys/${key.id}`, { limit });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(await stored(), [micros, limit]);
    }
  });

  it('create with no name, an empty name or a blank name: 400 "API key name is required"', async () => {
    const session = await env.createUser();
    for (const body of [
      { permissions: ['ai:chat'] },
      { name: '', permissions: ['ai:chat'] },
      { name: '   ', permissions: ['ai:chat'] },
    ]) {
      const response = await env.dashboard(session, 'POST', '/api/user/api-keys', body);
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { success: false, error: 'API key name is required' });
    }
  });

  it('create with no permissions or an empty list: 400 "At least one permission is required"', async () => {
    const session = await env.createUser();
    for (const body of [{ name: 'k' }, { name: 'k', permissions: [] }]) {
      const response = await env.dashboard(session, 'POST', '/api/user/api-keys', body);
      assert.equal(response.status, 400);
      assert.deepEqual(response.body, { success: false, error: 'At least one permission is required' });
    }
  });

  it('create with a name that is not text or permissions that are not a list: 400 saying what to send, not that it is missing', async () => {
    const session = await env.createUser();
    for (const [body, error] of [
      [
        { name: 123, permissions: ['ai:chat'] },
        'name must be text (a JSON string) of 1 to 100 characters, such as "CI deploy"; it was the number 123',
      ],
      [{ name: { first: 'k' }, permissions: ['ai:chat'] }, /^name must be text .*; it was an object$/],
      [
        { name: 'k', permissions: 'ai:chat' },
        /^permissions must be a list of permissions, such as \["ai:chat"\]; it was the string "ai:chat"\. A key can carry ai:chat, /,
      ],
      [
        { name: 'k', permissions: { 'ai:chat': true } },
        /^permissions must be a list of permissions, such as \["ai:chat"\]; it was an object/,
      ],
    ] as const) {
      const response = await env.dashboard(session, 'POST', '/api/user/api-keys', body);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(response.body.success, false);
      if (typeof error === 'string') assert.equal(response.body.error, error);
      else assert.match(response.body.error, error);
    }
    assert.deepEqual((await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys, []);
  });

  it('create with neither name nor permissions reports the name first, also with no body at all', async () => {
    const session = await env.createUser();
    const empty = await env.dashboard(session, 'POST', '/api/user/api-keys', {});
    assert.deepEqual([empty.status, empty.body], [400, { success: false, error: 'API key name is required' }]);
    const none = await env.request('POST', '/api/user/api-keys', {
      headers: { cookie: session.cookie, 'x-csrf-token': session.csrfToken },
    });
    assert.deepEqual([none.status, none.body], [400, { success: false, error: 'API key name is required' }]);
  });

  it('a body sent as text or as a form is a 415 asking for application/json (§4.2), not a name said to be missing', async () => {
    const session = await env.createUser();
    const headers = { cookie: session.cookie, 'x-csrf-token': session.csrfToken };
    const json = JSON.stringify({ name: 'k', permissions: ['ai:chat'] });
    for (const [contentType, raw] of [
      ['text/plain', json],
      ['text/plain; charset=utf-8', json],
      ['application/x-www-form-urlencoded', 'name=k&permissions=ai%3Achat'],
    ]) {
      const answer = await env.request('POST', '/api/user/api-keys', {
        headers: { ...headers, 'content-type': contentType! },
        raw,
      });
      assert.deepEqual(
        [answer.status, answer.body],
        [415, { success: false, error: 'Unsupported Content-Type; send application/json.' }],
        contentType,
      );
    }
    const charset = await env.request('POST', '/api/user/api-keys', {
      headers: { ...headers, 'content-type': 'application/json; charset=utf-8' },
      raw: json,
    });
    assert.equal(charset.status, 200, charset.text);
    const listed = await env.dashboard(session, 'GET', '/api/user/api-keys');
    assert.equal(listed.body.apiKeys.length, 1, 'only the JSON request created a key');
  });

  it('an unknown permission is a 400 that names it, and nothing is created', async () => {
    const session = await env.createUser();
    const response = await env.dashboard(session, 'POST', '/api/user/api-keys', {
      name: 'k',
      permissions: ['ai:chat', 'ai:everything'],
    });
    assert.equal(response.status, 400);
    assert.equal(response.body.success, false);
    assert.match(response.body.error, /Unknown permission "ai:everything"/);
    const listed = await env.dashboard(session, 'GET', '/api/user/api-keys');
    assert.deepEqual(listed.body.apiKeys, []);
  });

  it('no credential: 401 in the keys envelope on list, create and delete', async () => {
    for (const [method, path] of [
      ['GET', '/api/user/api-keys'],
      ['POST', '/api/user/api-keys'],
      ['DELETE', '/api/user/api-keys/key_x'],
    ]) {
      const response = await env.request(method, path, method === 'POST' ? { body: {} } : {});
      assert.equal(response.status, 401, `${method} ${path}`);
      assert.equal(response.body.success, false);
      assert.equal(typeof response.body.error, 'string');
      assert.deepEqual(Object.keys(response.body).sort(), ['error', 'success']);
    }
  });

  it('delete answers { success: true }, the key leaves the list, and deleting it again is a 404', async () => {
    const session = await env.createUser();
    const key = await createKey(env, session);
    const deleted = await env.dashboard(session, 'DELETE', `/api/user/api-keys/${key.id}`);
    assert.deepEqual([deleted.status, deleted.body], [200, { success: true }]);
    assert.deepEqual((await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys, []);
    const again = await env.dashboard(session, 'DELETE', `/api/user/api-keys/${key.id}`);
    assert.equal(again.status, 404);
    assert.equal(again.body.success, false);
  });

  it(`a user holds at most ${MAX_LIVE_KEYS_PER_USER} live keys, also when creations race: the rest are a 400 storing nothing, and revoking one makes room`, async () => {
    const session = await env.createUser();
    const create = (name: string) =>
      env.dashboard(session, 'POST', '/api/user/api-keys', { name, permissions: ['ai:chat'] });
    const statuses: number[] = [];
    // 50 at a time, all racing for the last places.
    for (let i = 0; i < MAX_LIVE_KEYS_PER_USER + 10; i += 50) {
      const batch = await Promise.all(Array.from({ length: 50 }, (_, j) => create(`k${i + j}`)));
      statuses.push(...batch.map((response) => response.status));
    }
    assert.equal(statuses.filter((status) => status === 200).length, MAX_LIVE_KEYS_PER_USER);
    assert.equal(statuses.filter((status) => status === 400).length, statuses.length - MAX_LIVE_KEYS_PER_USER);
    const refused = await create('one more');
    assert.deepEqual(refused.body, {
      success: false,
      error: `At most ${MAX_LIVE_KEYS_PER_USER} unrevoked API keys per account, expired ones included; revoke one first`,
    });
    const listed = await env.dashboard(session, 'GET', '/api/user/api-keys');
    assert.equal(listed.body.apiKeys.length, MAX_LIVE_KEYS_PER_USER);
    const revoked = await env.dashboard(session, 'DELETE', `/api/user/api-keys/${listed.body.apiKeys[0].id}`);
    assert.equal(revoked.status, 200);
    assert.equal((await create('after a revoke')).status, 200);
  });

  it('an unknown key id is a 404 in the keys envelope', async () => {
    const session = await env.createUser();
    const response = await env.dashboard(session, 'DELETE', '/api/user/api-keys/key_doesnotexist');
    assert.equal(response.status, 404);
    assert.deepEqual(Object.keys(response.body).sort(), ['error', 'success']);
    assert.equal(response.body.success, false);
  });

  it("user B's key id through user A's credential is a 404 and B's key keeps working", async () => {
    const alice = await env.createUser();
    const bob = await env.createUser();
    const bobsKey = await createKey(env, bob);
    const viaSession = await env.dashboard(alice, 'DELETE', `/api/user/api-keys/${bobsKey.id}`);
    assert.equal(viaSession.status, 404);
    const { token } = await appToken(env, alice, ['apikeys:read', 'apikeys:write']);
    const viaToken = await env.request('DELETE', `/api/user/api-keys/${bobsKey.id}`, { token });
    assert.equal(viaToken.status, 404);
    assert.equal(viaToken.body.success, false);
    assert.deepEqual((await env.dashboard(alice, 'GET', '/api/user/api-keys')).body.apiKeys, []);
    assert.deepEqual(
      (await env.dashboard(bob, 'GET', '/api/user/api-keys')).body.apiKeys.map((k: any) => k.id),
      [bobsKey.id],
    );
  });

  it('an app lists and revokes only the keys it created; the dashboard sees them all', async () => {
    const session = await env.createUser();
    const scopes = ['apikeys:read', 'apikeys:write', 'ai:chat'];
    const appA = await appToken(env, session, scopes);
    const appB = await appToken(env, session, scopes);
    const dashboardKey = await createKey(env, session, { name: 'dashboard' });
    const created = await env.request('POST', '/api/user/api-keys', {
      token: appA.token,
      body: { name: 'by app A', permissions: ['ai:chat'] },
    });
    assert.equal(created.status, 200);
    const appAKey = created.body.apiKey;
    const row = await env.db
      .selectFrom('api_keys')
      .select('app_id')
      .where('id', '=', appAKey.id)
      .executeTakeFirstOrThrow();
    assert.equal(row.app_id, appA.appId);

    const listedByA = await env.request('GET', '/api/user/api-keys', { token: appA.token });
    assert.deepEqual(
      listedByA.body.apiKeys.map((k: any) => k.id),
      [appAKey.id],
    );
    const listedByB = await env.request('GET', '/api/user/api-keys', { token: appB.token });
    assert.deepEqual(listedByB.body.apiKeys, []);
    const listedByDashboard = await env.dashboard(session, 'GET', '/api/user/api-keys');
    assert.deepEqual(listedByDashboard.body.apiKeys.map((k: any) => k.id).sort(), [appAKey.id, dashboardKey.id].sort());

    assert.equal(
      (await env.request('DELETE', `/api/user/api-keys/${dashboardKey.id}`, { token: appA.token })).status,
      404,
    );
    assert.equal((await env.request('DELETE', `/api/user/api-keys/${appAKey.id}`, { token: appB.token })).status, 404);
    assert.equal((await env.request('DELETE', `/api/user/api-keys/${appAKey.id}`, { token: appA.token })).status, 200);
    assert.equal((await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys.length, 1);
  });

  it("a permission beyond the token's scopes is a 403 and nothing is created", async () => {
    const session = await env.createUser();
    const app = await appToken(env, session, ['apikeys:read', 'apikeys:write', 'ai:chat']);
    const response = await env.request('POST', '/api/user/api-keys', {
      token: app.token,
      body: { name: 'k', permissions: ['ai:chat', 'ai:images'] },
    });
    assert.equal(response.status, 403);
    assert.equal(response.body.success, false);
    assert.match(response.body.error, /"ai:images"/);
    assert.deepEqual((await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys, []);
  });

  it('a token without apikeys:read or apikeys:write is a 403 in the keys envelope', async () => {
    const session = await env.createUser();
    const readOnly = await appToken(env, session, ['apikeys:read', 'ai:chat']);
    const write = await env.request('POST', '/api/user/api-keys', {
      token: readOnly.token,
      body: { name: 'k', permissions: ['ai:chat'] },
    });
    assert.equal(write.status, 403);
    assert.equal(write.body.success, false);
    const noKeys = await appToken(env, session, ['read']);
    const list = await env.request('GET', '/api/user/api-keys', { token: noKeys.token });
    assert.equal(list.status, 403);
    assert.deepEqual(Object.keys(list.body).sort(), ['error', 'success']);
  });

  it('an API key cannot manage keys: 403 on list, create and delete', async () => {
    const session = await env.createUser();
    const key = await createKey(env, session, { permissions: ['ai:chat', 'billing:read'] });
    for (const [method, path] of [
      ['GET', '/api/user/api-keys'],
      ['POST', '/api/user/api-keys'],
      ['DELETE', `/api/user/api-keys/${key.id}`],
    ]) {
      const response = await env.request(method, path, {
        token: key.key,
        ...(method === 'POST' ? { body: { name: 'k', permissions: ['ai:chat'] } } : {}),
      });
      assert.equal(response.status, 403, `${method} ${path}`);
      assert.equal(response.body.success, false);
    }
  });
});

/** An instant 2026-12-01T12:00:00.000Z that the tests' clock stands at. */
const NOW = '2026-12-01T12:00:00.000Z';

describeEachDatabase(
  'API keys that expire',
  (env) => {
    it('create takes an expiresAt: the answer keeps the contract fields, the list shows it as an ISO timestamp', async () => {
      const session = await env.createUser();
      const response = await env.dashboard(session, 'POST', '/api/user/api-keys', {
        name: 'contractor',
        permissions: ['ai:chat'],
        expiresAt: '2027-01-31T18:30:00+01:00',
      });
      assert.equal(response.status, 200, response.text);
      assert.deepEqual(Object.keys(response.body.apiKey).sort(), ['createdAt', 'id', 'key', 'name', 'permissions']);
      const never = await createKey(env, session, { name: 'forever', expiresAt: null });
      const listed = (await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys;
      const byId = new Map(listed.map((k: any) => [k.id, k]));
      assert.equal((byId.get(response.body.apiKey.id) as any).expiresAt, '2027-01-31T17:30:00.000Z');
      assert.equal((byId.get(never.id) as any).expiresAt, null);
      const row = await env.db
        .selectFrom('api_keys')
        .select('expires_at')
        .where('id', '=', response.body.apiKey.id)
        .executeTakeFirstOrThrow();
      assert.equal(Number(row.expires_at), Date.parse('2027-01-31T17:30:00Z'));
    });

    it('an expiresAt that is malformed, without a time zone, not a real day, past, now or over 10 years ahead is a 400 that says what to send, and nothing is created', async () => {
      const session = await env.createUser();
      const now = new Date(env.manualClock.now()).toISOString();
      const format =
        'expiresAt must be an ISO 8601 timestamp with seconds and a time zone, such as 2027-01-31T00:00:00Z';
      const cases: Array<[unknown, string]> = [
        ['next tuesday', format],
        ['2027-01-31', format],
        ['2027-01-31T00:00:00', format],
        ['2027-02-30T00:00:00Z', format],
        ['2027-01-31T24:00:00Z', format],
        [1798761600000, format],
        ['', format],
        [
          '2026-11-30T12:00:00Z',
          `expiresAt must be in the future: 2026-11-30T12:00:00.000Z has passed (it is now ${now})`,
        ],
        [now, `expiresAt must be in the future: ${now} has passed (it is now ${now})`],
        [
          new Date(Date.parse(now) + MAX_KEY_LIFETIME_MS + 1000).toISOString(),
          `expiresAt must be at most 10 years ahead (no later than ${new Date(Date.parse(now) + MAX_KEY_LIFETIME_MS).toISOString()}); leave it out for a key that never expires`,
        ],
      ];
      for (const [expiresAt, error] of cases) {
        const response = await env.dashboard(session, 'POST', '/api/user/api-keys', {
          name: 'k',
          permissions: ['ai:chat'],
          expiresAt,
        });
        assert.deepEqual([response.status, response.body], [400, { success: false, error }], String(expiresAt));
      }
      assert.deepEqual((await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys, []);
      // Exactly 10 years ahead, and one millisecond ahead, are accepted.
      for (const ahead of [MAX_KEY_LIFETIME_MS, 1]) {
        const expiresAt = new Date(Date.parse(now) + ahead).toISOString();
        const created = await createKey(env, session, { expiresAt });
        const listed = (await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys;
        assert.equal(listed.find((k: any) => k.id === created.id).expiresAt, expiresAt);
      }
    });

    it('the contract texts still come first: no name with a bad expiresAt is "API key name is required"', async () => {
      const session = await env.createUser();
      const response = await env.dashboard(session, 'POST', '/api/user/api-keys', {
        permissions: ['ai:chat'],
        expiresAt: 'soon',
      });
      assert.deepEqual(response.body, { success: false, error: 'API key name is required' });
    });

    it(`expired keys count toward the ${MAX_LIVE_KEYS_PER_USER} live keys until revoked, as they stay listed`, async () => {
      const session = await env.createUser();
      const expiresAt = new Date(env.manualClock.now() + 60_000).toISOString();
      for (let i = 0; i < MAX_LIVE_KEYS_PER_USER; i += 50) {
        const batch = await Promise.all(
          Array.from({ length: 50 }, (_, j) =>
            env.dashboard(session, 'POST', '/api/user/api-keys', {
              name: `k${i + j}`,
              permissions: ['ai:chat'],
              expiresAt,
            }),
          ),
        );
        assert.deepEqual(new Set(batch.map((response) => response.status)), new Set([200]));
      }
      await env.manualClock.advance(120_000);
      const create = () =>
        env.dashboard(session, 'POST', '/api/user/api-keys', { name: 'new', permissions: ['ai:chat'] });
      assert.equal((await create()).status, 400);
      const listed = (await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys;
      assert.equal(listed.length, MAX_LIVE_KEYS_PER_USER);
      assert.equal((await env.dashboard(session, 'DELETE', `/api/user/api-keys/${listed[0].id}`)).status, 200);
      assert.equal((await create()).status, 200);
    });

    it('the OpenAPI document describes expiresAt on creation (date-time, nullable) and in the list', async () => {
      const document = (await env.request('GET', '/api/openapi.json')).body;
      const json = JSON.stringify(document.paths['/api/user/api-keys']);
      const created = document.paths['/api/user/api-keys'].post.requestBody.content['application/json'].schema;
      assert.ok(created.properties.expiresAt, 'the create body names expiresAt');
      assert.match(JSON.stringify(created.properties.expiresAt), /"format":"date-time"/);
      assert.match(JSON.stringify(created.properties.expiresAt), /10 years/);
      assert.ok(!(created.required ?? []).includes('expiresAt'));
      assert.match(json, /"expiresAt":\{[^}]*"date-time"/, 'the list shows expiresAt');
    });

    it('an expired key stays listed with its expiresAt until revoked, and revoking it works', async () => {
      const session = await env.createUser();
      const expiresAt = new Date(env.manualClock.now() + 60_000).toISOString();
      const key = await createKey(env, session, { expiresAt });
      await env.manualClock.advance(120_000);
      const listed = (await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys;
      assert.deepEqual(
        listed.map((k: any) => [k.id, k.expiresAt]),
        [[key.id, expiresAt]],
      );
      const deleted = await env.dashboard(session, 'DELETE', `/api/user/api-keys/${key.id}`);
      assert.deepEqual([deleted.status, deleted.body], [200, { success: true }]);
      assert.deepEqual((await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys, []);
    });
  },
  { manualClock: NOW },
);
