import { it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { describeEachDatabase } from '../testing/harness.ts';
import { ApiError } from '../platform/errors.ts';
import { microsToCredits } from '../platform/money.ts';
import { LIMIT_PERIODS, periodAt, type LimitPeriod } from './periods.ts';
import { listAuthorizedApps } from '../oauth/authorized-apps.ts';
import { authorizeApp, insertUser } from './testing/fixtures.ts';
import { allTables } from '../testing/all-tables.ts';

/** A step of a random history. `pick` chooses among the holds placed so far. */
type Step =
  | { kind: 'grant'; amount: number }
  | { kind: 'adjust'; amount: number }
  | { kind: 'hold'; amount: number; viaApp: boolean; ttlMs: number }
  | { kind: 'settle'; pick: number; actual: 'less' | 'equal' | 'more'; fraction: number }
  | { kind: 'release'; pick: number }
  | { kind: 'expire'; advanceMs: number }
  | { kind: 'refund'; pick: number; fraction: number };

// Mostly round amounts (tenths of a credit), so that holds land exactly on limits and balances often;
// sometimes any micro-credit amount.
const micros = (maxTenths: number) =>
  fc.oneof(
    { arbitrary: fc.integer({ min: 0, max: maxTenths }).map((n) => n * 100_000), weight: 3 },
    fc.integer({ min: 0, max: maxTenths * 100_000 }),
  );

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant('grant' as const), amount: micros(30).filter((n) => n > 0) }),
  fc.record({
    kind: fc.constant('adjust' as const),
    amount: fc
      .tuple(micros(20), fc.boolean())
      .map(([n, negative]) => (negative ? -n : n))
      .filter((n) => n !== 0),
  }),
  {
    arbitrary: fc.record({
      kind: fc.constant('hold' as const),
      amount: micros(20),
      viaApp: fc.boolean(),
      ttlMs: fc.integer({ min: 1_000, max: 3_600_000 }),
    }),
    weight: 3,
  },
  {
    arbitrary: fc.record({
      kind: fc.constant('settle' as const),
      pick: fc.nat(),
      actual: fc.constantFrom('less' as const, 'equal' as const, 'more' as const),
      fraction: fc.double({ min: 0, max: 1, noNaN: true }),
    }),
    weight: 2,
  },
  fc.record({ kind: fc.constant('release' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('expire' as const), advanceMs: fc.integer({ min: 0, max: 7_200_000 }) }),
  fc.record({
    kind: fc.constant('refund' as const),
    pick: fc.nat(),
    fraction: fc.double({ min: 0, max: 1, noNaN: true }),
  }),
);

const limit = fc.option(micros(60), { nil: null, freq: 2 });

/** The simple model: a wallet, the holds, and the app's spend derived from them. */
interface ModelHold {
  id: string;
  amount: number;
  viaApp: boolean;
  status: 'open' | 'settled' | 'released' | 'expired';
  captured: number;
  refunded: number;
  createdAt: number;
  expiresAt: number;
}

class Model {
  balance = 0;
  reserved = 0;
  holds: ModelHold[] = [];
  readonly limits: Record<LimitPeriod, number | null>;
  constructor(limits: Record<LimitPeriod, number | null>) {
    this.limits = limits;
  }

  get available() {
    return this.balance - this.reserved;
  }

  close(hold: ModelHold, status: ModelHold['status'], captured: number) {
    hold.status = status;
    hold.captured = captured;
    this.reserved -= hold.amount;
    this.balance -= captured;
  }

  expireDue(now: number) {
    for (const hold of this.holds) if (hold.status === 'open' && hold.expiresAt <= now) this.close(hold, 'expired', 0);
  }

  /** Spent (net captures) and held by the app's holds placed in the period of `kind` that contains `now`. */
  appSpend(kind: LimitPeriod, now: number) {
    const start = periodAt(kind, now).start;
    let spent = 0;
    let held = 0;
    for (const hold of this.holds) {
      if (!hold.viaApp || periodAt(kind, hold.createdAt).start !== start) continue;
      if (hold.status === 'open') held += hold.amount;
      spent += hold.captured - hold.refunded;
    }
    return { spent, held };
  }

  /** What placing a hold must answer: null when it is placed, else the refusal's code and extra fields. */
  expectHold(amount: number, viaApp: boolean, now: number): { code: string; details: Record<string, unknown> } | null {
    this.expireDue(now);
    if (viaApp) {
      for (const kind of LIMIT_PERIODS) {
        const max = this.limits[kind];
        if (max === null) continue;
        const { spent, held } = this.appSpend(kind, now);
        if (spent + held + amount > max) {
          const resetsAt = periodAt(kind, now).resetsAt;
          return {
            code: 'SPENDING_LIMIT_EXCEEDED',
            details: {
              limitType: kind,
              limit: microsToCredits(max),
              current: microsToCredits(spent + held),
              requested: microsToCredits(amount),
              ...(resetsAt === null ? {} : { resetsAt: new Date(resetsAt).toISOString() }),
            },
          };
        }
      }
    }
    if (this.available < amount)
      return {
        code: 'INSUFFICIENT_CREDITS',
        details: { available: microsToCredits(this.available), required: microsToCredits(amount) },
      };
    return null;
  }
}

function detailsOf(error: ApiError): { code: string; details: Record<string, unknown> } {
  return { code: error.code, details: error.details };
}

