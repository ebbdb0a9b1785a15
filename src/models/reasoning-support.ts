/**
 * Whether a model takes a reasoning effort (the catalogue's `reasons`): a Messages `thinking.budget_tokens` becomes
 * a `reasoning_effort` only on such a model (`providers/reasoning.ts`). OpenAI's non-reasoning models (gpt-4o,
 * gpt-4.1…) and many OpenAI-compatible servers answer 400 to `reasoning_effort`, so a derived effort sent to them
 * failed a call the model could have answered (Claude Code sends a budget on every call).
 *
 * The default, when the operator sets none, is what the provider's `/models` list says when it says it
 * (OpenRouter's `supported_parameters`: `reasoning` or `reasoning_effort`), else the model's family below, else
 * false (the budget is left out, as for any model that cannot think).
 */

/** Parameters of OpenRouter's `supported_parameters` that say the model takes a reasoning effort. */
const REASONING_PARAMETERS: readonly string[] = ['reasoning', 'reasoning_effort'];

/**
 * Families that reason, on the upstream model id (OpenRouter's ids keep the vendor), first match wins; each from its
 * vendor's documentation:
 * - OpenAI ("Reasoning models"): o1 (not o1-mini or o1-preview, which refuse `reasoning_effort`), o3, o4-mini, the
 *   gpt-5 family but its chat-only variants (`gpt-5-chat-latest`, `gpt-5.1-chat-latest`: no reasoning parameters),
 *   and the open-weight gpt-oss;
 * - Anthropic ("Extended thinking"): Claude 3.7 Sonnet and every later Claude (4, 4.1, 4.5…), whatever its line
 *   (opus, sonnet, haiku, fable…);
 * - Google ("Gemini thinking"): Gemini 2.5 and later, but 2.5's image, speech and live-audio variants
 *   (`gemini-2.5-flash-image`, `-preview-tts`, `-native-audio`, `-live`), which take no thinking settings;
 * - DeepSeek ("Reasoning model"): R1, as `deepseek-r1` or the API's `deepseek-reasoner`.
 */
const FAMILIES: ReadonlyArray<readonly [RegExp, boolean]> = [
  [/(^|\/)o1-(mini|preview)/i, false],
  [/(^|\/)gpt-5[^/]*-chat/i, false],
  [/gemini-2\.5-[^/]*-(image|tts|audio|live)/i, false],
  [/(^|\/)(o1|o3|o4-mini|gpt-5|gpt-oss)/i, true],
  [/claude-(3[.-]7|[a-z]+-[4-9]|[4-9])/i, true],
  [/gemini-(2\.5|[3-9])/i, true],
  [/deepseek-(r1|reasoner)/i, true],
];

/** The default of `reasons` by family alone: what the operator gets when a PUT leaves it out. */
export function familyReasons(upstreamModel: string): boolean {
  for (const [pattern, reasons] of FAMILIES) if (pattern.test(upstreamModel)) return reasons;
  return false;
}

/**
 * The default of `reasons` for a model a provider lists: its `supported_parameters` when the list has them (a
 * provider that names its parameters knows better than a name), else its family.
 */
export function defaultReasons(upstreamModel: string, supportedParameters?: readonly string[]): boolean {
  if (supportedParameters) return supportedParameters.some((parameter) => REASONING_PARAMETERS.includes(parameter));
  return familyReasons(upstreamModel);
}
