import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { authorizeForTest, registerTestApp } from '../oauth/testing.ts';

const CREDIT = 1_000_000;

describeEachDatabase('wallet and authorized-app reads', (env) => {
  const billing = () => env.service.ctx.billing;

  it('GET /api/wallet/balance shows balance, reserved and available in credits', async () => {
    const session = await env.createUser();
    assert.deepEqual((await env.dashboard(session, 'GET', '/api/wallet/balance')).body, {
      balance: 0,
      reserved: 0,
      available: 0,
      currency: 'credits',
    });
    await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: 12.5, reason: 'welcome' });
    await billing().placeHold({ userId: session.userId, appId: null, keyId: null, amount: 2_000_001 });
    const response = await env.dashboard(session, 'GET', '/api/wallet/balance');
    assert.equal(response.status, 200);
    assert.deepEqual(response.body, { balance: 12.5, reserved: 2.000001, available: 10.499999, currency: 'credits' });
  });

  it('GET /api/wallet/transactions pages newest first with a cursor, with each movement signed', async () => {
    const session = await env.createUser();
    await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: 5, reason: 'welcome' });
    const { holdId } = await billing().placeHold({
      userId: session.userId,
      appId: null,
      keyId: null,
      amount: 2 * CREDIT,
      description: 'Chat openai/gpt-x',
    });
    await billing().settleHold(holdId, 1_500_000, { description: 'Chat openai/gpt-x' });
    await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: -0.5, reason: 'correction' });

    const first = await env.dashboard(session, 'GET', '/api/wallet/transactions?limit=2');
    assert.equal(first.status, 200);
    assert.deepEqual(
      first.body.transactions.map((t: any) => [t.type, t.amount, t.held, t.balanceAfter, t.description]),
      [
        ['adjustment', -0.5, 0, 3, 'correction'],
        ['capture', -1.5, -2, 3.5, 'Chat openai/gpt-x'],
      ],
    );
    assert.equal(first.body.transactions[1].holdId, holdId);
    assert.equal('holdId' in first.body.transactions[0], false);
    assert.match(first.body.transactions[0].id, /^txn_/);
    assert.ok(!Number.isNaN(Date.parse(first.body.transactions[0].createdAt)));
    assert.equal(typeof first.body.nextCursor, 'string');

    const second = await env.dashboard(
      session,
      'GET',
      `/api/wallet/transactions?limit=2&cursor=${first.body.nextCursor}`,
    );
    assert.deepEqual(
      second.body.transactions.map((t: any) => [t.type, t.amount, t.held, t.balanceAfter]),
      [
        ['hold', 0, 2, 5],
        ['grant', 5, 0, 5],
      ],
    );
    assert.equal(second.body.nextCursor, null);

    const bad = await env.dashboard(session, 'GET', '/api/wallet/transactions?cursor=bm9wZQ');
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'INVALID_REQUEST');
  });

  it('wallet reads need billing:read; another scope is a 403 and no credential a 401', async () => {
    const { accessToken } = await authorizeForTest(env, { scopes: ['read'] });
    const refused = await env.request('GET', '/api/wallet/balance', { token: accessToken });
    assert.equal(refused.status, 403);
    assert.deepEqual(Object.keys(refused.body.error).sort(), ['code', 'message', 'type']);
    assert.equal(refused.body.error.code, 'PERMISSION_DENIED');
    assert.equal(refused.body.error.type, 'permission_error');
    assert.equal((await env.request('GET', '/api/wallet/transactions')).status, 401);
  });

  it("an app's token sees only its own authorized-app entry; the dashboard sees every app the user has not revoked", async () => {
    const session = await env.createUser();
    const first = await authorizeForTest(env, { user: session, dailyLimit: '2.5' });
    const second = await authorizeForTest(env, { user: session, scopes: ['billing:read'] });
    const third = await authorizeForTest(env, { user: session });
    assert.equal((await env.dashboard(session, 'DELETE', `/api/user/authorized-apps/${third.clientId}`)).status, 200);

    const { holdId } = await billing().placeHold({
      userId: session.userId,
      appId: first.clientId,
      keyId: null,
      amount: 0,
    });
    await billing().settleHold(holdId, 0);

    const all = await env.dashboard(session, 'GET', '/api/user/authorized-apps');
    assert.equal(all.status, 200);
    assert.deepEqual(all.body.apps.map((a: any) => a.clientId).sort(), [first.clientId, second.clientId].sort());

    const own = await env.request('GET', '/api/user/authorized-apps', { token: first.accessToken });
    assert.equal(own.status, 200);
    assert.equal(own.body.apps.length, 1);
    const [entry] = own.body.apps;
    assert.deepEqual(Object.keys(entry).sort(), ['authorizedAt', 'clientId', 'lastUsedAt', 'limits', 'name', 'scopes']);
    assert.equal(entry.clientId, first.clientId);
    assert.equal(entry.name, 'Test App');
    assert.ok(entry.scopes.includes('billing:read'));
    assert.ok(!Number.isNaN(Date.parse(entry.authorizedAt)));
    assert.deepEqual(Object.keys(entry.limits).sort(), ['daily', 'monthly', 'total', 'weekly']);
    assert.deepEqual(Object.keys(entry.limits.daily).sort(), ['limit', 'reserved', 'resetsAt', 'spent']);
    assert.equal(entry.limits.daily.limit, 2.5);
    assert.equal(entry.limits.daily.spent, 0);
    assert.equal(entry.limits.daily.reserved, 0);
    assert.equal(entry.limits.weekly, null);
    assert.equal(entry.limits.monthly, null);
    assert.equal(entry.limits.total, null);

    // billing:read alone is enough, and still only the app's own entry.
    const viaBilling = await env.request('GET', '/api/user/authorized-apps', { token: second.accessToken });
    assert.deepEqual(
      viaBilling.body.apps.map((a: any) => a.clientId),
      [second.clientId],
    );
    assert.deepEqual(viaBilling.body.apps[0].limits, { daily: null, weekly: null, monthly: null, total: null });
  });

  it('the dashboard sets and removes limits with PATCH; spent and reserved follow the holds', async () => {
    const session = await env.createUser();
    const { clientId, accessToken } = await authorizeForTest(env, { user: session, dailyLimit: 1 });
    await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: 50 });

    const patched = await env.dashboard(session, 'PATCH', `/api/user/authorized-apps/${clientId}`, {
      limits: { daily: null, monthly: 20.25, total: 30 },
    });
    assert.equal(patched.status, 200);
    assert.equal(patched.body.clientId, clientId);
    assert.equal(patched.body.limits.daily, null);
    assert.equal(patched.body.limits.monthly.limit, 20.25);
    assert.equal(patched.body.limits.total.limit, 30);
    assert.equal(patched.body.limits.total.resetsAt, null);

    // The old daily limit of 1 no longer applies; the new monthly one does.
    const { holdId } = await billing().placeHold({
      userId: session.userId,
      appId: clientId,
      keyId: null,
      amount: 5 * CREDIT,
    });
    await billing().settleHold(holdId, 3 * CREDIT);
    await billing().placeHold({ userId: session.userId, appId: clientId, keyId: null, amount: 1_250_000 });
    const seen = await env.request('GET', '/api/user/authorized-apps', { token: accessToken });
    assert.deepEqual(
      { ...seen.body.apps[0].limits.monthly, resetsAt: typeof seen.body.apps[0].limits.monthly.resetsAt },
      { limit: 20.25, spent: 3, reserved: 1.25, resetsAt: 'string' },
    );
    assert.deepEqual(seen.body.apps[0].limits.total, { limit: 30, spent: 3, reserved: 1.25, resetsAt: null });

    // Leaving a period out keeps it.
    const kept = await env.dashboard(session, 'PATCH', `/api/user/authorized-apps/${clientId}`, {
      limits: { daily: 4 },
    });
    assert.deepEqual(
      [kept.body.limits.daily.limit, kept.body.limits.monthly.limit, kept.body.limits.total.limit],
      [4, 20.25, 30],
    );
  });

  it("an app can never change its own limits: PATCH with the app's token is a 403 and changes nothing", async () => {
    const session = await env.createUser();
    const { clientId, accessToken } = await authorizeForTest(env, { user: session, dailyLimit: 1 });
    const refused = await env.request('PATCH', `/api/user/authorized-apps/${clientId}`, {
      token: accessToken,
      body: { limits: { daily: null } },
    });
    assert.equal(refused.status, 403);
    assert.equal(refused.body.error.code, 'PERMISSION_DENIED');
    const after = await env.dashboard(session, 'GET', '/api/user/authorized-apps');
    assert.equal(after.body.apps[0].limits.daily.limit, 1);
  });

  it('PATCH answers 404 for an app the user has not authorized and 400 for a malformed limit', async () => {
    const session = await env.createUser();
    const other = await env.createUser();
    const { clientId } = await authorizeForTest(env, { user: other });
    const stranger = await registerTestApp(env);
    for (const id of [clientId, stranger.clientId, 'app_unknown']) {
      const response = await env.dashboard(session, 'PATCH', `/api/user/authorized-apps/${id}`, {
        limits: { daily: 1 },
      });
      assert.equal(response.status, 404);
      assert.deepEqual(response.body, {
        error: { code: 'NOT_FOUND', message: 'Authorized app not found.', type: 'not_found_error' },
      });
    }
    const mine = await authorizeForTest(env, { user: session });
    for (const body of [
      { limits: { daily: 1.0000001 } },
      { limits: { daily: -1 } },
      { limits: { daily: '5' } },
      { limits: { hourly: 5 } },
      {},
    ]) {
      const response = await env.dashboard(session, 'PATCH', `/api/user/authorized-apps/${mine.clientId}`, body);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(response.body.error.code, 'INVALID_REQUEST');
    }
  });
});
