import { randomFillSync } from 'node:crypto';

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyz';
/** Bytes at or above this are skipped: the rest divide evenly among the alphabet, so no letter is favoured. */
const UNBIASED_BELOW = 256 - (256 % ALPHABET.length);

/**
 * Random bytes drawn from the CSPRNG 4 KiB at a time: ids are made several times per request, and one
 * call into OpenSSL per id cost more than the id itself. Every byte is used once, then the pool refills.
 */
const pool = Buffer.alloc(4096);
let poolOffset = pool.length;

function randomByte(): number {
  if (poolOffset === pool.length) {
    randomFillSync(pool);
    poolOffset = 0;
  }
  return pool[poolOffset++]!;
}

/** Random url-safe text of `length` characters, drawn without modulo bias. */
export function randomText(length: number): string {
  let out = '';
  while (out.length < length) {
    const byte = randomByte();
    if (byte < UNBIASED_BELOW) out += ALPHABET[byte % ALPHABET.length];
  }
  return out;
}

/** The id prefixes of decisions.md "Names": every id says what it is. */
export type IdPrefix =
  'usr' | 'app' | 'key' | 'hold' | 'txn' | 'ses' | 'use' | 'pred' | 'whk' | 'grt' | 'wep' | 'evt' | 'msg' | 'top';

/** Characters of the time part of an id: 54^8 milliseconds reach past the year 4000. */
const TIME_LENGTH = 8;

/** `ms` in base 54, fixed width: the alphabet is in ASCII order, so the text sorts as the number does. */
function timeText(ms: number): string {
  let out = '';
  for (let rest = ms, i = 0; i < TIME_LENGTH; i++, rest = Math.floor(rest / ALPHABET.length))
    out = ALPHABET[rest % ALPHABET.length] + out;
  return out;
}

/**
 * A new id such as `hold_1Hb4kX9q…`: after the prefix, 8 characters of creation time (ms) and 12 random
 * ones (69 bits), 20 in all.
 *
 * Why time first: ids are primary keys, and ids that grow with time append to the right edge of their
 * B-tree instead of landing on a random page each. A SQLite commit writes every page it touched, so
 * random ids made each insert dirty a page of its own; sorted ids share the few last pages (a measured
 * 10–20% of a hold's place-and-settle). Ids are not secrets (secrets have their own generators); the time
 * they reveal is already in the objects' `createdAt`.
 */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${timeText(Date.now())}${randomText(12)}`;
}
