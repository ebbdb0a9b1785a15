import type { CanonicalCall, ReasoningEffort } from '../gateway/canonical.ts';
import { errors, type ApiError } from '../platform/errors.ts';
import { claudeThinkingOf } from './claude-thinking.ts';

/**
 * A call's reasoning in each upstream's own terms (README "Anthropic Messages", "OpenAI Responses", "Pass-through
 * allow-list"). The canonical call carries an effort (OpenAI's `reasoning_effort`, Responses' `reasoning.effort`,
 * Anthropic's `output_config.effort`) and a thinking budget (Anthropic's `thinking.budget_tokens`); each reaches an
 * upstream in the form that model takes, or is left out where the model cannot think:
 *
 * - OpenAI-compatible: an effort as `reasoning_effort`, as sent, but where OpenAI's own models have no such level
 *   ({@link openAiEffortOf}: `none` is `minimal` on gpt-5, the o-series takes only low/medium/high). A budget
 *   without an effort becomes the effort whose share of the output cap is nearest (OpenRouter's rule, below);
 *   OpenRouter itself gets the budget as its own `reasoning.max_tokens`. Both only for a model that reasons (the
 *   catalogue's `reasons`): on another the budget is left out, since the model cannot think (its answer is the same)
 *   and OpenAI's non-reasoning models and many compatible servers answer 400 to `reasoning_effort`.
 * - Anthropic: an effort turns thinking on the way the model's generation takes it (`claude-thinking.ts`;
 *   {@link anthropicReasoning}), since an `output_config.effort` alone does not; `none` is
 *   `thinking: { type: "disabled" }`. Only for a model that reasons: another gets no reasoning field at all.
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
 * The efforts OpenAI's own models lack, and what they take instead (as OpenRouter maps them), on the upstream id
 * (an OpenRouter `openai/…` id too), first match wins; an effort not listed, or a model not listed, is sent as is:
 * - gpt-5, gpt-5-mini, gpt-5-nano (and their dated snapshots): `none` exists only from gpt-5.1 on; they refuse it
 *   and take `minimal`, their lowest;
 * - the o-series (o1, o3, o3-mini, o3-pro, o4-mini…): only low, medium and high, so `none` and `minimal` are `low`
 *   (their least thinking), `xhigh` and `max` are `high`.
 */
const OPENAI_EFFORT_GAPS: ReadonlyArray<readonly [RegExp, Partial<Record<ReasoningEffort, ReasoningEffort>>]> = [
  [/(^|\/)gpt-5(-mini|-nano)?(-\d{4}-\d{2}-\d{2})?$/i, { none: 'minimal' }],
  [/(^|\/)o\d(-mini|-pro)?(-\d{4}-\d{2}-\d{2})?$/i, { none: 'low', minimal: 'low', xhigh: 'high', max: 'high' }],
];

/** The effort an OpenAI-compatible `model` is sent for `effort`: the nearest it takes (see the table above). */
export function openAiEffortOf(model: string, effort: ReasoningEffort): ReasoningEffort {
  for (const [pattern, gaps] of OPENAI_EFFORT_GAPS) if (pattern.test(model)) return gaps[effort] ?? effort;
  return effort;
}

/**
 * The reasoning fields of an OpenAI-compatible chat body for `model` (the upstream id). The effort wins over a
 * budget when a call has both (Anthropic's `thinking` with `output_config.effort`): it is the level the client
 * named, sent whatever the model (the client's own request, the upstream judges it), in a level the model has
 * ({@link openAiEffortOf}). A budget alone is sent only when `modelReasons`.
 */
export function openAiReasoningFields(
  reasoning: CanonicalCall['reasoning'],
  cap: number,
  provider: string,
  model: string,
  modelReasons: boolean,
): Record<string, unknown> {
  if (reasoning?.effort) return { reasoning_effort: openAiEffortOf(model, reasoning.effort) };
  const budget = reasoning?.budgetTokens;
  if (budget === undefined || !modelReasons) return {};
  // OpenRouter takes a budget as it is, and converts it for each model behind it by the same rule.
  if (provider === 'openrouter') return { reasoning: { max_tokens: budget } };
  return { reasoning_effort: openAiEffortOf(model, effortOfBudget(budget, cap)) };
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
 * The thinking budget an effort asks of a model that takes only a budget (Claude 3.7 to 4.5), as a share of the
 * output cap: OpenRouter's shares ({@link BUDGET_SHARES}; `minimal` as `low`, Anthropic's lowest), and for the
 * levels above `high` a larger one that still leaves the answer a tenth (`xhigh`) or a twentieth (`max`) of the cap.
 */
const EFFORT_SHARES: Readonly<Record<Exclude<ReasoningEffort, 'none'>, number>> = {
  minimal: 0.2,
  low: 0.2,
  medium: 0.5,
  high: 0.8,
  xhigh: 0.9,
  max: 0.95,
};

/** Anthropic's least thinking budget (`budget_tokens` ≥ 1024). */
const MIN_THINKING_BUDGET = 1024;

