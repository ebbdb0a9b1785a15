import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { authorizeForTest, registerTestApp } from '../oauth/testing.ts';

/** An app acting for a user sees its own calls and movements, not the user's other apps (issue 14). */
describeEachDatabase('what an app sees of the user’s spend', (env) => {
  it('an app token with billing:read sees only its own app’s usage and wallet movements; the dashboard sees all', async () => {
    const user = await env.createUser();
    assert.equal(
      (await env.admin('POST', `/api/admin/users/${user.userId}/credits`, { amount: 10, reason: 'welcome' })).status,
      200,
    );
    const scopes = ['read', 'billing:read', 'ai:chat'];
    const mine = await authorizeForTest(env, {
      user,
      scopes,
      app: await registerTestApp(env, { name: 'Mine', scopes }),
    });
    const secret = await authorizeForTest(env, {
      user,
      scopes,
      app: await registerTestApp(env, { name: 'Secret Diary App', scopes }),
    });
    const chat = (token: string, content: string) =>
      env.request('POST', '/api/v1/chat/completions', {
        token,
        body: { model: 'tollgate/echo', messages: [{ role: 'user', content }] },
      });
    assert.equal((await chat(mine.accessToken, 'hello')).status, 200);
    assert.equal((await chat(secret.accessToken, 'a much longer message that costs more')).status, 200);
    assert.equal((await chat(secret.accessToken, 'and another one')).status, 200);

    const usage = await env.request('GET', '/api/usage', { token: mine.accessToken });
    assert.equal(usage.status, 200, usage.text);
    assert.deepEqual(
      usage.body.byApp.map((row: { appId: string; name: string }) => [row.appId, row.name]),
      [[mine.clientId, 'Mine']],
    );
    assert.equal(usage.body.totals.requests, 1);
    assert.equal(usage.text.includes('Secret Diary App'), false);

    const db = env.db;
    const holdsOf = async (appId: string) =>
      new Set((await db.selectFrom('holds').select('id').where('app_id', '=', appId).execute()).map((row) => row.id));
    const myHolds = await holdsOf(mine.clientId);
    const moves = await env.request('GET', '/api/wallet/transactions', { token: mine.accessToken });
    assert.equal(moves.status, 200, moves.text);
    assert.ok(moves.body.transactions.length >= 2, 'its hold and its capture');
    for (const move of moves.body.transactions)
      assert.ok(
        move.holdId && myHolds.has(move.holdId),
        `${move.type} ${move.holdId ?? ''} is a movement of the app's own holds`,
      );
    assert.equal(
      (await env.request('GET', '/api/wallet/balance', { token: mine.accessToken })).status,
      200,
      'the balance stays readable',
    );

    const everything = await env.dashboard(user, 'GET', '/api/usage');
    assert.equal(everything.body.totals.requests, 3);
    assert.equal(everything.body.byApp.length, 2);
    const allMoves = await env.dashboard(user, 'GET', '/api/wallet/transactions');
    assert.ok(allMoves.body.transactions.some((move: { type: string }) => move.type === 'grant'));
    assert.ok(allMoves.body.transactions.some((move: { holdId?: string }) => move.holdId && !myHolds.has(move.holdId)));
  });
});
