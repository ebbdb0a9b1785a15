import type { CanonicalCall, ReasoningEffort } from '../gateway/canonical.ts';

/**
 * A call's reasoning in each upstream's own terms (README "Anthropic Messages", "OpenAI Responses", "Pass-through
 * allow-list"). The canonical call carries an effort (OpenAI's `reasoning_effort`, Responses' `reasoning.effort`,
 * Anthropic's `output_config.effort`) and a thinking budget (Anthropic's `thinking.budget_tokens`); neither is ever
 * dropped on the way to an upstream:
 *
 * - OpenAI-compatible: an effort as `reasoning_effort`, as sent (OpenAI knows every canonical effort). A budget
 *   without an effort becomes the effort whose share of the output cap is nearest (OpenRouter's rule, below);
 *   OpenRouter itself gets the budget as its own `reasoning.max_tokens`. Both only for a model that reasons (the
 *   catalogue's `reasons`): on another the budget is left out, since the model cannot think (its answer is the same)
 *   and OpenAI's non-reasoning models and many compatible servers answer 400 to `reasoning_effort`.
 * - Anthropic: an effort as `output_config.effort` (OpenAI's `minimal` as Anthropic's lowest, `low`; `none` as
 *   `thinking: { type: "disabled" }`); a budget as `thinking: { type: "enabled", budget_tokens }`.
 *
 * Billing: reasoning and thinking tokens are output tokens inside the output cap on both vendors, so none of this
 * changes what a call holds.
 */

/**
 * The share of the output cap each effort spends on reasoning, as OpenRouter documents it ("Reasoning Tokens":
 * high ≈ 80 % of max_tokens, medium ≈ 50 %, low ≈ 20 %), which it uses to turn `reasoning.max_tokens` into an
 * effort for a model that only takes an effort. `minimal` (≈ 10 %) and `xhigh` (≈ 95 %) are left out: not every
 * OpenAI reasoning model takes them (gpt-5.1 refuses `minimal`, few models know `xhigh`), and a budget is a
 * quantity, not a request for an extreme level, so it never makes a call the model refuses.
 */
const BUDGET_SHARES: ReadonlyArray<readonly [ReasoningEffort, number]> = [
  ['low', 0.2],
  ['medium', 0.5],
  ['high', 0.8],
];

/**
 * The effort a thinking budget asks for: the one whose share of `cap` (the output cap sent) is nearest to the
 * budget's. Claude Code's 31,999 of 32,000 is `high`; 2,048 of 4,096 `medium`; 1,024 of 8,192 `low`.
 */
export function effortOfBudget(budgetTokens: number, cap: number): ReasoningEffort {
  const share = budgetTokens / Math.max(cap, 1);
  let best = BUDGET_SHARES[0]!;
  for (const candidate of BUDGET_SHARES)
    if (Math.abs(candidate[1] - share) < Math.abs(best[1] - share)) best = candidate;
  return best[0];
}

/**
 * The reasoning fields of an OpenAI-compatible chat body. The effort wins over a budget when a call has both
 * (Anthropic's `thinking` with `output_config.effort`): it is the level the client named, sent whatever the model
 * (the client's own request, the upstream judges it). A budget alone is sent only when `modelReasons`.
 */
export function openAiReasoningFields(
  reasoning: CanonicalCall['reasoning'],
  cap: number,
  provider: string,
  modelReasons: boolean,
): Record<string, unknown> {
  if (reasoning?.effort) return { reasoning_effort: reasoning.effort };
  const budget = reasoning?.budgetTokens;
  if (budget === undefined || !modelReasons) return {};
  // OpenRouter takes a budget as it is, and converts it for each model behind it by the same rule.
  if (provider === 'openrouter') return { reasoning: { max_tokens: budget } };
  return { reasoning_effort: effortOfBudget(budget, cap) };
}

/** Anthropic's efforts (`output_config.effort`): OpenAI's `minimal` is below Anthropic's lowest. */
const ANTHROPIC_EFFORTS: Readonly<Record<ReasoningEffort, string | null>> = {
  none: null,
  minimal: 'low',
  low: 'low',
  medium: 'medium',
  high: 'high',
  xhigh: 'xhigh',
  max: 'max',
};

/**
 * The reasoning of a Messages request: `thinking` (a budget, lowered to what `cap` leaves, as Anthropic wants it
 * below `max_tokens`; or disabled for the effort `none`) and the `output_config.effort` to merge into the request's
 * `output_config` (beside a structured output's `format`).
 */
export function anthropicReasoning(
  reasoning: CanonicalCall['reasoning'],
  cap: number,
): { thinking?: Record<string, unknown>; effort?: string } {
  const out: { thinking?: Record<string, unknown>; effort?: string } = {};
  const budget = reasoning?.budgetTokens;
  if (budget !== undefined && cap > 1024)
    out.thinking = { type: 'enabled', budget_tokens: Math.max(1024, Math.min(budget, cap - 1)) };
  const effort = reasoning?.effort;
  if (effort === 'none') out.thinking = { type: 'disabled' };
  else if (effort) out.effort = ANTHROPIC_EFFORTS[effort]!;
  return out;
}
