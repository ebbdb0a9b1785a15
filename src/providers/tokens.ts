import { countTokens, decode, encode, setMergeCacheSize } from 'gpt-tokenizer/encoding/o200k_base';

/**
 * Token counting for holds and for settling calls whose upstream reports no usage. It uses the o200k
 * tokenizer of gpt-tokenizer for every model: other vendors' tokenizers differ by a few percent, which is
 * why a hold adds a margin and a settle prefers the usage the upstream reports.
 */

/** Tokens an image part is assumed to cost before the upstream says (OpenAI's high-detail tile budget, rounded up). */
export const IMAGE_PART_TOKENS = 1_500;
/** Framing tokens per message (role, separators), as OpenAI counts them. */
const PER_MESSAGE_TOKENS = 4;
/** Tokens that prime the assistant's reply. */
const REPLY_PRIMING_TOKENS = 3;
/**
 * Entries of gpt-tokenizer's merge cache (words not in the vocabulary, with their tokens). Its default,
 * 100,000, holds about 30 MB once varied traffic has filled it; a few thousand entries keep the words
 * that recur (names, jargon of a conversation) and count as fast on real text.
 */
const MERGE_CACHE_ENTRIES = 5_000;

setMergeCacheSize(MERGE_CACHE_ENTRIES);

/** The longest run of one character class that the tokenizer is given whole; see {@link boundedPieces}. */
const MAX_RUN = 128;
/** Runs of letters, of whitespace, or of punctuation and symbols longer than `MAX_RUN` (the tokenizer's pre-split keeps each whole). */
const LONG_RUN = new RegExp(`[\\p{L}\\p{M}]{${MAX_RUN + 1},}|\\s{${MAX_RUN + 1},}|[^\\s\\p{L}\\p{M}\\p{N}]{${MAX_RUN + 1},}`, 'gu');
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
  for (const run of text.matchAll(LONG_RUN)) {
    if (run.index > last) pieces.push(text.slice(last, run.index));
    pieces.push(...run[0].match(RUN_SLICE)!);
    last = run.index + run[0].length;
  }
  if (last < text.length) pieces.push(text.slice(last));
  return pieces;
}

/** Tokens of a text (in bounded time, whatever the text: see {@link boundedPieces}). */
export function countTextTokens(text: string): number {
  let total = 0;
  if (text) for (const piece of boundedPieces(text)) total += countTokens(piece);
  return total;
}

/** The first `limit` tokens of `text` (the echo model honours `max_tokens` with it), in bounded time. */
export function truncateToTokens(text: string, limit: number): { text: string; truncated: boolean } {
  const tokens: number[] = [];
  for (const piece of boundedPieces(text)) {
    for (const token of encode(piece)) tokens.push(token);
    if (tokens.length > limit) break;
  }
  return tokens.length <= limit ? { text, truncated: false } : { text: decode(tokens.slice(0, limit)), truncated: true };
}

/** Tokens of one OpenAI content value: a string, or text, image and audio parts. */
function contentTokens(content: unknown): number {
  if (typeof content === 'string') return countTextTokens(content);
  if (!Array.isArray(content)) return content == null ? 0 : countTextTokens(JSON.stringify(content));
  let total = 0;
  for (const part of content as any[]) {
    if (part?.type === 'text') total += countTextTokens(String(part.text ?? ''));
    else if (part?.type === 'image_url') total += IMAGE_PART_TOKENS;
    else total += countTextTokens(JSON.stringify(part ?? ''));
  }
  return total;
}

/**
 * Prompt tokens of a chat request: every message's content, name and tool calls, plus the tool definitions
 * and the response format (both are sent to the model as text).
 */
export function countChatPromptTokens(body: { messages: unknown[]; tools?: unknown; response_format?: unknown }): number {
  let total = REPLY_PRIMING_TOKENS;
  for (const message of body.messages as any[]) {
    total += PER_MESSAGE_TOKENS + contentTokens(message?.content);
    if (typeof message?.name === 'string') total += countTextTokens(message.name);
    if (message?.tool_calls) total += countTextTokens(JSON.stringify(message.tool_calls));
  }
  if (body.tools) total += countTextTokens(JSON.stringify(body.tools));
  if (body.response_format) total += countTextTokens(JSON.stringify(body.response_format));
  return total;
}

/** Tokens of an embeddings `input` (a string, strings, or pre-tokenized arrays). */
export function countEmbeddingInputTokens(input: unknown): number {
  if (typeof input === 'string') return countTextTokens(input);
  if (!Array.isArray(input)) return 0;
  if (input.every((item) => typeof item === 'number')) return input.length;
  return input.reduce((sum: number, item) => sum + countEmbeddingInputTokens(item), 0);
}
