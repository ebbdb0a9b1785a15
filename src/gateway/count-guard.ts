import type { GatewayDeps } from './deps.ts';
import { ApiError } from '../platform/errors.ts';
import type { Principal } from '../platform/http/principal.ts';
import { insufficientCredits } from '../billing/limits.ts';
import { costMicros } from '../models/pricing.ts';
import type { CatalogueModel } from '../models/catalogue.ts';
import { chatPromptLowerBound } from '../providers/tokens.ts';

/**
 * Prompt text (UTF-16 code units) from which exact counting costs more than a wallet read, so the wallet is
 * read first: counting 2 Ki characters took ~0.3 ms on the 2-core test machine (32 Ki: ~4.5 ms), about one
 * PostgreSQL round trip. Below it the hold's own check answers the 402 for the same cost.
 */
export const COUNT_GUARD_TEXT_LENGTH = 2 * 1024;

/**
 * Refuses a chat before its prompt is counted exactly, when facts that cost nothing to read already decide
 * it. Exact counting of a body near the size limit takes a noticeable time on the event loop; nobody may
 * make the gateway spend it on a call that cannot go ahead.
 *
 * - 400 INVALID_REQUEST when the prompt's lower bound of tokens (lengths / 128, see
 *   `chatPromptLowerBound`) already exceeds the context of every candidate model (each stating one);
 * - for a prompt long enough that counting is worth a wallet read (`COUNT_GUARD_TEXT_LENGTH`): 402
 *   INSUFFICIENT_CREDITS when the wallet's available credits are below the cheapest candidate's cost of
 *   that lower bound (one request, no output), an empty wallet included. The hold would refuse it anyway,
 *   for a worst case that is never smaller.
 */
export async function refuseBeforeCounting(
  ctx: GatewayDeps,
  principal: Principal,
  body: { messages: unknown[] },
  candidates: CatalogueModel[],
): Promise<void> {
  if (candidates.length === 0) return;
  const bound = chatPromptLowerBound(body);
  const contexts = candidates.map((model) => model.contextLength);
  if (contexts.every((context) => context !== null && bound.tokens > context)) {
    throw new ApiError(
      'INVALID_REQUEST',
      `The prompt is longer than the model's context: at least ${bound.tokens} tokens, and the model takes ${Math.max(...(contexts as number[]))}.`,
    );
  }
  if (bound.textLength < COUNT_GUARD_TEXT_LENGTH) return;
  const cheapest = Math.min(
    ...candidates.map((model) => costMicros(model.pricing, { promptTokens: bound.tokens, requests: 1 })),
  );
  if (cheapest <= 0) return;
  const { available } = await ctx.billing.getBalance(principal.userId);
  if (available < cheapest) {
    throw insufficientCredits(available, cheapest, 'at least');
  }
}
