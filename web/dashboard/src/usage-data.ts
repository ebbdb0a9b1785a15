import type { UsageReport } from '@tollgate/wire';
import { api } from './api.ts';

/** `GET /api/usage`: the user's last 30 days, by model, by app, by API key and by day. */
export function loadUsage(): Promise<UsageReport> {
  return api<UsageReport>('GET', '/api/usage?days=30');
}

/** The last `days` UTC dates, oldest first, as `YYYY-MM-DD`. */
export function lastDays(days: number, now = Date.now()): string[] {
  const today = Date.UTC(new Date(now).getUTCFullYear(), new Date(now).getUTCMonth(), new Date(now).getUTCDate());
  return Array.from({ length: days }, (_, i) =>
    new Date(today - (days - 1 - i) * 86_400_000).toISOString().slice(0, 10),
  );
}

/** Spend per day over the last 30 days, zero-filled. */
export function dailySpend(report: UsageReport | undefined): Array<{ date: string; cost: number; requests: number }> {
  const byDate = new Map((report?.byDay ?? []).map((d) => [d.date, d]));
  return lastDays(30).map((date) => ({
    date,
    cost: byDate.get(date)?.cost ?? 0,
    requests: byDate.get(date)?.requests ?? 0,
  }));
}
