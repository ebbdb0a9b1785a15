import { readFileSync } from 'node:fs';
import { O200K_TOKEN_SPLIT_REGEX } from 'gpt-tokenizer/encodingParams/constants';

/**
 * Token counting for holds and for settling calls whose upstream reports no usage. It uses OpenAI's o200k
 * vocabulary for every model: other vendors' tokenizers differ by a few percent, which is why a hold adds a
 * margin and a settle prefers the usage the upstream reports.
 *
 * The byte-pair encoding is done here, on gpt-tokenizer's data (its o200k file and its pre-split pattern),
 * rather than by gpt-tokenizer's encoder (issue 8). That encoder keeps its 200,000 tokens as JavaScript
 * strings in a Map, ~15 MB of live heap that every full garbage collection marks again, and building it
 * (from a 2.4 MB array literal) raised the resident memory of the process by ~65 MB at start-up. Here the
 * vocabulary is three typed arrays outside the JavaScript heap (~4 MB), read from the file in ~0.1 s.
 */

/** Framing tokens per message (role, separators), as OpenAI counts them. */
const PER_MESSAGE_TOKENS = 4;
/** Tokens that prime the assistant's reply. */
const REPLY_PRIMING_TOKENS = 3;

/** Marks "no such token" in the pair ranks of {@link mergeParts}; above every rank. */
const NO_RANK = 0x7fff_ffff;

/** A byte-pair vocabulary: each token is a byte sequence, found by its rank or by its bytes. */
class Vocabulary {
  /** Every token's bytes, back to back in rank order. */
  private readonly bytes: Uint8Array;
  /** Token `r` is `bytes[starts[r], starts[r + 1])`. */
  private readonly starts: Uint32Array;
  /** Open addressing on the FNV-1a hash of a token's bytes: rank + 1, 0 for an empty slot. */
  private readonly slots: Int32Array;

  /** Reads a tiktoken file: one `<token in base64> <rank>` line per token, ranks 0, 1, 2… in order. */
  constructor(tiktoken: string) {
    let count = 0;
    for (let at = tiktoken.indexOf('\n'); at !== -1; at = tiktoken.indexOf('\n', at + 1)) count++;
    if (!tiktoken.endsWith('\n')) count++;
    const bytes = new Uint8Array(Math.ceil(tiktoken.length * 0.75));
    this.starts = new Uint32Array(count + 1);
    let length = 0;
    for (let rank = 0, line = 0; rank < count; rank++) {
      const space = tiktoken.indexOf(' ', line);
      const newline = tiktoken.indexOf('\n', line);
      const end = newline === -1 ? tiktoken.length : newline;
      const base64 = tiktoken.slice(line, space);
      const { read, written } = bytes.subarray(length).setFromBase64(base64);
      if (space === -1 || space > end || read !== base64.length || Number(tiktoken.slice(space + 1, end)) !== rank) {
        throw new Error(`unreadable tiktoken line ${rank + 1}`);
      }
      length += written;
      this.starts[rank + 1] = length;
      line = end + 1;
    }
    this.bytes = bytes.slice(0, length);
    this.slots = new Int32Array(2 ** Math.ceil(Math.log2(count * 2)));
    const mask = this.slots.length - 1;
    for (let rank = 0; rank < count; rank++) {
      let slot = hash(this.bytes, this.starts[rank]!, this.starts[rank + 1]!) & mask;
      while (this.slots[slot] !== 0) slot = (slot + 1) & mask;
      this.slots[slot] = rank + 1;
    }
  }

  /** How many tokens there are. */
  get size(): number {
    return this.starts.length - 1;
  }

  /** The bytes of the token of rank `rank` (a view, not a copy). */
  tokenBytes(rank: number): Uint8Array {
    return this.bytes.subarray(this.starts[rank], this.starts[rank + 1]);
  }

  /** The rank of the token whose bytes are `source[from, to)`, or -1. */
  rank(source: Uint8Array, from: number, to: number): number {
    const mask = this.slots.length - 1;
    for (let slot = hash(source, from, to) & mask; ; slot = (slot + 1) & mask) {
      const entry = this.slots[slot]!;
      if (entry === 0) return -1;
      const start = this.starts[entry - 1]!;
      if (this.starts[entry]! - start !== to - from) continue;
      let i = 0;
      while (i < to - from && this.bytes[start + i] === source[from + i]) i++;
      if (i === to - from) return entry - 1;
    }
  }
}

