import type { FastifyRequest } from 'fastify';
import { errors } from '../errors.ts';

const NUL = '\u0000';

/**
 * An object whose entries are searched: parsed JSON, a form, a route's parameters or query (the last three
 * of prototypes of their own). A raw body (a Buffer, which the signed webhooks read) is bytes, not text.
 */
function isSearchedObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !ArrayBuffer.isView(value);
}

/**
 * Where the first NUL character (U+0000) in `value` is, as a path (`/name`, `/items/2/text`; `''` for `value`
 * itself), or null when there is none. Keys are searched as well as strings. Walks with a stack of its own,
 * not by recursion, since a JSON body may nest a million levels deep within its size limit.
 */
export function findNulCharacter(value: unknown): string | null {
  type Entry = { value: unknown; key: string; parent: Entry | null };
  const pathOf = (entry: Entry | null): string => {
    const keys: string[] = [];
    for (let at = entry; at?.parent; at = at.parent) keys.push(at.key);
    return keys
      .reverse()
      .map((key) => `/${key}`)
      .join('');
  };
  const stack: Entry[] = [{ value, key: '', parent: null }];
  while (stack.length > 0) {
    const entry = stack.pop()!;
    const current = entry.value;
    if (typeof current === 'string') {
      if (current.includes(NUL)) return pathOf(entry);
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push({ value: current[i], key: String(i), parent: entry });
    } else if (isSearchedObject(current)) {
      for (const [key, inner] of Object.entries(current).reverse()) {
        const child = { value: inner, key, parent: entry };
        if (key.includes(NUL)) return pathOf(child);
        stack.push(child);
      }
    }
  }
  return null;
}

/**
 * Refuses a request whose path parameters, query or body hold a NUL character: 400, naming where. No id,
 * name, email, URL or form field of Tollgate can hold one, and PostgreSQL refuses it in any text value, so
 * it would otherwise end as a 500 there (a database error) and be stored as sent on SQLite. The bodies of
 * AI calls (`/api/v1/*`) are the exception but for the ids they name ({@link LOOKED_UP_FIELDS}): their text
 * goes to a model as it is, and a stored Responses conversation keeps it, escaped, in JSON.
 */
export function refuseNulCharacters(request: FastifyRequest): void {
  // This runs on every call: an AI call (no params or query, a body left alone) must allocate nothing here.
  // The raw URL rather than `routeOptions.url`, which Fastify builds anew on each access: a path that starts
  // with /api/v1/ matches only /api/v1/ routes (the router resolves no dot segments).
  const aiCall = request.url.startsWith('/api/v1/');
  if (hasEntries(request.params)) refuseIn('params', request.params);
  if (hasEntries(request.query)) refuseIn('querystring', request.query);
  if (request.body === undefined || request.body === null) return;
  if (!aiCall) refuseIn('body', request.body);
  else refuseInLookedUpFields(request.body);
}

/**
 * The fields of an AI call's body that name something Tollgate looks up in its database (the model, or the
 * Replicate version a prediction names it by), not text for a model: a NUL there failed the query on PostgreSQL.
 */
const LOOKED_UP_FIELDS = ['model', 'version'] as const;

/** Throws the 400 of a NUL in one of an AI call's {@link LOOKED_UP_FIELDS}; reads two properties, allocates nothing. */
function refuseInLookedUpFields(body: unknown): void {
  if (typeof body !== 'object' || body === null) return;
  for (const field of LOOKED_UP_FIELDS) {
    const value = (body as Record<string, unknown>)[field];
    if (typeof value === 'string' && value.includes(NUL)) refuseIn(`body/${field}`, value);
  }
}

/** Whether an object has an own enumerable key (a route's params or query usually has none). */
function hasEntries(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  for (const key in value) if (Object.hasOwn(value, key)) return true;
  return false;
}

/** Throws the 400 naming where in `value` (the request's `name` part) a NUL character is, if one is. */
function refuseIn(name: string, value: unknown): void {
  const path = findNulCharacter(value);
  if (path === null) return;
  const where = `${name}${path}`;
  throw errors.invalid(
    `${where.length > 200 ? `${where.slice(0, 200)}…` : where} contains a NUL character (U+0000), which Tollgate does not accept here; remove it and send the request again.`,
  );
}
