export { formatCredits, formatDuration, percentOf, resetsIn } from '../../../packages/sdk/src/format.ts';

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

/** A count with its noun, singular for exactly one: `1 request`, `0 requests`, `1,024 requests`. */
export function counted(value: number, singular: string, plural = `${singular}s`): string {
  const whole = Math.round(value);
  return `${count(whole)} ${whole === 1 ? singular : plural}`;
}
