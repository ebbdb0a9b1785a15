import { randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * The shape of an API key value: `ak_`, 40 random base62 characters (≈238 bits), then 6 base62 characters
 * of the CRC32 of those 40. The checksum is not a secret and proves nothing about authenticity; it lets a
 * typo, a truncated paste or a scanner's guess be refused without touching the database, and lets secret
 * scanners recognise a real key.
 */
export const API_KEY_PREFIX = 'ak_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const RANDOM_LENGTH = 40;
const CHECKSUM_LENGTH = 6;
const KEY_SHAPE = new RegExp(`^${API_KEY_PREFIX}([0-9A-Za-z]{${RANDOM_LENGTH}})([0-9A-Za-z]{${CHECKSUM_LENGTH}})$`);

/** `length` base62 characters from the CSPRNG, drawn by rejection so that every character is equally likely. */
function randomBase62(length: number): string {
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      // 248 = 4 × 62: bytes at or above it would favour the first characters.
      if (byte < 248) out += BASE62[byte % 62];
      if (out.length === length) break;
    }
  }
  return out;
}

/** The CRC32 of `body` in base62, left-padded to 6 characters (62^6 > 2^32, so it always fits). */
function checksumOf(body: string): string {
  let value = crc32(body);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}

/** A new key value: `ak_` + 40 random base62 characters + their 6-character checksum. */
export function generateApiKey(): string {
  const body = randomBase62(RANDOM_LENGTH);
  return API_KEY_PREFIX + body + checksumOf(body);
}

/** True when `value` has the shape of a key and its checksum matches; decides without any I/O. */
export function isWellFormedApiKey(value: string): boolean {
  const match = KEY_SHAPE.exec(value);
  return match !== null && checksumOf(match[1]) === match[2];
}