/** FNV-1a over `bytes[from, to)`. */
function hash(bytes: Uint8Array, from: number, to: number): number {
  let h = 0x811c9dc5;
  for (let i = from; i < to; i++) h = Math.imul(h ^ bytes[i]!, 0x01000193);
  return h >>> 0;
}

/** o200k, from the tiktoken file gpt-tokenizer ships beside the pattern imported above. */
const O200K = new Vocabulary(
  readFileSync(
    new URL('../../data/o200k_base.tiktoken', import.meta.resolve('gpt-tokenizer/encodingParams/constants')),
    'latin1',
  ),
);

/** Reused across calls (one piece is encoded at a time): the UTF-8 of a piece, its part boundaries and pair ranks. */
let pieceBytes = new Uint8Array(1024);
let partStarts = new Int32Array(1024);
let pairRanks = new Int32Array(1024);
const utf8 = new TextEncoder();

/**
 * Byte-pair encodes one pre-split piece as tiktoken does, and returns how many tokens it makes; their
 * ranks are pushed onto `ranks` when given. A piece that is a token is that token; otherwise its bytes are
 * merged, the adjacent pair of lowest rank first (the leftmost among equals), until no pair is a token.
 * Quadratic in the piece's length, which {@link boundedPieces} bounds.
 */
function mergeParts(piece: string, ranks?: number[]): number {
  if (pieceBytes.length < piece.length * 3) pieceBytes = new Uint8Array(piece.length * 3);
  const length = utf8.encodeInto(piece, pieceBytes).written;
  const whole = O200K.rank(pieceBytes, 0, length);
  if (whole !== -1) {
    ranks?.push(whole);
    return 1;
  }
  if (partStarts.length <= length) {
    partStarts = new Int32Array(length + 1);
    pairRanks = new Int32Array(length + 1);
  }
  const pairRank = (from: number, to: number) => {
    const rank = O200K.rank(pieceBytes, from, to);
    return rank === -1 ? NO_RANK : rank;
  };
  // Part k is pieceBytes[partStarts[k], partStarts[k + 1]); pairRanks[k] is the rank of parts k and k + 1 together.
  let parts = length;
  for (let i = 0; i <= length; i++) partStarts[i] = i;
  for (let i = 0; i < length - 1; i++) pairRanks[i] = pairRank(i, i + 2);
  pairRanks[length - 1] = NO_RANK;
  while (parts > 1) {
    let lowest = NO_RANK;
    let at = -1;
    for (let k = 0; k < parts - 1; k++) {
      if (pairRanks[k]! < lowest) {
        lowest = pairRanks[k]!;
        at = k;
      }
    }
    if (at === -1) break;
    partStarts.copyWithin(at + 1, at + 2, parts + 1);
    pairRanks.copyWithin(at + 1, at + 2, parts);
    parts--;
    pairRanks[at] = at + 2 <= parts ? pairRank(partStarts[at]!, partStarts[at + 2]!) : NO_RANK;
    if (at > 0) pairRanks[at - 1] = pairRank(partStarts[at - 1]!, partStarts[at + 1]!);
  }
  if (ranks) for (let k = 0; k < parts; k++) ranks.push(O200K.rank(pieceBytes, partStarts[k]!, partStarts[k + 1]!));
  return parts;
}

/**
 * Tokens of `text` (unbounded: callers give it {@link boundedPieces}). Special tokens' text
 * (`<|endoftext|>`…) is ordinary text here, as in a prompt; gpt-tokenizer's encoder threw on it.
 */
function countTokens(text: string): number {
  let total = 0;
  for (const [piece] of text.matchAll(O200K_TOKEN_SPLIT_REGEX)) total += mergeParts(piece);
  return total;
}

/** The ranks of `text`'s tokens (unbounded, as {@link countTokens}). */
function encode(text: string): number[] {
  const ranks: number[] = [];
  for (const [piece] of text.matchAll(O200K_TOKEN_SPLIT_REGEX)) mergeParts(piece, ranks);
  return ranks;
}

