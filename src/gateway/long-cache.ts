import type { CatalogueModel } from '../models/catalogue.ts';
import { ApiError } from '../platform/errors.ts';

/**
 * Prompt-cache lifetimes (`cache_control.ttl`) a call may ask for: Anthropic's 5 minutes (the default, priced by
 * the catalogue's `cacheWrite`) and 1 hour (priced by `cacheWrite1h`; a model without that price refuses it,
 * see {@link longCacheRefusal}). Any other lifetime is refused by the protocols' parsers.
 */
export const CACHE_TTLS: ReadonlySet<string> = new Set(['5m', '1h']);

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
  const trail: Array<string | number> = [];
  if (!walk(value, trail)) return undefined;
  let spelled = path;
  for (const step of trail)
    spelled = typeof step === 'number' ? `${spelled}[${step}]` : spelled ? `${spelled}.${step}` : step;
  return spelled;
}

/** Depth-first search for the marker; on a hit, `trail` holds the keys and indexes down to it. */
function walk(value: unknown, trail: Array<string | number>): boolean {
  if (value === null || typeof value !== 'object') return false;
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
