import { errors } from './errors.ts';

/**
 * The opaque cursor of a list's next page: a position (`seq:42`, `t:<created>:<id>`) in base64url. A position,
 * not an offset, so rows added while a user pages are not shown twice; opaque, so clients do not build them.
 */
export function encodePageCursor(position: string): string {
  return Buffer.from(position).toString('base64url');
}

/**
 * The position a cursor names, matched by `pattern` (its groups hold the parts); a cursor this API did not issue
 * is a 400 that says so.
 */
export function decodePageCursor(cursor: string, pattern: RegExp): RegExpExecArray {
  const match = pattern.exec(Buffer.from(cursor, 'base64url').toString('utf8'));
  if (!match) throw errors.invalid('The cursor is not one this API returned.');
  return match;
}