/** The text of `ranks`; an incomplete UTF-8 sequence at the end (a cut inside a character) is left out. */
function decode(ranks: number[]): string {
  const parts = ranks.map((rank) => O200K.tokenBytes(rank));
  const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0));
  let at = 0;
  for (const part of parts) {
    bytes.set(part, at);
    at += part.length;
  }
  return new TextDecoder().decode(bytes, { stream: true });
}

/** The vocabulary, exported so that a test can prove it is gpt-tokenizer's, token for token. */
export const o200k: Pick<Vocabulary, 'size' | 'tokenBytes' | 'rank'> = O200K;

/** The longest run of one character class that the tokenizer is given whole; see {@link boundedPieces}. */
const MAX_RUN = 128;
const RUN_SLICE = new RegExp(`[\\s\\S]{1,${MAX_RUN}}`, 'gu');

/**
 * `text` in pieces the tokenizer handles in linear time.
 *
 * Security invariant: no caller can make counting block the event loop. Byte-pair encoding is quadratic
 * in the length of a pre-tokenized piece, and a piece is a whole run of letters, of spaces or of
 * punctuation: 128 KB of one letter took 6.6 s, 64 K CJK characters 24 s, on any request body. Runs
 * longer than `MAX_RUN` are cut into slices of `MAX_RUN` code points, which cost microseconds each. A cut
 * moves the count by about one token at most (the margin of a hold covers far more); text without such
 * runs is counted exactly as before.
 */
function boundedPieces(text: string): string[] {
  if (text.length <= MAX_RUN) return [text];
  const pieces: string[] = [];
  let last = 0;
  for (const [start, end] of longRuns(text)) {
    if (start > last) pieces.push(text.slice(last, start));
    pieces.push(...text.slice(start, end).match(RUN_SLICE)!);
    last = end;
  }
  if (last < text.length) pieces.push(text.slice(last));
  return pieces;
}

/**
 * A code point's class for {@link longRuns}: numbers (no long run holds them), letters and marks,
 * whitespace, and the rest.
 */
const NUMBER_CLASS = 0;
const LETTER_CLASS = 1;
const SPACE_CLASS = 2;
const OTHER_CLASS = 3;

/** Classes of the Basic Multilingual Plane, found once each: the class plus one, 0 when not found yet. */
const BMP_CLASSES = new Uint8Array(0x10000);
const LETTER_OR_MARK = /^[\p{L}\p{M}]$/u;
const SPACE = /^\s$/u;
const NUMBER = /^\p{N}$/u;

function runClassOf(codePoint: number): number {
  if (codePoint < 0x10000) {
    const known = BMP_CLASSES[codePoint]!;
    if (known) return known - 1;
  }
  const char = String.fromCodePoint(codePoint);
  const found = LETTER_OR_MARK.test(char)
    ? LETTER_CLASS
    : SPACE.test(char)
      ? SPACE_CLASS
      : NUMBER.test(char)
        ? NUMBER_CLASS
        : OTHER_CLASS;
  if (codePoint < 0x10000) BMP_CLASSES[codePoint] = found + 1;
  return found;
}

/**
 * The runs of letters and marks, of whitespace, or of punctuation and symbols longer than `MAX_RUN` code
 * points in `text` (the tokenizer's pre-split keeps each whole), each `[start, end)` in UTF-16 units: where
 * `/[\p{L}\p{M}]{129,}|\s{129,}|[^\s\p{L}\p{M}\p{N}]{129,}/gu` matches (the tests hold it to that regex),
 * found in one pass of table lookups. Why not the regex: it tries every position of a run again, and its
 * Unicode classes are slow; it took ~40% of counting a 100 K-character prompt. A lone surrogate is a code
 * point of the "other" class, as it is for the regex.
 */
export function longRuns(text: string): Array<[number, number]> {
  const runs: Array<[number, number]> = [];
  let runClass = NUMBER_CLASS;
  let runStart = 0;
  let runLength = 0;
  const close = (end: number) => {
    if (runClass !== NUMBER_CLASS && runLength > MAX_RUN) runs.push([runStart, end]);
  };
  for (let i = 0; i < text.length;) {
    const codePoint = text.codePointAt(i)!;
    const width = codePoint > 0xffff ? 2 : 1;
    const cls = runClassOf(codePoint);
    if (cls === runClass) runLength++;
    else {
      close(i);
      runClass = cls;
      runStart = i;
      runLength = 1;
    }
    i += width;
  }
  close(text.length);
  return runs;
}

