/** Text the dialogs (and apps) show for amounts and times. */

/** Credits with two decimals, or up to six when the amount is smaller than a hundredth: `2.50`, `0.0004`. */
export function formatCredits(credits: number): string {
  if (!Number.isFinite(credits)) return '—';
  const abs = Math.abs(credits);
  if (abs !== 0 && abs < 0.01) return credits.toFixed(6).replace(/0+$/, '');
  return credits.toLocaleString('en-US', { minimumFractionDigits: 2, maximumFractionDigits: 2 });
}

/** A duration in the largest two units: `3h 12m`, `2d 4h`, `45m`, `<1m`. */
export function formatDuration(ms: number): string {
  const minutes = Math.floor(Math.max(0, ms) / 60_000);
  if (minutes < 1) return '<1m';
  const days = Math.floor(minutes / 1440);
  const hours = Math.floor((minutes % 1440) / 60);
  const rest = minutes % 60;
  if (days > 0) return hours ? `${days}d ${hours}h` : `${days}d`;
  if (hours > 0) return rest ? `${hours}h ${rest}m` : `${hours}h`;
  return `${rest}m`;
}

/** `resets in 3h 12m` for an ISO timestamp, or null when there is none (a total limit never resets). */
export function resetsIn(resetsAt: string | null | undefined, now = Date.now()): string | null {
  if (!resetsAt) return null;
  const at = Date.parse(resetsAt);
  return Number.isNaN(at) ? null : `resets in ${formatDuration(at - now)}`;
}

/** The share of `total` that `part` is, clamped to 0–100. */
export function percentOf(part: number, total: number): number {
  if (!(total > 0)) return part > 0 ? 100 : 0;
  return Math.min(100, Math.max(0, (part / total) * 100));
}
