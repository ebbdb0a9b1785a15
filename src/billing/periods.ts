/**
 * The spending-limit periods (decisions.md "Billing"), in the order holds check a subject's limits: by length,
 * so the shortest period (the one most often the first to run out) is named when several would refuse.
 */
export const LIMIT_PERIODS = ['daily', 'weekly', 'monthly', 'total'] as const;
export type LimitPeriod = (typeof LIMIT_PERIODS)[number];

/**
 * The periods that have a spend counter. A week has none: its spend is the sum of its days' counters (see
 * {@link weekDays}), read only for subjects with a weekly limit, so a call whose subjects have none writes and
 * reads what it did before weekly limits (issue 18: the hot path's statements are measured).
 */
export const COUNTER_PERIODS = ['daily', 'monthly', 'total'] as const;
export type CounterPeriod = (typeof COUNTER_PERIODS)[number];

const DAY_MS = 86_400_000;

/** Start (epoch ms) of the UTC day that contains `at`. */
export function dayStart(at: number): number {
  const date = new Date(at);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
}

/**
 * Start (epoch ms) of the week that contains `at`: its Monday at 00:00 UTC (as OpenRouter's weekly limits). The
 * one definition of the week: the limit checks, their refusal's `resetsAt`, the key's `usage_weekly` and the
 * dashboard's views all take it from here (PostgreSQL's placement functions compute the same from the day's
 * start: see pg-functions.ts WEEK_START).
 */
export function weekStart(at: number): number {
  const day = dayStart(at);
  // getUTCDay: 0 is Sunday; days since Monday are 0 on a Monday, 6 on a Sunday.
  return day - ((new Date(day).getUTCDay() + 6) % 7) * DAY_MS;
}

/**
 * The starts (epoch ms) of the daily counters whose sum is the spend of the week that contains `at`: from its
 * Monday up to and including `at`'s day. Daily counters are never deleted, so the sum is always whole.
 */
export function weekDays(at: number): { from: number; through: number } {
  return { from: weekStart(at), through: dayStart(at) };
}

/** Start (epoch ms) of the UTC month that contains `at`. */
export function monthStart(at: number): number {
  const date = new Date(at);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}

/**
 * The period of `kind` that contains `at`: its start (the key of its spend counter; 0 for `total`, which
 * never resets; a week's Monday, the first of the daily counters it sums) and when it resets (null for
 * `total`). Days start at 00:00 UTC, weeks on Monday at 00:00 UTC, months on the 1st at 00:00 UTC;
 * `Date.UTC` rolls day 32 and month 12 over, so month ends and leap days need no special case.
 */
export function periodAt(kind: LimitPeriod, at: number): { start: number; resetsAt: number | null } {
  const date = new Date(at);
  switch (kind) {
    case 'daily':
      return {
        start: dayStart(at),
        resetsAt: Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1),
      };
    case 'weekly': {
      const start = weekStart(at);
      const monday = new Date(start);
      // Date.UTC, not start + 7 days of ms: the same calendar arithmetic as the day's and month's resets.
      return {
        start,
        resetsAt: Date.UTC(monday.getUTCFullYear(), monday.getUTCMonth(), monday.getUTCDate() + 7),
      };
    }
    case 'monthly':
      return { start: monthStart(at), resetsAt: Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) };
    case 'total':
      return { start: 0, resetsAt: null };
  }
}
