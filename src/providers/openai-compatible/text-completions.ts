import type { CanonicalPart, CanonicalResult } from '../../gateway/canonical.ts';
import type { ProviderCall } from '../types.ts';
import { canonicalUsageOfOpenAi, finishOf, withStreamFlags } from './wire.ts';

/**
 * Canonical calls ⇄ OpenAI's legacy text completions (`POST /v1/completions`), which an OpenAI-compatible
 * upstream serves for completion models (OpenAI's `gpt-3.5-turbo-instruct`, a base model on vLLM, a code model's
 * fill-in-the-middle). Only a call that arrived as a legacy completion (`native`) comes here: its body is sent as
 * the client wrote it, model and output cap replaced.
 */

/** A legacy completion as the upstream answers it (the fields read here; the rest is relayed as sent). */
export interface TextCompletion {
  id?: unknown;
  object?: unknown;
  created?: unknown;
  model?: unknown;
  choices: Array<{ index?: unknown; text?: unknown; finish_reason?: unknown; [k: string]: unknown }>;
  usage?: unknown;
  [k: string]: unknown;
}

/**
 * The upstream body. Invariant: `max_tokens` is `call.maxOutputTokens`, the cap the hold was computed with (legacy
 * completions have no other cap field). A stream always asks for usage: it is what the call is billed on.
 */
export function toTextCompletionBody(call: ProviderCall, stream: boolean): Record<string, unknown> {
  const body = {
    ...(call.native!.body as Record<string, unknown>),
    model: call.model,
    max_tokens: call.maxOutputTokens,
  };
  return withStreamFlags(body, stream);
}

/** A choice's text as canonical output. */
const textParts = (choice: TextCompletion['choices'][number] | undefined): CanonicalPart[] =>
  typeof choice?.text === 'string' && choice.text ? [{ type: 'text', text: choice.text }] : [];

/**
 * A legacy completion as a canonical result, the upstream's own answer kept as `native` (relayed with model and
 * usage replaced). Every choice past the first (`n`, several prompts) is `otherChoices`: billed too when the
 * upstream reports no usage.
 */
export function fromTextCompletion(completion: TextCompletion): CanonicalResult {
  const [first, ...rest] = completion.choices;
  const others = rest.map(textParts);
  return {
    id: String(completion.id ?? 'cmpl'),
    model: String(completion.model ?? ''),
    created: typeof completion.created === 'number' ? completion.created : Math.floor(Date.now() / 1000),
    content: textParts(first),
    ...(others.length ? { otherChoices: others } : {}),
    finishReason: finishOf(first?.finish_reason),
    usage: completion.usage
      ? canonicalUsageOfOpenAi(completion.usage)
      : { inputTokens: Number.NaN, outputTokens: Number.NaN },
    native: { protocol: 'openai-completions', body: completion },
  };
}
