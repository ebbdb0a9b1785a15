import Type from 'typebox';
import { errors } from '../platform/errors.ts';
import { CREDITS_RULE } from '../platform/money.ts';
import type { Principal } from '../platform/http/principal.ts';
import { refuseUnknownFields as refuseUnknownBodyFields } from '../platform/http/unknown-fields.ts';
import { isModelEntry, MAX_KEY_MODEL_LENGTH, MAX_KEY_MODELS, MODEL_ENTRY_RULE } from '../models/allowed.ts';
import { KEY_PERMISSIONS } from './permissions.ts';

/*
 * The fields a key is created and changed with, read the same way by both routes: the texts a person acts on
 * (not the validator's) and the security invariant on permissions.
 */

/** Longest key name, in characters. */
export const NAME_MAX_LENGTH = 100;

/** How far ahead a key's expiry may be set: 10 years (3,653 days, leap days included). */
export const MAX_KEY_LIFETIME_MS = 3653 * 86_400_000;
export const MAX_KEY_LIFETIME_TEXT = '10 years';

/** RFC 3339 (ISO 8601 with seconds and a time zone): the only form `expiresAt` takes, so no time is guessed. */
const TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})T(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d{1,9})?(?:Z|[+-](?:[01]\d|2[0-3]):[0-5]\d)$/i;
export const TIMESTAMP_RULE = 'an ISO 8601 timestamp with seconds and a time zone, such as 2027-01-31T00:00:00Z';

/**
 * An `expiresAt` as epoch ms: null when absent or null; a 400 saying what to send when it is not a real
 * timestamp (with its time zone), has passed (or is `now`), or lies more than {@link MAX_KEY_LIFETIME_MS} ahead.
 */
export function parseExpiresAt(value: unknown, now: number): number | null {
  if (value === undefined || value === null) return null;
  const match = typeof value === 'string' ? TIMESTAMP.exec(value) : null;
  const at = match ? Date.parse(value as string) : NaN;
  // Date.parse rolls 30 February over into March: a day the month does not have is refused, not moved.
  const [, year, month, day] = match ?? [];
  const realDay =
    match !== null && new Date(Date.UTC(Number(year), Number(month) - 1, Number(day))).getUTCDate() === Number(day);
  if (!realDay || Number.isNaN(at)) throw errors.invalid(`expiresAt must be ${TIMESTAMP_RULE}`);
  if (at <= now) {
    throw errors.invalid(
      `expiresAt must be in the future: ${new Date(at).toISOString()} has passed (it is now ${new Date(now).toISOString()})`,
    );
  }
  if (at - now > MAX_KEY_LIFETIME_MS) {
    throw errors.invalid(
      `expiresAt must be at most ${MAX_KEY_LIFETIME_TEXT} ahead (no later than ${new Date(now + MAX_KEY_LIFETIME_MS).toISOString()}); leave it out for a key that never expires`,
    );
  }
  return at;
}

/**
 * A `models` as stored: null when absent, null or empty (every model); else its distinct entries in the order given.
 * A 400 names the first entry that is neither a model id nor a wildcard, and says so when there are too many.
 */
export function parseModels(value: unknown): string[] | null {
  if (value === undefined || value === null) return null;
  if (!Array.isArray(value))
    throw errors.invalid(`models must be an array of model ids or vendor wildcards (such as ["openai/*"]), or null`);
  if (value.length > MAX_KEY_MODELS)
    throw errors.invalid(
      `models holds ${value.length} entries; a key takes at most ${MAX_KEY_MODELS} (a vendor wildcard such as "openai/*" covers a vendor's every model)`,
    );
  value.forEach((entry, index) => {
    if (!isModelEntry(entry))
      throw errors.invalid(
        `models[${index}] ${JSON.stringify(entry)} is not ${MODEL_ENTRY_RULE}, of at most ${MAX_KEY_MODEL_LENGTH} characters`,
      );
  });
  return value.length === 0 ? null : [...new Set(value as string[])];
}