describeEachDatabase(
  'the ledger against a model (property-based)',
  (env) => {
    it('random histories of grant, adjustment, hold, settle, release, expiry and refund keep every invariant', async () => {
      const ctx = env.service.ctx;
      const billing = ctx.billing;
      const sweep = ctx.jobs.get('release-expired-holds')!;
      const clock = env.manualClock;

      await fc.assert(
        fc.asyncProperty(
          fc.record({ daily: limit, weekly: limit, monthly: limit, total: limit }),
          fc.array(step, { minLength: 1, maxLength: 14 }),
          async (limits, steps) => {
            const userId = await insertUser(ctx);
            const appId = await authorizeApp(ctx, userId, limits);
            const model = new Model(limits);

            for (const s of steps) {
              const pick = 'pick' in s && model.holds.length ? model.holds[s.pick % model.holds.length] : null;
              switch (s.kind) {
                case 'grant':
                  assert.deepEqual(await billing.grant(userId, s.amount, 'grant'), {
                    balance: (model.balance += s.amount),
                  });
                  break;
                case 'adjust': {
                  const outcome = await billing.adjust(userId, s.amount, 'adjust').then(
                    (r) => r,
                    (e: ApiError) => e,
                  );
                  if (model.available + s.amount < 0)
                    assert.ok(outcome instanceof ApiError && outcome.code === 'INVALID_REQUEST');
                  else assert.deepEqual(outcome, { balance: (model.balance += s.amount) });
                  break;
                }
                case 'hold': {
                  const now = clock.now();
                  const expected = model.expectHold(s.amount, s.viaApp, now);
                  const outcome = await billing
                    .placeHold({
                      userId,
                      appId: s.viaApp ? appId : null,
                      keyId: null,
                      amount: s.amount,
                      ttlMs: s.ttlMs,
                    })
                    .then(
                      (r) => r,
                      (e: unknown) => e,
                    );
                  if (expected) {
                    assert.ok(outcome instanceof ApiError, `expected ${expected.code}, the hold was placed`);
                    assert.deepEqual(detailsOf(outcome), expected);
                  } else {
                    assert.ok(!(outcome instanceof Error), `expected a hold, got ${outcome}`);
                    const { holdId, expiresAt } = outcome as { holdId: string; expiresAt: number };
                    assert.equal(expiresAt, now + s.ttlMs);
                    model.holds.push({
                      id: holdId,
                      amount: s.amount,
                      viaApp: s.viaApp,
                      status: 'open',
                      captured: 0,
                      refunded: 0,
                      createdAt: now,
                      expiresAt,
                    });
                    model.reserved += s.amount;
                  }
                  break;
                }
                case 'settle': {
                  if (!pick) break;
                  const actual =
                    s.actual === 'equal'
                      ? pick.amount
                      : s.actual === 'less'
                        ? Math.floor(pick.amount * s.fraction)
                        : pick.amount + 1 + Math.floor(1_000_000 * s.fraction);
                  const open = pick.status === 'open';
                  const captured = open ? Math.min(actual, pick.amount) : 0;
                  assert.deepEqual(await billing.settleHold(pick.id, actual), { settled: open, captured });
                  if (open) model.close(pick, 'settled', captured);
                  break;
                }
                case 'release': {
                  if (!pick) break;
                  const open = pick.status === 'open';
                  assert.deepEqual(await billing.releaseHold(pick.id), { released: open });
                  if (open) model.close(pick, 'released', 0);
                  break;
                }
                case 'expire':
                  clock.advance(s.advanceMs);
                  await sweep.run();
                  model.expireDue(clock.now());
                  break;
                case 'refund': {
                  if (!pick) break;
                  const refundable = pick.captured - pick.refunded;
                  const amount = Math.max(1, Math.floor(refundable * s.fraction));
                  const outcome = await billing.refund(pick.id, amount, 'refund').then(
                    (r) => r,
                    (e: ApiError) => e,
                  );
                  if (amount > refundable) {
                    assert.ok(outcome instanceof ApiError && outcome.code === 'INVALID_REQUEST');
                  } else {
                    pick.refunded += amount;
                    model.balance += amount;
                    assert.deepEqual(outcome, { refunded: amount, balance: model.balance });
                  }
                  break;
                }
              }

              // Invariants after every step.
              const wallet = await billing.getBalance(userId);
              assert.deepEqual(wallet, {
                balance: model.balance,
                reserved: model.reserved,
                available: model.available,
              });
              assert.ok(wallet.available >= 0 && wallet.reserved >= 0, 'available and reserved never below zero');
              const report = await billing.verify({ userId });
              assert.ok(report.ok, `ledger differs: ${JSON.stringify(report)}`);
              const [app] = await listAuthorizedApps(ctx, userId, appId);
              const now = clock.now();
              for (const kind of LIMIT_PERIODS) {
                const view = app.limits[kind];
                if (limits[kind] === null) {
                  assert.equal(view, null);
                  continue;
                }
                const { spent, held } = model.appSpend(kind, now);
                assert.deepEqual([view!.spent, view!.reserved], [microsToCredits(spent), microsToCredits(held)]);
                assert.ok(spent + held <= limits[kind]!, `spent in the ${kind} period is above its limit`);
              }
            }

            // Every hold ends as the model says: status, never a negative amount, never more captured than held.
            const rows = await allTables(ctx.db)
              .selectFrom('holds')
              .select(['id', 'amount', 'status', 'captured', 'refunded'])
              .where('user_id', '=', userId)
              .execute();
            assert.deepEqual(
              rows.map((r) => [r.id, r.amount, r.status, r.captured, r.refunded]).sort(),
              model.holds.map((h) => [h.id, h.amount, h.status, h.captured, h.refunded]).sort(),
            );
          },
        ),
        { numRuns: 100 },
      );

      const report = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(report.status, 200);
      assert.equal(report.body.ok, true, JSON.stringify(report.body));
    });
  },
  { manualClock: '2026-03-10T21:00:00.000Z' },
);
