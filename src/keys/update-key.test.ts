import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type DashboardSession, type TestEnv } from '../testing/harness.ts';
import { createKey, fundedSession } from './testing.ts';
import { authorizeForTest } from '../oauth/testing.ts';

const chat = (env: TestEnv, key: string, text = 'hello') =>
  env.request('POST', '/api/v1/chat/completions', {
    token: key,
    body: { model: 'tollgate/echo', messages: [{ role: 'user', content: text }] },
  });

const patch = (env: TestEnv, session: DashboardSession, id: string, body: unknown) =>
  env.dashboard(session, 'PATCH', `/api/user/api-keys/${id}`, body);

describeEachDatabase('PATCH /api/user/api-keys/:id: changing a key in place', (env) => {
  it('changes the fields sent, keeps the others and the key value, and answers the key as the list shows it', async () => {
    const session = await fundedSession(env, 10);
    const key = await createKey(env, session, {
      permissions: ['ai:chat', 'ai:models'],
      limit: 1,
      limitPeriod: 'daily',
    });
    const changed = await patch(env, session, key.id, { name: 'Renamed', models: ['tollgate/*'] });
    assert.equal(changed.status, 200, changed.text);
    assert.equal(changed.body.success, true);
    const listed = (await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys.find(
      (k: { id: string }) => k.id === key.id,
    );
    assert.deepEqual(changed.body.apiKey, listed, 'the answer is the listed key');
    assert.equal(listed.name, 'Renamed');
    assert.deepEqual(listed.models, ['tollgate/*']);
    assert.equal(listed.key, key.key, 'the value stays');
    assert.deepEqual(listed.permissions, ['ai:chat', 'ai:models'], 'fields not sent stay');
    assert.equal(listed.limit, 1);
    assert.equal(listed.limitPeriod, 'daily');
    assert.equal((await chat(env, key.key)).status, 200, 'the key still works');
  });

  it('a new amount keeps the period, a period alone keeps the amount, and limit: null removes the limit', async () => {
    const session = await fundedSession(env, 10);
    const key = await createKey(env, session, { permissions: ['ai:chat'], limit: 1, limitPeriod: 'daily' });
    let apiKey = (await patch(env, session, key.id, { limit: 2.5 })).body.apiKey;
    assert.deepEqual([apiKey.limit, apiKey.limitPeriod], [2.5, 'daily']);
    apiKey = (await patch(env, session, key.id, { limitPeriod: 'monthly' })).body.apiKey;
    assert.deepEqual([apiKey.limit, apiKey.limitPeriod], [2.5, 'monthly']);
    assert.equal(apiKey.limitUsage.resetsAt.slice(8, 10), '01', 'a monthly limit resets on the 1st');
    apiKey = (await patch(env, session, key.id, { limit: 3, limitPeriod: 'total' })).body.apiKey;
    assert.deepEqual([apiKey.limit, apiKey.limitPeriod, apiKey.limitUsage.resetsAt], [3, 'total', null]);
    apiKey = (await patch(env, session, key.id, { limit: null })).body.apiKey;
    assert.deepEqual([apiKey.limit, apiKey.limitPeriod, apiKey.limitUsage], [null, null, null]);

    const refused = await patch(env, session, key.id, { limitPeriod: 'daily' });
    assert.equal(refused.status, 400);
    assert.equal(refused.body.success, false);
    assert.match(refused.body.error, /limitPeriod needs a limit: this key has none/);
    apiKey = (await patch(env, session, key.id, { limit: 4 })).body.apiKey;
    assert.deepEqual([apiKey.limit, apiKey.limitPeriod], [4, 'total'], 'a key without a limit gets a total one');
  });

  it('a lowered limit refuses the next call with 429 SPENDING_LIMIT_EXCEEDED at the new figure; a raised one lets it through', async () => {
    const session = await fundedSession(env, 10);
    const key = await createKey(env, session, { permissions: ['ai:chat'], limit: 1, limitPeriod: 'daily' });
    assert.equal((await chat(env, key.key, 'spend a little')).status, 200);
    const lowered = await patch(env, session, key.id, { limit: 0 });
    assert.equal(lowered.status, 200, lowered.text);
    assert.deepEqual(lowered.body.apiKey.limitUsage.remaining, 0, 'a limit of 0 is listed (the list failed on it)');
    const refused = await chat(env, key.key);
    assert.equal(refused.status, 429, refused.text);
    assert.equal(refused.body.error.code, 'SPENDING_LIMIT_EXCEEDED');
    assert.equal(refused.body.error.limit, 0);
    assert.equal(refused.body.error.limitType, 'daily');
    assert.equal((await patch(env, session, key.id, { limit: 1 })).status, 200);
    assert.equal((await chat(env, key.key)).status, 200);
  });

  it('narrower permissions, fewer models and an earlier expiry hold from the next request (the cached key is dropped)', async () => {
    const session = await fundedSession(env, 10);
    const key = await createKey(env, session, { permissions: ['ai:chat', 'ai:models'] });
    assert.equal((await chat(env, key.key)).status, 200, 'the key is now in the credential cache');
    assert.equal((await patch(env, session, key.id, { permissions: ['ai:models'] })).status, 200);
    const denied = await chat(env, key.key);
    assert.equal(denied.status, 403, denied.text);
    assert.equal(denied.body.error.code, 'PERMISSION_DENIED');

    assert.equal((await patch(env, session, key.id, { permissions: ['ai:chat'], models: ['acme/*'] })).status, 200);
    assert.equal((await chat(env, key.key)).status, 403, 'tollgate/echo is no longer among its models');
    assert.equal((await patch(env, session, key.id, { models: null })).status, 200);
    assert.equal((await chat(env, key.key)).status, 200, 'null: every model again');

    const soon = new Date(env.clock.now() + 60_000).toISOString();
    const expiring = await patch(env, session, key.id, { expiresAt: soon });
    assert.equal(expiring.body.apiKey.expiresAt, soon);
    assert.equal((await patch(env, session, key.id, { expiresAt: null })).body.apiKey.expiresAt, null);
    const past = await patch(env, session, key.id, { expiresAt: '2001-01-01T00:00:00Z' });
    assert.equal(past.status, 400);
    assert.match(past.body.error, /expiresAt must be in the future/);
  });

  it('refuses with what to send: an empty body, an unknown field, an empty name, a name not text, permissions not a list, an unknown permission, limitPeriod: null alone', async () => {
    const session = await fundedSession(env, 1);
    const key = await createKey(env, session, { permissions: ['ai:chat'], limit: 1 });
    const cases: Array<[unknown, RegExp]> = [
      [{}, /Send at least one field to change: name, permissions, limit, limitPeriod, expiresAt, models/],
      [{ name: 'x', colour: 'red' }, /Unknown field "colour"; a key takes name, permissions, limit, limitPeriod/],
      [{ name: '   ' }, /name must be a non-empty string/],
      [
        { name: 123 },
        /^name must be text \(a JSON string\) of 1 to 100 characters, such as "CI deploy"; it was the number 123$/,
      ],
      [
        { permissions: 'ai:chat' },
        /^permissions must be a list of permissions, such as \["ai:chat"\]; it was the string "ai:chat"/,
      ],
      [{ permissions: ['ai:everything'] }, /Unknown permission "ai:everything"/],
      [{ permissions: [] }, /At least one permission is required/],
      [{ limitPeriod: null }, /To remove the spending limit, send "limit": null/],
      [{ limit: null, limitPeriod: 'daily' }, /limitPeriod needs a limit/],
      [{ limit: 0.0000001 }, /limit must be a number of credits/],
      [{ limit: -1 }, /limit/],
    ];
    for (const [body, message] of cases) {
      const response = await patch(env, session, key.id, body);
      assert.equal(response.status, 400, `${JSON.stringify(body)}: ${response.text}`);
      assert.equal(response.body.success, false);
      assert.match(response.body.error, message, JSON.stringify(body));
    }
    const listed = (await env.dashboard(session, 'GET', '/api/user/api-keys')).body.apiKeys[0];
    assert.deepEqual([listed.name, listed.limit, listed.permissions], ['Editor', 1, ['ai:chat']], 'nothing changed');

    const created = await env.dashboard(session, 'POST', '/api/user/api-keys', {
      name: 'x',
      permissions: ['ai:chat'],
      colour: 'red',
    });
    assert.equal(created.status, 400);
    assert.match(
      created.body.error,
      /Unknown field "colour"; a key takes name, permissions, limit, limitPeriod, expiresAt, models/,
      'creation names it too',
    );
  });

  it("security: another user's key, a revoked key and, for an app, a key it did not create are 404; an app cannot grant beyond its scopes", async () => {
    const owner = await fundedSession(env, 1);
    const stranger = await fundedSession(env, 1);
    const key = await createKey(env, owner, { permissions: ['ai:chat'] });
    const theirs = await patch(env, stranger, key.id, { name: 'mine now' });
    assert.equal(theirs.status, 404, theirs.text);
    assert.equal(
      (await patch(env, stranger, key.id, { limitPeriod: 'daily' })).status,
      404,
      'not a 400 about its limit',
    );
    assert.equal((await env.request('PATCH', `/api/user/api-keys/${key.id}`, { body: { name: 'x' } })).status, 401);

    const app = await authorizeForTest(env, { user: owner, scopes: ['apikeys:read', 'apikeys:write', 'ai:models'] });
    const asApp = (id: string, body: unknown) =>
      env.request('PATCH', `/api/user/api-keys/${id}`, { token: app.accessToken, body });
    assert.equal((await asApp(key.id, { name: 'x' })).status, 404, "the dashboard's key is not the app's");
    const minted = await env.request('POST', '/api/user/api-keys', {
      token: app.accessToken,
      body: { name: 'minted', permissions: ['ai:models'] },
    });
    const mintedId = minted.body.apiKey.id as string;
    assert.equal((await asApp(mintedId, { name: 'renamed by its app' })).status, 200);
    const beyond = await asApp(mintedId, { permissions: ['ai:chat'] });
    assert.equal(beyond.status, 403, beyond.text);
    assert.match(beyond.body.error, /cannot grant "ai:chat"/);

    const reader = await authorizeForTest(env, { user: owner, scopes: ['apikeys:read'] });
    const readOnly = await env.request('PATCH', `/api/user/api-keys/${mintedId}`, {
      token: reader.accessToken,
      body: { name: 'x' },
    });
    assert.equal(readOnly.status, 403, 'apikeys:write is needed');

    assert.equal((await env.dashboard(owner, 'DELETE', `/api/user/api-keys/${key.id}`)).status, 200);
    assert.equal((await patch(env, owner, key.id, { name: 'back from the dead' })).status, 404, 'a revoked key');
  });
});
