import { ApiError } from '../errors.ts';

/**
 * The 400 of a JSON body that the parser refused only for a `__proto__` key, or a `constructor` object with a
 * `prototype` key (secure-json-parse's guard against prototype poisoning), naming the key; null when the text is
 * not valid JSON at all, which stays "The body is not valid JSON.": that answer sent a person looking for a
 * syntax error that is not there.
 *
 * Only called once the parser has refused the text, so a well-formed body costs nothing more.
 */
export function forbiddenKeyRefusal(text: string): ApiError | null {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  const at = forbiddenKeyPath(value, '');
  if (at === null) return null;
  return new ApiError(
    'INVALID_REQUEST',
    `The body has a key the server refuses: ${JSON.stringify(at)} (a "__proto__" key, or "prototype" inside "constructor", could change the objects built from the body); rename or remove it.`,
    { details: { param: at } },
  );
}

/** Where in `value` the first `__proto__` key or `constructor.prototype` is (`messages[0].__proto__`), or null. */
function forbiddenKeyPath(value: unknown, path: string): string | null {
  if (value === null || typeof value !== 'object') return null;
  if (Array.isArray(value)) {
    for (const [index, item] of value.entries()) {
      const found = forbiddenKeyPath(item, `${path}[${index}]`);
      if (found !== null) return found;
    }
    return null;
  }
  const join = (key: string) => (path === '' ? key : `${path}.${key}`);
  for (const [key, member] of Object.entries(value)) {
    if (key === '__proto__') return join(key);
    if (key === 'constructor' && member !== null && typeof member === 'object' && Object.hasOwn(member, 'prototype'))
      return join('constructor.prototype');
    const found = forbiddenKeyPath(member, join(key));
    if (found !== null) return found;
  }
  return null;
}
