import { ApiError } from '../errors.ts';

/**
 * How deep a JSON body may nest (the body itself is level 1). Far past any real request (a tool's JSON Schema
 * nests a few dozen levels at most), and far below where JSON.stringify overflows the stack (some thousands):
 * a body is re-serialised after it was taken (to the upstream, into a stored response), and a 20,000-level one
 * failed there, after the call was charged.
 */
export const MAX_JSON_NESTING = 256;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** Whether the quote at `at` is escaped: preceded by an odd run of backslashes. */
function isEscaped(text: string, at: number): boolean {
  let backslashes = 0;
  while (text.charCodeAt(at - 1 - backslashes) === BACKSLASH) backslashes++;
  return backslashes % 2 === 1;
}

/**
 * Whether the JSON text `text` nests objects and arrays more than `limit` levels deep. One pass over the text,
 * before it is parsed; strings are skipped with `indexOf` (a prompt's text costs a native search, not a loop
 * here), so brackets inside them do not count. Text that is not JSON is left to the parser to refuse.
 */
export function nestsDeeperThan(text: string, limit: number): boolean {
  // Deeper than `limit` takes more than `limit` opening brackets and as many closing ones.
  if (text.length <= 2 * limit) return false;
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      let end = text.indexOf('"', i + 1);
      while (end !== -1 && isEscaped(text, end)) end = text.indexOf('"', end + 1);
      if (end === -1) return false;
      i = end;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > limit) return true;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) depth--;
  }
  return false;
}

/** The 400 of a body nested past {@link MAX_JSON_NESTING}. */
export function tooDeeplyNested(): ApiError {
  return new ApiError(
    'INVALID_REQUEST',
    `The JSON body is nested more than ${MAX_JSON_NESTING} levels deep; flatten it.`,
  );
}
