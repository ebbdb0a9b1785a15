import { it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describeEachDatabase } from '../testing/harness.ts';
import { grantCreditsFromCli } from './cli.ts';

const run = promisify(execFile);

describeEachDatabase('operator credits', (env) => {
  it('a positive amount is a grant and answers the new balance in credits', async () => {
    const session = await env.createUser();
    const first = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, {
      amount: 10,
      reason: 'welcome',
    });
    assert.equal(first.status, 200);
    assert.deepEqual(first.body, { balance: 10 });
    assert.deepEqual(
      (await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: 0.000001 })).body,
      { balance: 10.000001 },
    );
    const { transactions } = await env.service.ctx.billing.listTransactions(session.userId);
    assert.deepEqual(
      transactions.map((t) => [t.type, t.amount, t.description]),
      [
        ['grant', 0.000001, 'Operator grant'],
        ['grant', 10, 'welcome'],
      ],
    );
  });

  it('a negative amount is an adjustment that never takes more than is available', async () => {
    const session = await env.createUser();
    await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: 5 });
    await env.service.ctx.billing.placeHold({
      userId: session.userId,
      appId: null,
      keyId: null,
      amount: 2_000_000,
    });
    const tooMuch = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, {
      amount: -3.5,
      reason: 'chargeback',
    });
    assert.equal(tooMuch.status, 400);
    assert.deepEqual(tooMuch.body, {
      error: {
        code: 'INVALID_REQUEST',
        message: 'The adjustment would make the available credits negative: 3 credits are available.',
        type: 'invalid_request_error',
        available: 3,
      },
    });
    const adjusted = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, {
      amount: -3,
      reason: 'chargeback',
    });
    assert.deepEqual(adjusted.body, { balance: 2 });
    assert.deepEqual(await env.service.ctx.billing.getBalance(session.userId), {
      balance: 2_000_000,
      reserved: 2_000_000,
      available: 0,
    });
  });

  it('an unknown user is a 404', async () => {
    const response = await env.admin('POST', '/api/admin/users/usr_doesnotexist/credits', { amount: 1 });
    assert.equal(response.status, 404);
    assert.deepEqual(response.body, {
      error: { code: 'NOT_FOUND', message: 'User not found.', type: 'not_found_error' },
    });
  });

  it('zero, more than 6 decimals, non-numbers and missing amounts are 400s that move nothing', async () => {
    const session = await env.createUser();
    for (const body of [
      { amount: 0 },
      { amount: 1.0000001 },
      { amount: '10' },
      { amount: null },
      {},
      { amount: 1e300 },
      { amount: 1, extra: true },
    ]) {
      const response = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, body);
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(response.body.error.code, 'INVALID_REQUEST');
      assert.equal(response.body.error.type, 'invalid_request_error');
    }
    assert.deepEqual((await env.service.ctx.billing.listTransactions(session.userId)).transactions, []);
  });

  it('only an operator token is accepted', async () => {
    const session = await env.createUser();
    const response = await env.request('POST', `/api/admin/users/${session.userId}/credits`, {
      body: { amount: 1000 },
      headers: { cookie: session.cookie, 'x-csrf-token': session.csrfToken },
    });
    assert.equal(response.status, 401);
    assert.equal((await env.service.ctx.billing.getBalance(session.userId)).balance, 0);
  });

  it('the grant-credits command gives credits to a user named by email or id, through the same code', async () => {
    const session = await env.createUser();
    // The command prints its answer as the last line (the service may log before it).
    const cli = async (...args: string[]) => {
      const { stdout } = await run(process.execPath, ['src/cli.ts', 'grant-credits', ...args], {
        cwd: new URL('../..', import.meta.url).pathname,
        env: { ...process.env, ...env.space.env(), TOLLGATE_ADMIN_TOKEN: env.adminToken },
      });
      return JSON.parse(stdout.trim().split('\n').at(-1)!);
    };
    assert.deepEqual(await cli('--email', session.email.toUpperCase(), '--amount', '2.5', '--reason', 'support'), {
      userId: session.userId,
      balance: 2.5,
    });
    // The rest in-process: starting a process per case would only repeat the start-up.
    assert.deepEqual(await grantCreditsFromCli(env.service.ctx, { user: session.userId, amount: '-0.5' }), {
      userId: session.userId,
      balance: 2,
    });
    const { transactions } = await env.service.ctx.billing.listTransactions(session.userId);
    assert.deepEqual(
      transactions.map((t) => [t.type, t.amount, t.description]),
      [
        ['adjustment', -0.5, 'Operator adjustment'],
        ['grant', 2.5, 'support'],
      ],
    );
    await assert.rejects(
      grantCreditsFromCli(env.service.ctx, { user: session.userId, amount: '1.0000001' }),
      /at most 6 decimals/,
    );
    await assert.rejects(
      grantCreditsFromCli(env.service.ctx, { user: session.userId, amount: 'ten' }),
      /--amount must be a number/,
    );
    await assert.rejects(
      grantCreditsFromCli(env.service.ctx, { email: 'nobody@example.com', amount: '1' }),
      /User not found/,
    );
  });
});
