/** The spending-limit periods (decisions.md "Billing"). */
export const LIMIT_PERIODS = ['daily', 'monthly', 'total'] as const;
export type LimitPeriod = (typeof LIMIT_PERIODS)[number];

/** Start (epoch ms) of the UTC day that contains `at`. */
export function dayStart(at: number): number {
  const date = new Date(at);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate());
}

/** Start (epoch ms) of the UTC month that contains `at`. */
export function monthStart(at: number): number {
  const date = new Date(at);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
}

/**
 * The period of `kind` that contains `at`: its start (the key of its spend counter; 0 for `total`, which
 * never resets) and when it resets (null for `total`). Days start at 00:00 UTC, months on the 1st at
 * 00:00 UTC; `Date.UTC` rolls day 32 and month 12 over, so month ends and leap days need no special case.
 */
export function periodAt(kind: LimitPeriod, at: number): { start: number; resetsAt: number | null } {
  const date = new Date(at);
  switch (kind) {
    case 'daily':
      return {
        start: dayStart(at),
        resetsAt: Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1),
      };
    case 'monthly':
      return { start: monthStart(at), resetsAt: Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1) };
    case 'total':
      return { start: 0, resetsAt: null };
  }
}