/**
 * The reasoning of a Messages request to the Claude model `model` (the upstream id) under the output cap `cap` (the
 * `max_tokens` sent): `thinking`, and the `output_config.effort` to merge into the request's `output_config` (beside
 * a structured output's `format`). An effort alone does not turn thinking on at Anthropic, so an effort becomes
 * thinking the way the model's generation takes it (`claude-thinking.ts`):
 *
 * - Claude 4.6 and later (and an id that does not parse): `thinking: { type: "adaptive" }` with the effort. A budget
 *   without an effort stays a budget on 4.6 (which still takes one); on a model that takes adaptive thinking only
 *   (Opus 4.7 and later, Claude 5) it becomes adaptive with the effort of that budget ({@link effortOfBudget}).
 * - Claude 3.7 to 4.5: `thinking: { type: "enabled", budget_tokens }`, the budget as sent or the effort's share of
 *   the cap ({@link EFFORT_SHARES}), at least 1024 and below the cap (no thinking when the cap is 1024 or less); no
 *   effort, a parameter these models do not know.
 * - `none`: `thinking: { type: "disabled" }`.
 *
 * A model that does not reason (the catalogue's `reasons` false, or a Claude before 3.7 whatever it says) gets
 * nothing: it cannot think, and Anthropic refuses thinking and the effort there, which would fail a call the model
 * can answer (the OpenAI-compatible side leaves a derived budget out likewise).
 */
export function anthropicReasoning(
  reasoning: CanonicalCall['reasoning'],
  cap: number,
  model: string,
  modelReasons: boolean,
): { thinking?: Record<string, unknown>; effort?: string } {
  const effort = reasoning?.effort;
  const budget = reasoning?.budgetTokens;
  if ((effort === undefined && budget === undefined) || !modelReasons) return {};
  const kind = claudeThinkingOf(model);
  if (kind === 'none') return {};
  if (effort === 'none') return { thinking: { type: 'disabled' } };
  if (kind === 'budget' || (kind === 'adaptive' && effort === undefined)) {
    const asked = budget ?? Math.floor(EFFORT_SHARES[effort!] * cap);
    if (cap <= MIN_THINKING_BUDGET) return {};
    return { thinking: { type: 'enabled', budget_tokens: Math.max(MIN_THINKING_BUDGET, Math.min(asked, cap - 1)) } };
  }
  const level = effort ?? effortOfBudget(budget!, cap);
  return { thinking: { type: 'adaptive' }, effort: ANTHROPIC_EFFORTS[level]! };
}

/** The model fields a Claude thinking conflict depends on (a catalogue model's). */
export interface ThinkingModel {
  id: string;
  provider: string;
  upstreamModel: string;
  reasons: boolean;
  maxOutputTokens: number | null;
}

/**
 * Why an Anthropic model cannot take this call, or null: the call's effort turns thinking on there (see
 * {@link anthropicReasoning}) and the call also has what Anthropic does not combine with thinking, which it would
 * answer with a 400 only after the hold: a temperature other than 1, a `top_k`, a `top_p` below 0.95, or a tool
 * choice that forces a tool (`required`, a named function). `effortParam` is the effort's field in the client's
 * protocol (`reasoning_effort`, `reasoning.effort`), named in the message; the error names the conflicting field.
 * The protocols' `refuses` hooks call it, so the model asked for answers 400 `UNSUPPORTED_PARAMETER` before anything
 * is held and a fallback on Anthropic is left out.
 */
export function claudeThinkingConflict(
  call: CanonicalCall,
  model: ThinkingModel,
  effortParam: string,
): ApiError | null {
  const effort = call.reasoning?.effort;
  if (model.provider !== 'anthropic' || effort === undefined || effort === 'none') return null;
  // The cap the upstream gets is at most the client's and the model's; below 1025 a budget model does not think.
  const cap = Math.min(call.maxOutputTokens ?? Infinity, model.maxOutputTokens ?? Infinity, Number.MAX_SAFE_INTEGER);
  const { thinking } = anthropicReasoning({ effort }, cap, model.upstreamModel, model.reasons);
  if (thinking?.type !== 'enabled' && thinking?.type !== 'adaptive') return null;
  const conflict =
    call.temperature !== undefined && call.temperature !== 1
      ? { param: 'temperature', what: 'a temperature other than 1' }
      : call.topK !== undefined
        ? { param: 'top_k', what: 'top_k' }
        : call.topP !== undefined && call.topP < 0.95
          ? { param: 'top_p', what: 'a top_p below 0.95' }
          : call.toolChoice === 'required' || typeof call.toolChoice === 'object'
            ? { param: 'tool_choice', what: 'a tool choice that forces a tool ("required" or a named function)' }
            : null;
  if (!conflict) return null;
  return errors.unsupported(
    conflict.param,
    `${effortParam} "${effort}" turns on Claude's thinking on "${model.id}", which Anthropic does not combine with ${conflict.what}: send one or the other (leave ${conflict.param} out, or ${effortParam} out or "none").`,
  );
}
