import assert from 'node:assert/strict';
import type { DashboardSession, TestEnv } from '../../testing/harness.ts';
import { creditsToMicros } from '../../platform/money.ts';
import type { FakeStripe } from './stripe-server.ts';

/** Starts a top-up from the dashboard; resolves with its id and Checkout Session id. */
export async function startTopup(
  env: TestEnv,
  session: DashboardSession,
  amount: number,
): Promise<{ topupId: string; sessionId: string; url: string }> {
  const response = await env.dashboard(session, 'POST', '/api/wallet/topups', { amount });
  assert.equal(response.status, 201, response.text);
  return {
    topupId: response.body.topup.id,
    sessionId: new URL(response.body.url).pathname.split('/').at(-1)!,
    url: response.body.url,
  };
}

/** A top-up paid on the fake and its `checkout.session.completed` delivered; resolves with its ids. */
export async function paidTopup(
  env: TestEnv,
  fake: FakeStripe,
  session: DashboardSession,
  amount: number,
): Promise<{ topupId: string; paymentIntent: string }> {
  const started = await startTopup(env, session, amount);
  const paid = fake.pay(started.sessionId);
  const delivery = await fake.deliver(fake.event('checkout.session.completed', paid));
  assert.equal(delivery.status, 200, JSON.stringify(delivery.body));
  assert.equal(delivery.body.effect, 'credited');
  return { topupId: started.topupId, paymentIntent: paid.payment_intent };
}

/** The wallet in micro-credits, as the dashboard reads it. */
export async function walletOf(
  env: TestEnv,
  session: DashboardSession,
): Promise<{ balance: number; reserved: number; available: number }> {
  const response = await env.dashboard(session, 'GET', '/api/wallet/balance');
  assert.equal(response.status, 200, response.text);
  const micros = (credits: number) => creditsToMicros(credits)!;
  return {
    balance: micros(response.body.balance),
    reserved: micros(response.body.reserved),
    available: micros(response.body.available),
  };
}

/** The user's debt in micro-credits (read from the wallet row billing keeps). */
export async function debtOf(env: TestEnv, userId: string): Promise<number> {
  const row = await env.db.selectFrom('wallets').select('debt').where('user_id', '=', userId).executeTakeFirst();
  return Number(row?.debt ?? 0);
}

/** The user's top-up as the history shows it. */
export async function topupOf(env: TestEnv, session: DashboardSession, topupId: string): Promise<any> {
  const response = await env.dashboard(session, 'GET', '/api/wallet/topups');
  assert.equal(response.status, 200, response.text);
  return response.body.topups.find((t: { id: string }) => t.id === topupId);
}

/** Fails unless the ledger verifies, for the user and as a whole (the operator route). */
export async function assertLedgerVerifies(env: TestEnv, userId?: string): Promise<void> {
  if (userId) {
    const report = await env.service.ctx.billing.verify({ userId });
    assert.ok(report.ok, JSON.stringify(report));
  }
  const whole = await env.admin('GET', '/api/admin/ledger/verify');
  assert.equal(whole.status, 200, whole.text);
  assert.ok(whole.body.ok, whole.text);
}
