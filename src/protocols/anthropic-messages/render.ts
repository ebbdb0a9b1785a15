import type { CanonicalPart, CanonicalResult, CanonicalUsage, FinishReason } from '../../gateway/canonical.ts';
import { randomText } from '../../platform/ids.ts';

/** Anthropic's `stop_reason` for a canonical finish (a stop sequence is told apart only by a native answer). */
export const STOP_REASONS: Readonly<Record<FinishReason, string>> = {
  stop: 'end_turn',
  length: 'max_tokens',
  tool_calls: 'tool_use',
  content_filter: 'refusal',
  error: 'end_turn',
};

/** Anthropic's usage object: `input_tokens` excludes the cache (reads and writes are their own counts), plus our `cost`. */
export interface AnthropicUsage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  /** The cache writes by lifetime (their sum is `cache_creation_input_tokens`), when some were for 1 hour. */
  cache_creation?: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
  /** The web searches billed (each at the model's `webSearch` price), when the upstream ran some. */
  server_tool_use?: { web_search_requests: number };
  /** What the call cost, in credits. */
  cost: number;
}

/**
 * Canonical usage in Anthropic's names. The canonical `inputTokens` holds every input token (cache reads
 * and writes included), Anthropic's `input_tokens` only those beside the cache: the cache counts come off.
 */
export function anthropicUsage(usage: CanonicalUsage): AnthropicUsage {
  const cacheRead = usage.cacheReadTokens ?? 0;
  const cacheWrite = usage.cacheWriteTokens ?? 0;
  // The split by lifetime is shown when some writes were for 1 hour (a 5-minute-only usage keeps its old shape).
  const oneHour = usage.cacheWrite1hTokens ?? 0;
  return {
    input_tokens: Math.max(0, usage.inputTokens - cacheRead - cacheWrite),
    output_tokens: usage.outputTokens,
    cache_creation_input_tokens: cacheWrite,
    cache_read_input_tokens: cacheRead,
    ...(oneHour > 0 ? { cache_creation: cacheCreation(cacheWrite, oneHour) } : {}),
    // Anthropic's count of searches (Claude Code reads it), shown when some were billed: other usages keep their shape.
    ...(usage.webSearches ? { server_tool_use: { web_search_requests: usage.webSearches } } : {}),
    cost: usage.cost ?? 0,
  };
}

/** Anthropic's split of `writes` cache-write tokens by lifetime, `oneHour` of them for 1 hour. */
function cacheCreation(writes: number, oneHour: number) {
  const ephemeral1h = Math.min(oneHour, writes);
  return { ephemeral_5m_input_tokens: writes - ephemeral1h, ephemeral_1h_input_tokens: ephemeral1h };
}

/** A message id in Anthropic's form: the upstream's when it has one, else a new `msg_…`. */
export function messageId(id: string | undefined): string {
  return id?.startsWith('msg_') ? id : `msg_${randomText(24)}`;
}

/** A tool call's arguments as the `input` object of a `tool_use` block (an unparsable text becomes `{}`). */
export function toolInput(args: string): Record<string, unknown> {
  try {
    const parsed = JSON.parse(args || '{}');
    return parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** One content block of a Message (`text`, `thinking`, `redacted_thinking`, `tool_use`, or an upstream's own). */
export type ContentBlock = { type: string; [field: string]: unknown };

/** Canonical output parts as Anthropic content blocks, adjacent texts joined. */
export function contentBlocks(parts: CanonicalPart[]): ContentBlock[] {
  const blocks: ContentBlock[] = [];
  for (const part of parts) {
    const last = blocks.at(-1);
    if (part.type === 'text') {
      if (last?.type === 'text') last.text = `${last.text as string}${part.text}`;
      else blocks.push({ type: 'text', text: part.text });
    } else if (part.type === 'reasoning') {
      const redacted = part.text === '' && part.signature;
      blocks.push(
        redacted
          ? { type: 'redacted_thinking', data: part.signature }
          : { type: 'thinking', thinking: part.text, signature: part.signature ?? '' },
      );
    } else if (part.type === 'tool_call') {
      blocks.push({ type: 'tool_use', id: part.id, name: part.name, input: toolInput(part.arguments) });
    }
  }
  return blocks;
}

/** Anthropic's Message object (an upstream's own fields beyond these are relayed too). */
export interface AnthropicMessage {
  id: string;
  type: 'message';
  role: 'assistant';
  model: string;
  content: ContentBlock[];
  stop_reason: string | null;
  stop_sequence: string | null;
  usage: AnthropicUsage;
  [field: string]: unknown;
}

/**
 * The Message object of a finished call. An Anthropic upstream's own message is relayed as it came (its
 * blocks, stop reason and stop sequence exact), with the public model id and our usage (the counts billed
 * and their cost); any other upstream's answer is built from the canonical result.
 */
export function renderMessage(result: CanonicalResult): AnthropicMessage {
  const usage = anthropicUsage(result.usage);
  if (result.native?.protocol === 'anthropic-messages') {
    const body = result.native.body;
    return {
      ...body,
      id: messageId(body.id as string | undefined),
      type: 'message',
      role: 'assistant',
      model: result.model,
      content: Array.isArray(body.content) ? (body.content as ContentBlock[]) : contentBlocks(result.content),
      stop_reason: typeof body.stop_reason === 'string' ? body.stop_reason : STOP_REASONS[result.finishReason],
      stop_sequence: typeof body.stop_sequence === 'string' ? body.stop_sequence : null,
      usage,
    };
  }
  return {
    id: messageId(result.id),
    type: 'message',
    role: 'assistant',
    model: result.model,
    content: contentBlocks(result.content),
    stop_reason: STOP_REASONS[result.finishReason],
    stop_sequence: null,
    usage,
  };
}
