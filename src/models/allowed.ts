import type { Principal } from '../platform/http/principal.ts';
import { errors } from '../platform/errors.ts';
import { MODEL_ID_PATTERN } from './ids.ts';

/**
 * The models a credential may call: an API key created with `models` (README "API keys") carries a list of
 * catalogue ids and wildcards; every other credential (an app's OAuth token, the dashboard) none, so it may call
 * every model. One rule, used wherever a call's model is resolved for a principal (the gateway's `resolveModel`
 * and `candidatesOf`, predictions) and by `GET /api/v1/models`, so a model a key may not call is neither called,
 * held for, tried as a fallback nor listed.
 *
 * Entries are not checked against the catalogue: models come and go with syncs, and an entry that matches
 * nothing simply allows nothing.
 */

/** Most entries one key's list may hold: enough for a vendor's every model by name, bounded for the key cache. */
export const MAX_KEY_MODELS = 100;

/** Longest entry, as the realtime route bounds a model id. */
export const MAX_KEY_MODEL_LENGTH = 300;

const MODEL_ID = new RegExp(MODEL_ID_PATTERN);
/** `<vendor>/*`, or a deeper prefix (`openrouter/anthropic/*`): every id that begins with what precedes the `*`. */
const WILDCARD = /^[A-Za-z0-9][A-Za-z0-9._-]*(?:\/[^\s/*]+)*\/\*$/;

/** How an entry is written, for the 400 that refuses another. */
export const MODEL_ENTRY_RULE = 'a catalogue model id (<vendor>/<model>) or a vendor wildcard (<vendor>/*)';

/** True when `entry` has the shape of a model id without `*`, or of a wildcard `<prefix>/*`. */
export function isModelEntry(entry: unknown): entry is string {
  if (typeof entry !== 'string' || entry.length > MAX_KEY_MODEL_LENGTH) return false;
  return WILDCARD.test(entry) || (MODEL_ID.test(entry) && !entry.includes('*'));
}

/** Whether a list (undefined: no list) allows the model `id`; ids are matched exactly as the catalogue spells them. */
export function allowsModel(allowed: readonly string[] | undefined, id: string): boolean {
  if (allowed === undefined) return true;
  return allowed.some((entry) => (entry.endsWith('/*') ? id.startsWith(entry.slice(0, -1)) : entry === id));
}

/** At most this many of a key's entries are named in its 403; the rest are counted. */
const NAMED_IN_REFUSAL = 10;

/**
 * Throws 403 PERMISSION_DENIED, naming the key's models, when `principal` may not call the model `id`.
 *
 * Why 403, not the catalogue's 404 MODEL_NOT_FOUND: the model exists (the caller resolves it first, so an
 * unknown id stays a 404) and the key is the caller's own, so hiding it protects nothing (decisions.md keeps
 * 404 for other people's objects); a 404 would send its owner looking for a typo in a model id that is right,
 * when what to change is the key. The code is the one for a key lacking a permission, which this is.
 */
export function requireModelAllowed(principal: Pick<Principal, 'models'>, id: string): void {
  const allowed = principal.models;
  if (allowsModel(allowed, id)) return;
  const named = allowed!.slice(0, NAMED_IN_REFUSAL).join(', ');
  const more = allowed!.length > NAMED_IN_REFUSAL ? ` and ${allowed!.length - NAMED_IN_REFUSAL} more` : '';
  throw errors.forbidden(
    `This API key may call only ${named}${more}; "${id}" is not among them. Use a key that may (its models are set when it is created, in the dashboard's API keys).`,
  );
}
