import { countTokens, decode, encode } from 'gpt-tokenizer';

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

/** Tokens of a text. */
export function countTextTokens(text: string): number {
  return text ? countTokens(text) : 0;
}

/** The first `limit` tokens of `text` (the echo model honours `max_tokens` with it). */
export function truncateToTokens(text: string, limit: number): { text: string; truncated: boolean } {
  const tokens = encode(text);
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
