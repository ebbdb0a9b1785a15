import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { allTables } from '../testing/all-tables.ts';
import { insertApiKey, insertUser } from './testing/fixtures.ts';
import { accounts } from './ledger.ts';
import { verifyLedger, type LedgerDifference } from './verify.ts';

const CREDIT = 1_000_000;

describeEachDatabase('ledger verification', (env) => {
  const billing = () => env.service.ctx.billing;
  const db = () => allTables(env.service.ctx.db);

  /** A user with a grant, a hold settled for part of it and a hold released: nine entries on their accounts. */
  async function userWithMovements(): Promise<string> {
    const userId = await insertUser(env.service.ctx);
    await billing().grant(userId, 5 * CREDIT, 'welcome');
    const settled = await billing().placeHold({ userId, appId: null, keyId: null, amount: 2 * CREDIT });
    await billing().settleHold(settled.holdId, 1_250_000);
    const released = await billing().placeHold({ userId, appId: null, keyId: null, amount: CREDIT });
    await billing().releaseHold(released.holdId);
    return userId;
  }

  /** Writes an entry into `userId`'s grant movement behind billing's back (as a bug would); returns the movement. */
  async function slipEntryIntoGrant(userId: string, account: string, amount: number) {
    const grant = await db()
      .selectFrom('ledger_transactions')
      .select(['id', 'created_at'])
      .where('user_id', '=', userId)
      .where('type', '=', 'grant')
      .executeTakeFirstOrThrow();
    await db()
      .insertInto('ledger_entries')
      .values({ transaction_id: grant.id, account, amount, created_at: grant.created_at })
      .execute();
    return grant;
  }

  const kindsFor = (differences: LedgerDifference[], subject: string) =>
    differences
      .filter((difference) => difference.subject === subject)
      .map((difference) => difference.kind)
      .sort();

  it("one user's check sums exactly that user's entries, found through their movements", async () => {
    const userId = await userWithMovements();
    const other = await userWithMovements();
    const mine = await billing().verify({ userId });
    // grant 1 (the user's side), hold 2, settle 2 (held out, the rest back), hold 2, release 2.
    assert.deepEqual(
      { ok: mine.ok, wallets: mine.wallets, entries: mine.entries },
      { ok: true, wallets: 1, entries: 9 },
    );
    assert.equal((await billing().verify({ userId: other })).entries, 9);
    assert.equal((await billing().verify()).ok, true);
  });

  it("a wallet whose cached balance disagrees with its entries is reported by the user's check and the whole one", async () => {
    const userId = await userWithMovements();
    const bystander = await userWithMovements();
    await db()
      .updateTable('wallets')
      .set((eb) => ({ balance: eb('balance', '+', 1) }))
      .where('user_id', '=', userId)
      .execute();
    const mine = await billing().verify({ userId });
    assert.equal(mine.ok, false);
    assert.deepEqual(kindsFor(mine.differences, userId), ['wallet_balance']);
    assert.deepEqual(kindsFor((await billing().verify()).differences, userId), ['wallet_balance']);
    assert.equal((await billing().verify({ userId: bystander })).ok, true);
  });

  it("an entry slipped into a user's movement is reported as an unbalanced movement and as the user's balances", async () => {
    const userId = await userWithMovements();
    const grant = await slipEntryIntoGrant(userId, accounts.held(userId), 7);
    const mine = await billing().verify({ userId });
    assert.equal(mine.ok, false);
    assert.equal(mine.entries, 10);
    assert.deepEqual(kindsFor(mine.differences, userId), ['wallet_balance', 'wallet_reserved']);
    assert.deepEqual(kindsFor(mine.differences, grant.id), ['unbalanced_transaction']);
    const whole = await billing().verify();
    assert.deepEqual(kindsFor(whole.differences, grant.id), ['unbalanced_transaction']);
    assert.deepEqual(kindsFor(whole.differences, 'ledger'), ['ledger_total']);
  });

  it("an entry on a user's account in another user's movement is reported as a foreign entry, by the operator's route too", async () => {
    const owner = await userWithMovements();
    const victim = await userWithMovements();
    const grant = await slipEntryIntoGrant(owner, accounts.available(victim), 0);
    const subject = `${grant.id} ${accounts.available(victim)}`;
    assert.deepEqual(kindsFor((await billing().verify()).differences, subject), ['foreign_entry']);
    const route = await env.admin('GET', '/api/admin/ledger/verify');
    assert.equal(route.status, 200);
    assert.deepEqual(kindsFor(route.body.differences, subject), ['foreign_entry']);
    assert.deepEqual(kindsFor((await billing().verify({ userId: owner })).differences, subject), ['foreign_entry']);
    assert.equal((await billing().verify({ userId: victim })).ok, true);
  });

  it('the spend counters are checked against every hold when the holds are read a few at a time', async () => {
    const ctx = env.service.ctx;
    const userId = await insertUser(ctx);
    const keyId = await insertApiKey(ctx, userId, { limit: 100 * CREDIT, period: 'daily' });
    await billing().grant(userId, 50 * CREDIT, 'welcome');
    // Seven holds on the key: five settled, one released, one left open.
    for (let i = 0; i < 7; i++) {
      const { holdId } = await billing().placeHold({ userId, appId: null, keyId, amount: CREDIT });
      if (i < 5) await billing().settleHold(holdId, 300_000 + i);
      else if (i === 5) await billing().releaseHold(holdId);
    }
    for (const holdsPerRead of [1, 2, 3, 7, 50])
      assert.equal((await verifyLedger(ctx, { userId, holdsPerRead })).ok, true, `read ${holdsPerRead} at a time`);
    await db()
      .updateTable('spend_counters')
      .set((eb) => ({ spent: eb('spent', '+', 1) }))
      .where('subject', '=', `key:${keyId}`)
      .where('period', '=', 'total')
      .execute();
    for (const holdsPerRead of [2, 50]) {
      const report = await verifyLedger(ctx, { userId, holdsPerRead });
      assert.deepEqual(
        report.differences.map((difference) => difference.kind),
        ['spend_counter'],
        `read ${holdsPerRead} at a time`,
      );
    }
  });
});