/** Tokens of a text (in bounded time, whatever the text: see {@link boundedPieces}). */
export function countTextTokens(text: string): number {
  let total = 0;
  if (text) for (const piece of boundedPieces(text)) total += countTokens(piece);
  return total;
}

/**
 * {@link countTextTokens}, in slices: `pace` is told how many characters each slice counted and may wait
 * (for the event loop to serve others) before the next. The same count: it cuts the text only where the count
 * cannot change, between the pieces `countTextTokens` counts apart and at the safe cuts of
 * {@link SAFE_CUT}; a piece with no safe cut for longer than a slice is counted whole.
 */
export async function countTextTokensPaced(
  text: string,
  pace: (characters: number) => Promise<void> | void,
  sliceChars = PACED_SLICE_CHARS,
): Promise<number> {
  let total = 0;
  if (!text) return total;
  for (const piece of boundedPieces(text)) {
    for (let start = 0; start < piece.length;) {
      let end = piece.length;
      if (end - start > sliceChars) {
        SAFE_CUT.lastIndex = start + sliceChars;
        end = SAFE_CUT.exec(piece)?.index ?? piece.length;
      }
      total += countTokens(piece.slice(start, end));
      await pace(end - start);
      start = end;
    }
  }
  return total;
}

/** Characters {@link countTextTokensPaced} counts between two calls of its `pace` (~1–2 ms of counting). */
export const PACED_SLICE_CHARS = 8_192;

/** Text a {@link StreamedTextTokens} holds before it counts up to its last safe cut. */
const STREAMED_FLUSH_CHARS = 2_048;
/** Text it holds at the most without a safe cut: past that, it counts the text up to where it stands. */
const STREAMED_MAX_CHARS = 65_536;
/**
 * Where the tokenizer's pre-split always has a boundary, so a safe cut: after a line break followed by a
 * letter, and before a single space between two letters (a run of letters ends at the space; the space
 * begins the next word's piece). The matches are empty: each one's index is the cut.
 */
const SAFE_CUT = /(?<=\n)(?=\p{L})|(?<=\p{L})(?= \p{L})/gu;

/**
 * The tokens of a text that arrives in pieces (a stream's output), counted as it comes, holding only a
 * bounded tail of it.
 *
 * Why: a stream billed on our own count kept every piece until it ended, i.e. the whole answer for the
 * stream's whole life, a few MB for an hour-long answer in small deltas, per open stream.
 *
 * Invariant: {@link total} equals {@link countTextTokens} of the whole text whenever the text has a safe cut
 * ({@link SAFE_CUT}: a line break before a letter, a space between letters) at least every
 * {@link STREAMED_MAX_CHARS} characters. It cuts only there: no piece of the tokenizer's pre-split spans
 * one, and no run of one character class either. A text with no such place in 64 K characters (CJK without
 * spaces, say) is cut where it stands. That moves the count by a token or two per cut, as
 * {@link boundedPieces}' cuts do.
 */
export class StreamedTextTokens {
  #tail = '';
  /** How much of the tail has been searched for a cut; positions before its last character hold none. */
  #searched = 0;
  #counted = 0;

