export { formatDuration, percentOf, resetsIn } from '../../../packages/sdk/src/format.ts';

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

/** `3 min ago`, `2 h ago`, `5 d ago`, or `never`. */
export function ago(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return 'never';
  const seconds = Math.round((now - Date.parse(iso)) / 1000);
  if (seconds < 60) return 'just now';
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  return `${Math.floor(seconds / 86400)} d ago`;
}

/** A date and time in the reader's locale, short. */
export function when(iso: string | null | undefined): string {
  return iso ? new Date(iso).toLocaleString(undefined, { dateStyle: 'medium', timeStyle: 'short' }) : '—';
}

/** An integer with thousands separators. */
export function count(value: number): string {
  return Math.round(value).toLocaleString('en-US');
}
