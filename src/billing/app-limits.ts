import { microsToCredits } from '../platform/money.ts';
import { readLimits, readSpends, subjectKey, writeLimits } from './limits.ts';
import { periodAt, type LimitPeriod } from './periods.ts';
import type { BillingContext } from './ledger.ts';
import { billingDb } from './schema.ts';

/** One of an app's limits for a user, as `GET /api/user/authorized-apps` shows it (credits). */
export interface LimitView {
  limit: number;
  /** Captured in the current period (net of refunds). */
  spent: number;
  /** Held by the app's open holds placed in the current period. */
  reserved: number;
  /** When the current period ends; null for `total`. */
  resetsAt: string | null;
}

/** An app's limits for one user, per period, as `GET /api/user/authorized-apps` shows them (null: no limit). */
export type AppLimitViews = Record<LimitPeriod, LimitView | null>;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/**
 * The user's limits for each of `clientIds` (in that order), with what is spent and held against each in
 * its current period: billing's half of the authorized-apps view (oauth lists the apps).
 */
export async function appLimitViews(
  ctx: BillingContext,
  userId: string,
  clientIds: string[],
): Promise<AppLimitViews[]> {
  const subjects = clientIds.map((clientId) => ({ kind: 'app' as const, userId, appId: clientId }));
  const limits = await readLimits(billingDb(ctx.db), subjects);

  const now = ctx.clock.now();
  const limited = subjects.filter((subject) =>
    Object.values(limits.get(subjectKey(subject))!).some((limit) => limit !== null),
  );
  const spends = await readSpends(billingDb(ctx.db), limited, now);
  return subjects.map((subject) => {
    const configured = limits.get(subjectKey(subject))!;
    const spend = spends.get(subjectKey(subject));
    const view = (period: LimitPeriod): LimitView | null => {
      const limit = configured[period];
      if (limit === null || !spend) return null;
      return {
        limit: microsToCredits(limit),
        spent: microsToCredits(spend[period].spent),
        reserved: microsToCredits(spend[period].held),
        resetsAt: iso(periodAt(period, now).resetsAt),
      };
    };
    return { daily: view('daily'), weekly: view('weekly'), monthly: view('monthly'), total: view('total') };
  });
}

/**
 * Sets or removes the user's limits for an app (micro-credits; null removes; a period left out keeps its
 * limit). The caller checks that the user authorized the app (oauth does, see oauth/authorized-apps.ts).
 */
export async function setAppLimits(
  ctx: BillingContext,
  userId: string,
  clientId: string,
  changes: Partial<Record<LimitPeriod, number | null>>,
): Promise<void> {
  await writeLimits(billingDb(ctx.db), { kind: 'app', userId, appId: clientId }, changes);
}
