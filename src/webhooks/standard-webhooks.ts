import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Verification of Standard Webhooks deliveries (https://www.standardwebhooks.com), the scheme Replicate signs
 * with: `webhook-signature` holds space-separated `v1,<base64 HMAC-SHA256>` entries computed over
 * `<webhook-id>.<webhook-timestamp>.<raw body>` with the key that is the base64 text after `whsec_`.
 *
 * Written here rather than taken from the `standardwebhooks` package so that the route controls every step
 * (the raw bytes, the clock, several secrets, 400 versus 401); the tests prove the two agree.
 */

/** How far a delivery's timestamp may be from now, either way. */
export const TIMESTAMP_TOLERANCE_SECONDS = 5 * 60;

/** Longest `webhook-id` accepted; real ids are ~30 characters. */
const MAX_ID_LENGTH = 256;
/** Longest `webhook-signature` header accepted (a handful of entries during a rotation). */
const MAX_SIGNATURE_HEADER_LENGTH = 4096;
const ID_PATTERN = /^[\x21-\x7e]+$/;
const TIMESTAMP_PATTERN = /^[0-9]{1,12}$/;
const SIGNATURE_ENTRY = /^([A-Za-z0-9]+),([A-Za-z0-9+/=_-]+)$/;

/** The outcome of {@link verifyWebhook}: accepted, or refused with the reason and the HTTP status it maps to. */
export type WebhookVerdict =
  | { ok: true; id: string; timestamp: number }
  /** 400: a header or the body is missing or malformed. 401: the signature or the timestamp does not verify. */
  | { ok: false; status: 400 | 401; reason: string };

/** What {@link verifyWebhook} checks: the request's headers (lower-case names, as Node gives them) and raw body. */
export interface WebhookDelivery {
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}

/**
 * Decodes the configured signing secrets (`whsec_<base64>`, several separated by white space during a
 * rotation) into HMAC keys. Throws when one is malformed, so a typo stops the start instead of silently
 * refusing every delivery.
 */
export function parseSigningSecrets(text: string | undefined): Buffer[] {
  if (!text?.trim()) return [];
  return text
    .trim()
    .split(/\s+/)
    .map((secret, index) => {
      const match = /^whsec_([A-Za-z0-9+/]+={0,2})$/.exec(secret);
      const key = match ? Buffer.from(match[1], 'base64') : Buffer.alloc(0);
      if (key.length === 0) throw new Error(`REPLICATE_WEBHOOK_SECRET: secret #${index + 1} is not "whsec_<base64>"`);
      return key;
    });
}

/** The `v1` signature of a delivery under one key, as base64 (the form the header carries). */
export function signatureV1(key: Buffer, id: string, timestamp: number, body: Buffer): string {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest('base64');
}

function singleHeader(headers: WebhookDelivery['headers'], name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
}

/**
 * Verifies one delivery against every configured key, at `nowMs` (the service clock).
 *
 * Order matters: the headers' shape first (400), then the timestamp window and the signature (401), and
 * only the caller parses the body, after an `ok` verdict. Nothing here touches storage, so a refused
 * delivery can never leave a trace.
 */
export function verifyWebhook(delivery: WebhookDelivery, keys: readonly Buffer[], nowMs: number): WebhookVerdict {
  const id = singleHeader(delivery.headers, 'webhook-id');
  const timestampText = singleHeader(delivery.headers, 'webhook-timestamp');
  const signatureHeader = singleHeader(delivery.headers, 'webhook-signature');
  if (!id || !timestampText || !signatureHeader) {
    return {
      ok: false,
      status: 400,
      reason: 'The webhook-id, webhook-timestamp and webhook-signature headers are all required.',
    };
  }
  if (id.length > MAX_ID_LENGTH || !ID_PATTERN.test(id))
    return { ok: false, status: 400, reason: 'The webhook-id header is malformed.' };
  if (!TIMESTAMP_PATTERN.test(timestampText))
    return { ok: false, status: 400, reason: 'The webhook-timestamp header must be whole seconds since the epoch.' };
  if (signatureHeader.length > MAX_SIGNATURE_HEADER_LENGTH)
    return { ok: false, status: 400, reason: 'The webhook-signature header is too long.' };
  const entries = signatureHeader
    .split(' ')
    .filter(Boolean)
    .map((entry) => SIGNATURE_ENTRY.exec(entry));
  if (entries.length === 0 || entries.some((entry) => entry === null)) {
    return {
      ok: false,
      status: 400,
      reason: 'The webhook-signature header must be space-separated "<version>,<base64>" entries.',
    };
  }
  if (!Buffer.isBuffer(delivery.body) || delivery.body.length === 0)
    return { ok: false, status: 400, reason: 'The webhook body is missing.' };

  // A replay of an old (or a pre-dated) delivery is refused even when its signature is genuine.
  const timestamp = Number(timestampText);
  if (Math.abs(Math.floor(nowMs / 1000) - timestamp) > TIMESTAMP_TOLERANCE_SECONDS) {
    return { ok: false, status: 401, reason: 'The webhook timestamp is more than 5 minutes away from now.' };
  }

  // Signatures are compared as base64 text, like the reference library, so a non-canonical encoding of the
  // right bytes does not pass; the HMAC covers the raw bytes (not a decoded string), so no two bodies share
  // one signature. Every entry is compared against every key in constant time; other versions are skipped.
  const offered = entries.filter((entry) => entry![1] === 'v1').map((entry) => Buffer.from(entry![2]));
  let verified = false;
  for (const key of keys) {
    const expected = Buffer.from(signatureV1(key, id, timestamp, delivery.body));
    for (const candidate of offered) {
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) verified = true;
    }
  }
  if (!verified) return { ok: false, status: 401, reason: 'No webhook signature matches a configured secret.' };
  return { ok: true, id, timestamp };
}

/** A new Standard Webhooks signing secret: `whsec_` and 32 random bytes in base64 (what {@link parseSigningSecrets} reads). */
export function newSigningSecret(): string {
  return `whsec_${randomBytes(32).toString('base64')}`;
}

/**
 * The `webhook-signature` header of an outbound delivery: one `v1,<base64>` entry per key (several while a
 * secret is rotated, so a receiver that holds either one verifies), computed as {@link verifyWebhook} checks.
 */
export function signatureHeader(keys: readonly Buffer[], id: string, timestamp: number, body: Buffer): string {
  return keys.map((key) => `v1,${signatureV1(key, id, timestamp, body)}`).join(' ');
}
