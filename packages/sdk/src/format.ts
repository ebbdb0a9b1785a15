/** Text the dialogs (and apps) show for amounts and times. */

/**
 * Credits exactly as the wallet holds them: at least two decimals, and as many more (up to the six of a
 * micro-credit) as the amount has, so nothing is ever rounded, least of all a balance up: 9.999956 shows
 * 9.999956, not 10.00. `2.50`, `1,234.00`, `0.0004`.
 */
export function formatCredits(credits: number): string {
  if (!Number.isFinite(credits)) return '—';
  // Amounts are whole micro-credits; toFixed(6) undoes binary noise without rounding any real digit away.
  const [whole, fraction] = Math.abs(credits).toFixed(6).split('.') as [string, string];
  const digits = fraction.replace(/0+$/, '').padEnd(2, '0');
  const sign = credits < 0 && Number(`${whole}.${fraction}`) !== 0 ? '-' : '';
  return `${sign}${Number(whole).toLocaleString('en-US')}.${digits}`;
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