  /** Adds the next piece of the text. */
  add(piece: string): void {
    this.#tail += piece;
    if (this.#tail.length < STREAMED_FLUSH_CHARS) return;
    // A cut depends on the characters around it: the last one searched may make one with what came since.
    SAFE_CUT.lastIndex = Math.max(0, this.#searched - 1);
    let cut = -1;
    for (let found; (found = SAFE_CUT.exec(this.#tail)); SAFE_CUT.lastIndex++) cut = found.index;
    this.#searched = this.#tail.length;
    if (cut <= 0) {
      if (this.#tail.length < STREAMED_MAX_CHARS) return;
      cut = this.#tail.length;
    }
    this.#counted += countTextTokens(this.#tail.slice(0, cut));
    this.#tail = this.#tail.slice(cut);
    // What is left was searched: it holds no cut after its start.
    this.#searched = this.#tail.length;
  }

  /** Tokens of the text so far. */
  get total(): number {
    return this.#counted + countTextTokens(this.#tail);
  }

  /** Characters of the text held, not yet counted. */
  get held(): number {
    return this.#tail.length;
  }
}

/** The first `limit` tokens of `text` (the echo model honours `max_tokens` with it), in bounded time. */
export function truncateToTokens(text: string, limit: number): { text: string; truncated: boolean } {
  const tokens: number[] = [];
  for (const piece of boundedPieces(text)) {
    for (const token of encode(piece)) tokens.push(token);
    if (tokens.length > limit) break;
  }
  return tokens.length <= limit
    ? { text, truncated: false }
    : { text: decode(tokens.slice(0, limit)), truncated: true };
}

/**
 * Tokens of one OpenAI content value: a string, or text and audio parts. Image parts count 0 here: what one
 * costs depends on the model, so the chat plan holds each at the model's image-token budget.
 */
function contentTokens(content: unknown, count: TextTokenCounter): number {
  if (typeof content === 'string') return count(content);
  if (!Array.isArray(content)) return content == null ? 0 : count(JSON.stringify(content));
  let total = 0;
  for (const part of content as any[]) {
    if (part?.type === 'text') total += count(String(part.text ?? ''));
    else if (part?.type === 'image_url') continue;
    else total += count(JSON.stringify(part ?? ''));
  }
  return total;
}

/**
 * Counts one text's tokens: {@link countTextTokens} itself, or a memo of it that must answer exactly what
 * it would (the gateway's `PromptTokenCounts`).
 */
export type TextTokenCounter = (text: string) => number;

/**
 * Prompt tokens of a chat request: every message's content, name and tool calls, plus the tool definitions
 * (`tools`, and the legacy `functions`) and the response format (all are sent to the model as text).
 * Image parts are not counted here (see {@link contentTokens}). Each text goes through `count`.
 */
export function countChatPromptTokens(
  body: {
    messages: unknown[];
    tools?: unknown;
    functions?: unknown;
    response_format?: unknown;
  },
  count: TextTokenCounter = countTextTokens,
): number {
  let total = REPLY_PRIMING_TOKENS;
  for (const message of body.messages as any[]) {
    total += PER_MESSAGE_TOKENS + contentTokens(message?.content, count);
    if (typeof message?.name === 'string') total += count(message.name);
    if (message?.tool_calls) total += count(JSON.stringify(message.tool_calls));
  }
  if (body.tools) total += count(JSON.stringify(body.tools));
  if (body.functions) total += count(JSON.stringify(body.functions));
  if (body.response_format) total += count(JSON.stringify(body.response_format));
  return total;
}

/** Tokens of an embeddings `input` (a string, strings, or pre-tokenized arrays). */
export function countEmbeddingInputTokens(input: unknown, count: TextTokenCounter = countTextTokens): number {
  if (typeof input === 'string') return count(input);
  if (!Array.isArray(input)) return 0;
  if (input.every((item) => typeof item === 'number')) return input.length;
  return input.reduce((sum: number, item) => sum + countEmbeddingInputTokens(item, count), 0);
}

/** The longest token of the vocabulary, in UTF-8 bytes (128 for o200k): no token covers more text. */
export const MAX_TOKEN_BYTES = (() => {
  let longest = 0;
  for (let rank = 0; rank < O200K.size; rank++) longest = Math.max(longest, O200K.tokenBytes(rank).length);
  return longest;
})();

/**
 * A lower bound of {@link countChatPromptTokens} from lengths alone, in time linear in the number of
 * messages and parts (no text is read): every token covers at most {@link MAX_TOKEN_BYTES} bytes and a
 * UTF-16 code unit is at least one UTF-8 byte, so a text of `n` code units makes at least `n / 128` tokens.
 * Also the text length, for callers that weigh whether exact counting is worth a check first.
 */
export function chatPromptLowerBound(body: { messages: unknown[] }): { tokens: number; textLength: number } {
  let tokens = REPLY_PRIMING_TOKENS;
  let textLength = 0;
  const text = (value: unknown) => {
    if (typeof value !== 'string') return;
    textLength += value.length;
    tokens += Math.ceil(value.length / MAX_TOKEN_BYTES);
  };
  for (const message of body.messages as any[]) {
    tokens += PER_MESSAGE_TOKENS;
    const content = message?.content;
    if (typeof content === 'string') text(content);
    else if (Array.isArray(content)) {
      // Only text parts: what an image costs depends on the model, and nothing is still a lower bound.
      for (const part of content) if (part?.type === 'text') text(part.text);
    }
  }
  return { tokens, textLength };
}
