import type { CatalogueModel } from '../models/catalogue.ts';
import { ApiError } from '../platform/errors.ts';

/**
 * Prompt-cache lifetimes (`cache_control.ttl`) a call may ask for: Anthropic's 5 minutes (the default, priced by
 * the catalogue's `cacheWrite`) and 1 hour (priced by `cacheWrite1h`; a model without that price refuses it,
 * see {@link longCacheRefusal}). Any other lifetime is refused by the protocols' parsers.
 */
const CACHE_TTLS: ReadonlySet<string> = new Set(['5m', '1h']);

/**
 * Whether a `cache_control.ttl` sent is one of {@link CACHE_TTLS}. A string only: the 1-hour price is chosen by
 * {@link findLongCache}, which matches "1h" exactly, so `["1h"]` must not pass here as a lifetime it never prices.
 * Both protocols' parsers check with this one predicate.
 */
export function isPricedCacheTtl(ttl: unknown): boolean {
  return typeof ttl === 'string' && CACHE_TTLS.has(ttl);
}

/** The lifetime priced by `cacheWrite1h`. */
export const LONG_CACHE_TTL = '1h';

/**
 * The path of the first `cache_control` in `value` that asks for a 1-hour cache (`ttl: "1h"`), e.g.
 * `system[0].cache_control`, or undefined.
 * Walks the whole body, so every place a client may put the marker (system, messages, tool results, tools, the
 * top-level automatic marker) counts: the hold and the refusal must see each one. The path is spelled only
 * when a marker is found: an agent resends hundreds of messages a call, and naming every node on the way cost
 * ~0.2–0.4 ms a call for 200 of them.
 */
export function findLongCache(value: unknown, path: string): string | undefined {
  let trail: Array<string | number> | undefined = [];
  try {
    if (!walk(value, trail)) return undefined;
  } catch (error) {
    if (error !== TOO_DEEP) throw error;
    trail = walkIteratively(value);
    if (!trail) return undefined;
  }
  let spelled = path;
  for (const step of trail)
    spelled = typeof step === 'number' ? `${spelled}[${step}]` : spelled ? `${spelled}.${step}` : step;
  return spelled;
}

/**
 * How deep {@link walk} recurses before {@link walkIteratively} takes over: a client's JSON may nest deeper than
 * the call stack goes (100,000 levels parse), and the stack overflow was a 500 for every call with such a body.
 */
const MAX_RECURSION = 1_000;
const TOO_DEEP = new Error('nested deeper than MAX_RECURSION');

/** Depth-first search for the marker; on a hit, `trail` holds the keys and indexes down to it. */
function walk(value: unknown, trail: Array<string | number>): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (trail.length > MAX_RECURSION) throw TOO_DEEP;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const child = value[i];
      if (child === null || typeof child !== 'object') continue;
      trail.push(i);
      if (walk(child, trail)) return true;
      trail.pop();
    }
    return false;
  }
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const child = (value as Record<string, unknown>)[key];
    if (child === null || typeof child !== 'object') continue;
    trail.push(key);
    if (key === 'cache_control' && (child as { ttl?: unknown }).ttl === LONG_CACHE_TTL) return true;
    if (walk(child, trail)) return true;
    trail.pop();
  }
  return false;
}

/**
 * {@link walk} without recursion, for the rare body too deep for it (slower: ~1.5× on an agent's conversation).
 * Each object or array seen is one entry of three arrays (its value, the key or index it hangs from, its parent's
 * entry); children go onto the stack last first, so the search keeps document order and finds the same marker.
 */
function walkIteratively(root: unknown): Array<string | number> | undefined {
  if (root === null || typeof root !== 'object') return undefined;
  const values: object[] = [root];
  const steps: Array<string | number> = [''];
  const parents: number[] = [-1];
  const pending: number[] = [0];
  while (pending.length > 0) {
    const at = pending.pop()!;
    const value = values[at]!;
    if (steps[at] === 'cache_control' && (value as { ttl?: unknown }).ttl === LONG_CACHE_TTL) {
      const trail: Array<string | number> = [];
      for (let entry = at; parents[entry]! >= 0; entry = parents[entry]!) trail.push(steps[entry]!);
      return trail.reverse();
    }
    const first = values.length;
    const entries: Iterable<[string | number, unknown]> = Array.isArray(value)
      ? value.entries()
      : Object.entries(value);
    for (const [step, child] of entries) {
      if (child === null || typeof child !== 'object') continue;
      values.push(child);
      steps.push(step);
      parents.push(at);
    }
    for (let i = values.length - 1; i >= first; i--) pending.push(i);
  }
  return undefined;
}

/**
 * Why `model` cannot take a call that asks for a 1-hour cache at `param` (the `cache_control`'s path): it has no `cacheWrite1h` price (the
 * gateway could not bill such writes at what the provider charges: 2× the input price at Anthropic). Null when
 * it has one. The model asked for answers the 400 before any hold; a fallback without the price is left out.
 */
export function longCacheRefusal(model: CatalogueModel, param: string): ApiError | null {
  if ((model.pricing.cacheWrite1h ?? null) !== null) return null;
  return new ApiError(
    'UNSUPPORTED_PARAMETER',
    `${param}.ttl "1h" is refused for "${model.id}": the model has no 1-hour cache-write price (pricing.cacheWrite1h) in the catalogue; use "5m" (the default), or ask the operator to set the price.`,
    { details: { param } },
  );
}
