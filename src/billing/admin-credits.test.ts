import { it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describeEachDatabase } from '../testing/harness.ts';
import { grantCreditsFromCli } from './cli.ts';
import { randomText } from '../platform/ids.ts';

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

  it('a grant that would take the balance past the most a wallet holds exactly is a 400 that moves nothing', async () => {
    const session = await env.createUser();
    const first = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: 8_000_000_000 });
    assert.equal(first.status, 200, first.text);
    const second = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: 8_000_000_000 });
    assert.equal(second.status, 400, second.text);
    assert.equal(second.body.error.code, 'INVALID_REQUEST');
    assert.equal(
      second.body.error.message,
      'The grant would take the balance past 8,589,934,592 credits, the most a wallet holds: it holds 8000000000 credits.',
    );
    // The wallet stays readable and exact (it was a 500 on every read once past 2^53 micro-credits).
    const balance = await env.dashboard(session, 'GET', '/api/wallet/balance');
    assert.equal(balance.status, 200, balance.text);
    assert.equal(balance.body.balance, 8_000_000_000);
    assert.equal((await env.service.ctx.billing.listTransactions(session.userId)).transactions.length, 1);
  });

  it('8,589,934,592 credits is granted to the micro-credit, and one micro-credit more is refused with the rule', async () => {
    // Past 2^33 credits a micro-credit amount may share its JSON number with a neighbour: 8589934592.000001
    // reads as 8,589,934,592.000002 credits (and 9007199254.123456 was granted as 9,007,199,254.123455).
    const session = await env.createUser();
    for (const amount of [8_589_934_592.000001, -8_589_934_592.000001, 9_007_199_254.123456]) {
      const refused = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount });
      assert.equal(refused.status, 400, refused.text);
      assert.deepEqual(refused.body.error, {
        code: 'INVALID_REQUEST',
        message: 'amount must be a non-zero number of credits with at most 6 decimals and at most 8,589,934,592.',
        type: 'invalid_request_error',
      });
    }
    assert.deepEqual((await env.service.ctx.billing.listTransactions(session.userId)).transactions, []);
    // From 2^51 to 2^52 micro-credits the parse rounded a quarter of the amounts to their neighbour.
    const halves = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, {
      amount: 4_342_521_359.759752,
    });
    assert.equal(halves.status, 200, halves.text);
    assert.equal(halves.body.balance, 4_342_521_359.759752);
    const back = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, {
      amount: -4_342_521_359.759752,
    });
    assert.equal(back.status, 200, back.text);
    assert.equal(back.body.balance, 0);
    const most = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, {
      amount: 8_589_934_591.999999,
    });
    assert.equal(most.status, 200, most.text);
    assert.equal(most.body.balance, 8_589_934_591.999999);
    const last = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: 0.000001 });
    assert.equal(last.status, 200, last.text);
    assert.equal(last.body.balance, 8_589_934_592);
    const balance = await env.dashboard(session, 'GET', '/api/wallet/balance');
    assert.equal(balance.body.balance, 8_589_934_592);
    const { transactions } = await env.service.ctx.billing.listTransactions(session.userId);
    assert.deepEqual(
      transactions.map((t) => t.amount).sort((a, b) => a - b),
      [-4_342_521_359.759752, 0.000001, 4_342_521_359.759752, 8_589_934_591.999999],
    );
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

  /** A credit request with the operator token and an `Idempotency-Key`. */
  const credit = (userId: string, key: string, body: unknown) =>
    env.request('POST', `/api/admin/users/${userId}/credits`, {
      token: env.adminToken,
      body,
      headers: { 'idempotency-key': key },
    });

  it('a grant retried with the same Idempotency-Key credits once and answers the first balance again, marked replayed', async () => {
    const session = await env.createUser();
    const key = `grant-${randomText(12)}`;
    const first = await credit(session.userId, key, { amount: 10, reason: 'invoice 42' });
    assert.equal(first.status, 200, first.text);
    assert.deepEqual(first.body, { balance: 10 });
    assert.equal(first.headers.get('idempotent-replayed'), null);
    // Another grant in between: the retry still answers what the first request answered.
    await env.admin('POST', `/api/admin/users/${session.userId}/credits`, { amount: 1 });
    const retried = await credit(session.userId, key, { amount: 10, reason: 'invoice 42' });
    assert.equal(retried.status, 200, retried.text);
    assert.deepEqual(retried.body, { balance: 10 });
    assert.equal(retried.headers.get('idempotent-replayed'), 'true');
    assert.equal((await env.service.ctx.billing.getBalance(session.userId)).balance, 11_000_000);
    const { transactions } = await env.service.ctx.billing.listTransactions(session.userId);
    assert.deepEqual(
      transactions.map((t) => [t.type, t.amount]),
      [
        ['grant', 1],
        ['grant', 10],
      ],
    );
  });

  it('twenty copies of one keyed grant sent at once credit once, each answered the same balance', async () => {
    const session = await env.createUser();
    const key = `burst-${randomText(12)}`;
    const answers = await Promise.all(
      Array.from({ length: 20 }, () => credit(session.userId, key, { amount: 2.5, reason: 'retry storm' })),
    );
    for (const answer of answers) assert.deepEqual([answer.status, answer.body], [200, { balance: 2.5 }]);
    assert.equal(answers.filter((answer) => answer.headers.get('idempotent-replayed') === 'true').length, 19);
    assert.equal((await env.service.ctx.billing.getBalance(session.userId)).balance, 2_500_000);
    assert.equal((await env.service.ctx.billing.verify()).ok, true);
  });

  it('a key used again for another request is a 422 that moves nothing, for another amount, reason, sign or user', async () => {
    const session = await env.createUser();
    const other = await env.createUser();
    const key = `once-${randomText(12)}`;
    assert.equal((await credit(session.userId, key, { amount: 5, reason: 'a' })).status, 200);
    for (const [userId, body] of [
      [session.userId, { amount: 6, reason: 'a' }],
      [session.userId, { amount: 5, reason: 'b' }],
      [session.userId, { amount: 5 }],
      [session.userId, { amount: -5, reason: 'a' }],
      [other.userId, { amount: 5, reason: 'a' }],
    ] as const) {
      const refused = await credit(userId, key, body);
      assert.equal(refused.status, 422, JSON.stringify(body));
      assert.equal(refused.body.error.code, 'IDEMPOTENCY_KEY_REUSED');
      assert.equal(refused.body.error.type, 'invalid_request_error');
      assert.match(refused.body.error.message, /used for another request/);
    }
    assert.equal((await env.service.ctx.billing.getBalance(session.userId)).balance, 5_000_000);
    assert.equal((await env.service.ctx.billing.getBalance(other.userId)).balance, 0);
  });

  it('one key sent at once for two users credits only one of them', async () => {
    const [a, b] = [await env.createUser(), await env.createUser()];
    const key = `race-${randomText(12)}`;
    const answers = await Promise.all(
      [a, b, a, b, a, b].map((user) => credit(user.userId, key, { amount: 3, reason: 'race' })),
    );
    const credited = [a, b].map((user) =>
      answers.some((answer, i) => i % 2 === (user === a ? 0 : 1) && answer.status === 200),
    );
    assert.equal(credited.filter(Boolean).length, 1, JSON.stringify(answers.map((answer) => answer.status)));
    for (const answer of answers) assert.ok([200, 422].includes(answer.status), answer.text);
    const balances = [
      (await env.service.ctx.billing.getBalance(a.userId)).balance,
      (await env.service.ctx.billing.getBalance(b.userId)).balance,
    ].sort();
    assert.deepEqual(balances, [0, 3_000_000]);
    assert.equal((await env.service.ctx.billing.verify()).ok, true);
  });

  it('an Idempotency-Key that is empty, too long or not printable ASCII is a 400 that moves nothing', async () => {
    const session = await env.createUser();
    for (const key of ['', 'k'.repeat(256), 'clé-é', 'two words']) {
      const refused = await credit(session.userId, key, { amount: 1 });
      assert.equal(refused.status, 400, JSON.stringify(key));
      assert.equal(refused.body.error.code, 'INVALID_REQUEST');
    }
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
    // A script run twice with its key credits once.
    const keyed = { user: session.userId, amount: '4', 'idempotency-key': `cli-${randomText(8)}` };
    assert.deepEqual(await grantCreditsFromCli(env.service.ctx, keyed), { userId: session.userId, balance: 6 });
    assert.deepEqual(await grantCreditsFromCli(env.service.ctx, keyed), {
      userId: session.userId,
      balance: 6,
      replayed: true,
    });
    await assert.rejects(
      grantCreditsFromCli(env.service.ctx, { ...keyed, 'idempotency-key': 'two words' }),
      /--idempotency-key must be/,
    );
  });
});
