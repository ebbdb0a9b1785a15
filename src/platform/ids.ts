import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyz';

/** Random url-safe text of `length` characters, drawn without modulo bias. */
export function randomText(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < 256 - (256 % ALPHABET.length)) out += ALPHABET[byte % ALPHABET.length];
      if (out.length === length) break;
    }
  }
  return out;
}

/** The id prefixes of decisions.md "Names": every id says what it is. */
export type IdPrefix = 'usr' | 'app' | 'key' | 'hold' | 'txn' | 'ses' | 'use' | 'pred' | 'whk' | 'grt';

/** A new id such as `usr_3kT9…`, 20 random characters after the prefix. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomText(20)}`;
}
