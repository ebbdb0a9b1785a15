import type { GatewayDeps } from './deps.ts';
import type { Principal } from '../platform/http/principal.ts';
import { ApiError } from '../platform/errors.ts';
import { Meter } from '../billing/meter.ts';
import {
  callOutputCap,
  callWorstCase,
  chatCallPlan,
  type CallPlan,
  type ChatPlan,
  type ChatRequest,
} from './chat-plan.ts';

/**
 * Opens the meter of a call (any protocol's; recorded as kind `chat`). The hold is first placed for the full
 * worst case. When the wallet or a spending limit refuses it (402/429) and the client set no output cap
 * (`max_tokens`, `max_completion_tokens`, `max_output_tokens`), the output cap is
 * lowered to the largest one the payer can afford — at least `MIN_AFFORDABLE_OUTPUT_TOKENS` — and the hold
 * is placed again for exactly that plan, whose cap is then the one sent upstream.
 *
 * Invariants: an explicit output cap is never lowered (the client asked for it: it gets it or the contract's
 * error); the lowered hold is placed by the same atomic check as any hold, so a concurrent spend between
 * reading what is spendable and holding only makes the second placement fail with the contract's error;
 * when even the floor is not affordable the first refusal (for the full worst case) is answered unchanged.
 */
export async function openCallMeter(
  ctx: GatewayDeps,
  principal: Principal,
  modelId: string,
  plan: CallPlan,
): Promise<{ meter: Meter; plan: CallPlan }> {
  // Only a refusal that is the call's answer is announced (`limit.reached`): not one a lowered cap then serves.
  const retryable = plan.asked === null;
  try {
    const meter = await Meter.open(ctx, principal, 'chat', modelId, callWorstCase(plan), {
      announceRefusal: !retryable,
    });
    return { meter, plan };
  } catch (error) {
    if (!isRestriction(error) || !retryable) throw error;
    const { amount } = await ctx.billing.spendable(principal);
    const ceiling = affordableCallCeiling(plan, amount, ctx.config.MIN_AFFORDABLE_OUTPUT_TOKENS);
    if (ceiling === null) {
      ctx.billing.announceRefusal(principal, error);
      throw error;
    }
    const lowered: CallPlan = { ...plan, ceiling };
    return { meter: await Meter.open(ctx, principal, 'chat', modelId, callWorstCase(lowered)), plan: lowered };
  }
}

/** The contract's restriction errors: the wallet (402) or a spending limit (429). */
function isRestriction(error: unknown): error is ApiError {
  return (
    error instanceof ApiError && (error.code === 'INSUFFICIENT_CREDITS' || error.code === 'SPENDING_LIMIT_EXCEEDED')
  );
}

/**
 * The largest output cap, at least `floor`, whose worst case over the plan's models is within `spendable`
 * micro-credits; null when even `floor` is not (or the models' own cap is already at most `floor`).
 * The worst case grows with the cap, so a binary search finds it in ~log2(cap) cost computations.
 */
export function affordableCeiling(
  request: ChatRequest,
  plan: ChatPlan,
  spendable: number,
  floor: number,
): number | null {
  return affordableCallCeiling(chatCallPlan(request, plan), spendable, floor);
}

/** {@link affordableCeiling} over any protocol's plan. */
export function affordableCallCeiling(plan: CallPlan, spendable: number, floor: number): number | null {
  const full = Math.max(...plan.candidates.map((model) => callOutputCap({ ...plan, ceiling: null }, model)));
  if (full <= floor) return null;
  const fits = (ceiling: number) => callWorstCase({ ...plan, ceiling }) <= spendable;
  if (!fits(floor)) return null;
  let low = floor;
  let high = full;
  while (low < high) {
    const middle = low + Math.ceil((high - low) / 2);
    if (fits(middle)) low = middle;
    else high = middle - 1;
  }
  return low;
}