/** A 400 naming the first field of `body` that is not one of `fields` (the validator would not say which). */
export function refuseUnknownFields(body: Record<string, unknown>, fields: readonly string[]): void {
  refuseUnknownBodyFields(body, fields, 'a key');
}

/**
 * A `name` as stored, trimmed. A name that is not text (`123`, `true`) is a 400 saying so; one absent or blank
 * a 400 with `missing` (creation's is the contract's "API key name is required").
 */
export function parseName(value: unknown, missing: string): string {
  if (value !== undefined && value !== null && typeof value !== 'string')
    throw errors.invalid(
      `name must be text (a JSON string) of 1 to ${NAME_MAX_LENGTH} characters, such as "CI deploy"; it was ${jsonKind(value)}`,
    );
  const name = typeof value === 'string' ? value.trim() : '';
  if (name === '') throw errors.invalid(missing);
  return name;
}

/** What kind of JSON value `value` is, for a refusal: "the number 123", "an object". */
function jsonKind(value: unknown): string {
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'an object';
  return `the ${typeof value} ${JSON.stringify(value)}`;
}

/**
 * A `permissions` as stored: distinct, at least one, each of contract §5.3. None (absent, null or an empty list) is
 * the contract's text; a value that is not a list (`"ai:chat"`) is told to be one.
 */
export function parsePermissions(value: unknown): string[] {
  if (value !== undefined && value !== null && !Array.isArray(value))
    throw errors.invalid(
      `permissions must be a list of permissions, such as ["ai:chat"]; it was ${jsonKind(value)}. A key can carry ${KEY_PERMISSIONS.join(', ')}`,
    );
  if (!Array.isArray(value) || value.length === 0) throw errors.invalid('At least one permission is required');
  for (const permission of value) {
    if (!(KEY_PERMISSIONS as readonly unknown[]).includes(permission)) {
      throw errors.invalid(
        `Unknown permission ${JSON.stringify(permission)}; a key can carry ${KEY_PERMISSIONS.join(', ')}`,
      );
    }
  }
  return [...new Set(value as string[])];
}

/** Security invariant: a token cannot mint a key that does more than the token itself may. */
export function requireWithinScopes(principal: Principal, permissions: readonly string[]): void {
  const beyond = permissions.filter((permission) => !principal.scopes.has(permission));
  if (beyond.length > 0) {
    throw errors.forbidden(
      `This token cannot grant ${beyond.map((p) => `"${p}"`).join(', ')}: a key's permissions must lie within the token's scopes`,
    );
  }
}

const Permission = Type.Enum(KEY_PERMISSIONS, { description: 'Contract §5.3' });
const ModelEntry = Type.String({ maxLength: MAX_KEY_MODEL_LENGTH, examples: ['openai/gpt-4o-mini', 'anthropic/*'] });

/** The schema of each field a key is created or changed with (the OpenAPI document's, and the validator's). */
export const KeyFieldSchemas = {
  name: Type.String({ minLength: 1, maxLength: NAME_MAX_LENGTH, description: 'A descriptive name' }),
  permissions: Type.Array(Permission, { minItems: 1 }),
  limit: Type.Union([Type.Number({ minimum: 0, description: `Credits ${CREDITS_RULE}` }), Type.Null()]),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: `When the key stops authenticating: ${TIMESTAMP_RULE}, in the future and at most ${MAX_KEY_LIFETIME_TEXT} ahead. Null or absent: never`,
  }),
  models: Type.Union([Type.Array(ModelEntry, { maxItems: MAX_KEY_MODELS }), Type.Null()], {
    description: `The models the key may call: up to ${MAX_KEY_MODELS} entries, each ${MODEL_ENTRY_RULE} (a deeper prefix such as openrouter/anthropic/* too). Not checked against the catalogue: an entry that matches no model allows nothing. Another model is a 403 PERMISSION_DENIED on every call, is left out of GET /api/v1/models, and is never tried as a fallback. Null, absent or empty: every model`,
  }),
};
