import { errors } from '../../platform/errors.ts';
import { REASONING_EFFORTS, type ReasoningEffort } from '../../gateway/canonical.ts';

/**
 * The chat fields each provider is sent, and what the gateway does with each (README "Pass-through
 * allow-list").
 *
 * Security invariant: a field reaches an upstream only if it is on that provider's allow-list, and a field
 * on it that changes what the call costs is either counted into the hold (`priced`) or checked to a value
 * the catalogue price covers (`checked`). A field that is on no list is refused with 400
 * `UNSUPPORTED_PARAMETER` naming it, never passed on unread: a new upstream option (a web search, a
 * priority tier, an audio output) can make a call cost more than its hold, and the capture is capped at the
 * hold, so the operator would pay the difference. Fields that are known to change the cost and that the
 * catalogue cannot price are refused by name with the reason.
 */

/** How the gateway treats an allowed field. */
export type FieldRule =
  /** Passed as sent: it changes nothing the hold does not already bound (sampling, tool plumbing…). */
  | 'passed'
  /** Passed, and counted into the hold (its tokens are prompt or completion tokens). */
  | 'priced'
  /** Passed when its value costs no more than the catalogue price; another value is refused. */
  | 'checked';

/** Fields every OpenAI-compatible upstream receives as sent (their cost is bounded by tokens already held). */
const OPENAI_PASSED = [
  'model',
  'messages',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'n',
  'temperature',
  'top_p',
  'stop',
  'seed',
  'user',
  'tools',
  'tool_choice',
  'parallel_tool_calls',
  'response_format',
  'frequency_penalty',
  'presence_penalty',
  'logit_bias',
  'logprobs',
  'top_logprobs',
  'reasoning_effort',
  'verbosity',
  'metadata',
  'store',
  'function_call',
  'prompt_cache_key',
  'safety_identifier',
] as const;

/** Fields counted into the hold: `functions` (legacy tools, prompt tokens) and `prediction` (its tokens may all be billed as output). */
const OPENAI_PRICED = ['functions', 'prediction'] as const;

/** Fields passed only with a value the catalogue price covers. */
const OPENAI_CHECKED = ['service_tier', 'modalities'] as const;

/** OpenAI's own options: how long the prompt cache keeps a prefix (`in_memory`, `24h`: priced alike by OpenAI). */
const OPENAI_ONLY_PASSED = ['prompt_cache_retention'] as const;

/** OpenRouter's own sampling and routing-free options (output stays bounded by the cap sent). */
const OPENROUTER_PASSED = [
  'top_k',
  'repetition_penalty',
  'min_p',
  'top_a',
  'transforms',
  'reasoning',
  'include_reasoning',
  'usage',
] as const;

/** Sampling options of the usual self-hosted OpenAI-compatible servers (vLLM, Ollama, llama.cpp). */
const SELF_HOSTED_PASSED = ['top_k', 'min_p', 'repetition_penalty'] as const;

/** What the Anthropic translation reads (`providers/anthropic.ts`); nothing else reaches Anthropic. */
const ANTHROPIC_PASSED = [
  'model',
  'messages',
  'stream',
  'stream_options',
  'max_tokens',
  'max_completion_tokens',
  'n',
  'temperature',
  'top_p',
  'top_k',
  'stop',
  'tools',
  'tool_choice',
  // Read as the canonical parallelToolCalls: false becomes Anthropic's disable_parallel_tool_use (fewer calls).
  'parallel_tool_calls',
  'metadata',
  'user',
  // Accepted and not sent: OpenAI's cache routing means nothing to Anthropic, which caches by `cache_control`.
  'prompt_cache_key',
  'prompt_cache_retention',
] as const;

/**
 * Read by the Anthropic translation when its value has an Anthropic form: a `json_schema` format becomes
 * `output_config.format` (its schema's tokens are counted into the hold as for any provider); a
 * `reasoning_effort` turns thinking on as the model's Claude generation takes it (adaptive with `output_config.effort`,
 * or a `budget_tokens`; `none` as disabled thinking; `providers/reasoning.ts`), its thinking tokens output tokens
 * inside the cap held for.
 */
const ANTHROPIC_CHECKED = ['response_format', 'reasoning_effort'] as const;

/** Fields known to change the cost beyond what the catalogue prices, refused by name with why. */
export const REFUSED_FIELDS: Readonly<Record<string, string>> = {
  web_search_options: 'a web search is billed per search on top of tokens, and the catalogue has no price for it here',
  audio: 'audio output is billed at audio-token prices the hold does not cover',
  plugins: "OpenRouter plugins (web search, file parsing) are billed on top of the model's tokens",
  models: "OpenRouter's model list routes to other models at their own prices; use the catalogue's fallbacks instead",
  route: "OpenRouter's routing may answer with another model at its own price",
  provider: "OpenRouter's provider preferences may pick an endpoint priced above the catalogue's price",
};

