import { ApiError, errors } from '../../platform/errors.ts';
import type { CatalogueModel } from '../../models/catalogue.ts';
import type { CanonicalCall, CanonicalMessage } from '../../gateway/canonical.ts';

/**
 * An OpenAI legacy completion request (`POST /v1/completions`) as a canonical call. The body travels as
 * `native`: an OpenAI-compatible provider receives it as sent on its own `/completions` (model and cap replaced),
 * so a completion model continues the prompt (and fills in the middle with `suffix`); a provider without legacy
 * completions (Anthropic, the echo model) gets the prompt as one user message, and the fields that have no form
 * there are refused by name ({@link completionRefusal}).
 */

/** The legacy completion fields the gateway reads; the others pass through when on the allow-list. */
export interface CompletionRequest {
  model: string;
  prompt: string | unknown[];
  suffix?: string | null;
  max_tokens?: number | null;
  n?: number | null;
  best_of?: number | null;
  echo?: boolean | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean; [k: string]: unknown } | null;
  [field: string]: unknown;
}

/** OpenAI's output cap when `max_tokens` is omitted (its API reference: "Defaults to 16"). */
export const DEFAULT_COMPLETION_MAX_TOKENS = 16;

/**
 * Fields an OpenAI-compatible upstream receives as sent. Their cost is bounded by what the hold counts: the
 * prompts and `suffix` as input, `max_tokens` for each of `n` (or `best_of`, which the upstream generates and
 * bills whole) per prompt as output.
 */
const NATIVE_PASSED: ReadonlySet<string> = new Set([
  'model',
  'prompt',
  'suffix',
  'max_tokens',
  'n',
  'best_of',
  'echo',
  'logprobs',
  'logit_bias',
  'stop',
  'stream',
  'stream_options',
  'temperature',
  'top_p',
  'presence_penalty',
  'frequency_penalty',
  'seed',
  'user',
]);

/** Sampling options of OpenRouter and of the usual self-hosted servers (vLLM, Ollama, llama.cpp). */
const EXTRA_SAMPLING: ReadonlySet<string> = new Set(['top_k', 'min_p', 'repetition_penalty']);

/** What the canonical call carries to a provider without legacy completions: one prompt as one user message. */
const TRANSLATED: ReadonlySet<string> = new Set([
  'model',
  'prompt',
  'max_tokens',
  'stop',
  'stream',
  'stream_options',
  'temperature',
  'top_p',
  'user',
]);

/**
 * The prompts of a request: one string, or an array of strings (one completion each). Token arrays are refused:
 * the gateway counts text to hold for it, and a token id's text depends on the model's own vocabulary.
 */
function promptsOf(prompt: CompletionRequest['prompt']): string[] {
  if (typeof prompt === 'string') return [prompt];
  return prompt.map((item, i) => {
    if (typeof item === 'string') return item;
    throw errors.unsupported(
      `prompt[${i}]`,
      `prompt[${i}] is not a string: prompts as token ids are not accepted (the gateway counts a prompt's text to hold for its cost); send the text.`,
    );
  });
}

/** The canonical call of a validated legacy completion request (400 naming `prompt[i]` for a token array). */
export function parseCompletion(body: CompletionRequest): CanonicalCall {
  const prompts = promptsOf(body.prompt);
  if (body.echo === true && body.stream === true)
    throw errors.unsupported(
      'echo',
      'echo cannot be combined with stream here: a stream cut before its usage report is billed on the text it carried, which would count the echoed prompt as output. Send echo without stream.',
    );
  const suffix = typeof body.suffix === 'string' && body.suffix ? body.suffix : null;
  // Each prompt (with the suffix the upstream applies to each) is a user message: what the hold counts as input.
  const messages: CanonicalMessage[] = prompts.map((text) => ({
    role: 'user',
    content: [{ type: 'text', text }, ...(suffix ? [{ type: 'text' as const, text: suffix }] : [])],
  }));
  const call: CanonicalCall = {
    model: body.model,
    system: [],
    messages,
    tools: [],
    maxOutputTokens: body.max_tokens ?? DEFAULT_COMPLETION_MAX_TOKENS,
    stream: body.stream === true,
    choices: prompts.length * Math.max(body.n ?? 1, body.best_of ?? 1),
    rawPrompt: true,
    native: { protocol: 'openai-completions', body },
  };
  if (typeof body.temperature === 'number') call.temperature = body.temperature;
  if (typeof body.top_p === 'number') call.topP = body.top_p;
  if (typeof body.stop === 'string') call.stop = [body.stop];
  else if (Array.isArray(body.stop)) call.stop = body.stop.map(String);
  return call;
}

/**
 * Whether a field's value asks for nothing beyond what the translated call does (the defaults clients send on
 * every call: LangChain's legacy OpenAI LLM sends `presence_penalty: 0`, `frequency_penalty: 0`, `n: 1`,
 * `best_of: 1`, `logit_bias: {}`), so a provider without legacy completions may take the request without it.
 */
function asksNothing(field: string, value: unknown): boolean {
  switch (field) {
    case 'n':
    case 'best_of':
      return value === 1;
    case 'presence_penalty':
    case 'frequency_penalty':
    case 'logprobs':
      return value === 0;
    case 'echo':
      return value === false;
    case 'suffix':
      return value === '';
    case 'logit_bias':
      return typeof value === 'object' && value !== null && Object.keys(value).length === 0;
  }
  return false;
}

/**
 * The refusal of a model for this request, or null. `speaksCompletions` says whether a provider serves legacy
 * completions itself (its adapter speaks `openai-completions`).
 *
 * Security invariant: a field reaches an upstream only if it is on that provider's list here, and every field on
 * a list either changes nothing the hold does not bound or is counted into it (`parseCompletion`); any other field
 * is a 400 `UNSUPPORTED_PARAMETER` naming it, never passed on unread (an upstream option can make a call cost
 * more than its hold, and the capture is capped at the hold). A provider without legacy completions receives only
 * what the canonical call carries, so a field it would drop (`suffix`, `echo`, `logprobs`, more than one answer) is
 * refused rather than silently ignored.
 */
export function completionRefusal(
  body: CompletionRequest,
  speaksCompletions: (provider: string) => boolean,
): (model: CatalogueModel) => ApiError | null {
  return (model) => {
    const native = speaksCompletions(model.provider);
    const extras = native && model.provider !== 'openai';
    for (const [field, value] of Object.entries(body)) {
      if (value === undefined || value === null) continue;
      const allowed = native
        ? NATIVE_PASSED.has(field) || (extras && EXTRA_SAMPLING.has(field))
        : TRANSLATED.has(field) || asksNothing(field, value);
      if (allowed) continue;
      return errors.unsupported(
        field,
        native
          ? `The field "${field}" is not on the legacy completions allow-list of the provider "${model.provider}"; the gateway passes only fields whose cost it can hold for (README "Legacy completions").`
          : `The model "${model.id}" has no legacy completions upstream (its provider "${model.provider}" takes the prompt as one chat message), which has no form for "${field}"; send it to a completion model of an OpenAI-compatible provider, or use POST /api/v1/chat/completions.`,
      );
    }
    if (!native && Array.isArray(body.prompt) && body.prompt.length !== 1)
      return errors.unsupported(
        'prompt',
        `The model "${model.id}" has no legacy completions upstream (its provider "${model.provider}" takes the prompt as one chat message), so it answers one prompt per call; send the prompts one by one.`,
      );
    return null;
  };
}
