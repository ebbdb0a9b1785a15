import type { GatewayDeps } from './deps.ts';
import type { CanonicalCall } from './canonical.ts';
import type { CatalogueModel } from '../models/catalogue.ts';
import type { Principal } from '../platform/http/principal.ts';
import { countCallPromptTokens } from './run-call.ts';
import { estimatedPdfTokens } from './document-estimate.ts';

/** Images of a call (system and messages): each counts at the model's image-token budget, as the hold does. */
function imageParts(call: CanonicalCall): number {
  let images = 0;
  for (const message of [{ content: call.system }, ...call.messages])
    for (const part of message.content) if (part.type === 'image') images++;
  return images;
}

/**
 * The gateway's own count of a call's input, for the token-counting routes (Messages `count_tokens`, Responses
 * `input_tokens`): the text, tools and replayed input by our tokenizer (o200k), images at the model's image-token
 * budget, and each PDF ESTIMATED by its pages (`document-estimate.ts`), not held at the context: a count is the
 * best guess at the input, not the worst case the hold takes.
 */
export async function estimateInputTokens(
  ctx: GatewayDeps,
  principal: Principal,
  call: CanonicalCall,
  model: CatalogueModel,
): Promise<number> {
  const tokens = await ctx.promptCounts.countPrompt(principal, (count) => countCallPromptTokens(call, count));
  return tokens + imageParts(call) * (model.imageTokens ?? 0) + estimatedPdfTokens(call);
}