/** Built once per provider name (the lists are constant). */
const allowLists = new Map<string, ReadonlyMap<string, FieldRule>>();

/** Every provider's allow-list: field → rule. Providers not named here are self-hosted OpenAI-compatible ones. */
export function allowListOf(provider: string): ReadonlyMap<string, FieldRule> {
  let rules = allowLists.get(provider);
  if (!rules) allowLists.set(provider, (rules = buildAllowList(provider)));
  return rules;
}

function buildAllowList(provider: string): ReadonlyMap<string, FieldRule> {
  const rules = new Map<string, FieldRule>();
  const add = (fields: readonly string[], rule: FieldRule) => fields.forEach((field) => rules.set(field, rule));
  if (provider === 'anthropic') {
    add(ANTHROPIC_PASSED, 'passed');
    add(ANTHROPIC_CHECKED, 'checked');
    return rules;
  }
  add(OPENAI_PASSED, 'passed');
  add(OPENAI_PRICED, 'priced');
  add(OPENAI_CHECKED, 'checked');
  if (provider === 'openai' || provider === 'echo') add(OPENAI_ONLY_PASSED, 'passed');
  if (provider === 'openrouter') add(OPENROUTER_PASSED, 'passed');
  else if (provider !== 'openai' && provider !== 'echo') add(SELF_HOSTED_PASSED, 'passed');
  return rules;
}

/** `service_tier` values billed at (or below) the standard price: OpenAI's `priority` (and `scale`) cost more. */
export const STANDARD_SERVICE_TIERS: readonly string[] = ['auto', 'default', 'flex'];

/**
 * Why a `checked` field's value is refused, or null when the provider can take it: a value the catalogue price
 * does not cover, or one the provider has no form for (which would otherwise be dropped unread).
 */
function checkedValueProblem(field: string, value: unknown): string | null {
  if (value === undefined || value === null) return null;
  if (field === 'response_format') {
    // Checked for Anthropic only (OpenAI-compatible upstreams take every format as sent).
    const format = value as { type?: unknown; json_schema?: { schema?: unknown } };
    if (format.type === 'text') return null;
    if (format.type === 'json_schema' && format.json_schema?.schema && typeof format.json_schema.schema === 'object')
      return null;
    return 'Anthropic takes a structured output as a JSON Schema only: give `{ "type": "json_schema", "json_schema": { "name", "schema" } }` (it has no schema-less `json_object` mode)';
  }
  if (field === 'reasoning_effort') {
    // Checked for Anthropic only (OpenAI-compatible upstreams get it as sent, and judge it themselves).
    return REASONING_EFFORTS.includes(value as ReasoningEffort)
      ? null
      : `Anthropic's effort has no form for ${JSON.stringify(value)}; use one of ${REASONING_EFFORTS.join(', ')}`;
  }
  if (field === 'service_tier') {
    return typeof value === 'string' && STANDARD_SERVICE_TIERS.includes(value)
      ? null
      : `service_tier ${JSON.stringify(value)} is billed above the catalogue price; use one of ${STANDARD_SERVICE_TIERS.join(', ')}`;
  }
  if (field === 'modalities') {
    return Array.isArray(value) && value.every((m) => m === 'text')
      ? null
      : 'only text output is priced; audio output is billed at audio-token prices the hold does not cover';
  }
  return null;
}

/**
 * Refuses the request when one of its fields may not reach `provider`: a 400 `UNSUPPORTED_PARAMETER` whose
 * `param` names the field and whose message says why. Returns nothing when every field is allowed.
 */
export function checkPassThrough(body: Record<string, unknown>, provider: string): void {
  const problem = passThroughProblem(body, provider);
  if (problem) throw errors.unsupported(problem.field, problem.message);
}

/** The first field of `body` that may not reach `provider`, and why; null when all may. */
export function passThroughProblem(
  body: Record<string, unknown>,
  provider: string,
): { field: string; message: string } | null {
  const rules = allowListOf(provider);
  for (const [field, value] of Object.entries(body)) {
    if (value === undefined) continue;
    const rule = rules.get(field);
    if (rule === undefined) {
      const why = REFUSED_FIELDS[field];
      return {
        field,
        message: why
          ? `The field "${field}" is refused: ${why}.`
          : `The field "${field}" is not on the pass-through allow-list of the provider "${provider}"; the gateway passes only fields whose cost it can hold for (README "Pass-through allow-list").`,
      };
    }
    if (rule === 'checked') {
      const why = checkedValueProblem(field, value);
      if (why) return { field, message: `The field "${field}" is refused: ${why}.` };
    }
  }
  return null;
}
