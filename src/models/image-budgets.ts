/**
 * How many prompt tokens one image part may cost, per model: the budget a chat hold reserves for each image
 * (the catalogue's `imageTokens`). A model without a budget refuses image parts, so an image is never held
 * at less than it can cost.
 *
 * The defaults below are each family's documented worst case, the largest image the provider accepts at its
 * highest detail:
 * - OpenAI tile models (gpt-4o, gpt-4.1, o1, o3…): high detail scales to fit 2048², then the short side to
 *   768 px, so at most 2 × 4 tiles of 512 px: 85 + 8 × 170 = 1,445 tokens;
 * - gpt-4o-mini counts the same tiles at 2,833 + 8 × 5,667 = 48,169 tokens (priced so an image costs what it
 *   costs on gpt-4o: a 1024² image is 25,501 tokens);
 * - OpenAI patch models (gpt-4.1-mini, gpt-4.1-nano, o4-mini): at most 1,536 patches of 32 px times the
 *   model's multiplier (1.62, 2.46, 1.72): 2,489, 3,779 and 2,642 tokens; gpt-5 variants count images
 *   either way, so they get the largest of both, 3,779;
 * - Anthropic Claude: an image is resized to at most ~1.15 megapixels, ≈ width × height / 750 ≤ 1,600 tokens;
 * - Google Gemini: 258 tokens per 768 px tile, and a large image is up to 6 tiles plus an overview: 1,806;
 * - any other model that lists image input: {@link DEFAULT_IMAGE_TOKENS}, gpt-4o-mini's worst case, the
 *   largest of the families above (an unknown tokenizer is assumed to be the most expensive known one).
 */
export const DEFAULT_IMAGE_TOKENS = 48_169;

/** Known families, first match wins: a pattern on the upstream model id (OpenRouter's ids keep the vendor). */
const FAMILY_BUDGETS: ReadonlyArray<readonly [RegExp, number]> = [
  [/gpt-4o-mini/i, 48_169],
  [/gpt-4\.1-nano/i, 3_779],
  [/gpt-4\.1-mini/i, 2_489],
  [/o4-mini/i, 2_642],
  [/gpt-5/i, 3_779],
  [/(^|\/)(gpt-4o|gpt-4\.1|gpt-4\.5|gpt-4-turbo|o1|o3|chatgpt-4o)/i, 1_445],
  [/claude/i, 1_600],
  [/gemini/i, 1_806],
];

/**
 * The image budget a model gets when the operator or the sync sets none: its family's worst case, the
 * default for another model that lists image input, and null (image parts refused) for a text-only model.
 */
export function defaultImageTokens(upstreamModel: string, inputModalities: readonly string[]): number | null {
  if (!inputModalities.includes('image')) return null;
  for (const [pattern, budget] of FAMILY_BUDGETS) if (pattern.test(upstreamModel)) return budget;
  return DEFAULT_IMAGE_TOKENS;
}
