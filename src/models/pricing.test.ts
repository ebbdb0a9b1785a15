import { it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import {
  costMicros,
  costMicrosInBigInts,
  effectivePricing,
  inputTokens,
  outputTokens,
  worstCaseCostMicros,
  type UsageBreakdown,
} from './pricing.ts';
import type { ModelPricing } from './catalogue.ts';
import { accountChat, chatBreakdown, MAX_REPORTED_TOKENS } from '../gateway/chat-usage.ts';
import {
  anthropicReport,
  openAiReport,
  referenceCost,
  referencePrices,
  reportedUsage,
  type ReferencePrices,
} from './testing/reference-pricing.ts';
import { canonicalUsageOfAnthropic } from '../providers/anthropic/wire.ts';

function catalogueOf(prices: ReferencePrices): ModelPricing {
  return { ...prices, second: 0, image: 0 };
}

it("property: the cost of any usage is the reference model's exact cost rounded up to the micro-credit, for OpenAI-shaped and Anthropic-shaped reports", () => {
  fc.assert(
    fc.property(referencePrices, reportedUsage(), fc.boolean(), (prices, usage, anthropic) => {
      const reported = anthropic ? { ...usage, audioIn: 0, audioOut: 0, reasoning: 0 } : usage;
      const report = anthropic ? canonicalUsageOfAnthropic(anthropicReport(reported)).reported : openAiReport(reported);
      const parts = chatBreakdown(report as any, { prompt: 7, output: () => 3 });
      assert.equal(inputTokens(parts), reported.input);
      assert.equal(outputTokens(parts), reported.output);
      assert.equal(BigInt(costMicros(catalogueOf(prices), parts)), referenceCost(prices, reported));
    }),
    { numRuns: 3000 },
  );
});

it('property: the charge is the cost when the hold covers it, the hold otherwise, and never 0 for a priced call that produced output', () => {
  fc.assert(
    fc.property(referencePrices, reportedUsage(), fc.integer({ min: 0, max: 2_000_000 }), (prices, usage, held) => {
      const account = accountChat(catalogueOf(prices), held, openAiReport(usage) as any, {
        prompt: 7,
        output: () => 3,
      });
      const cost = referenceCost(prices, usage);
      assert.equal(BigInt(account.charge), cost < BigInt(held) ? cost : BigInt(held));
      if (cost > 0n && held > 0) assert.ok(account.charge > 0);
      assert.equal(account.usage.cost, account.charge / 1_000_000);
    }),
    { numRuns: 3000 },
  );
});

it("property: the hold's worst case bounds the cost of any usage within its token counts, whatever the detail prices", () => {
  fc.assert(
    fc.property(
      referencePrices,
      reportedUsage({ maxInput: 5000, maxOutput: 5000 }),
      fc.integer({ min: 0, max: 1000 }),
      fc.integer({ min: 0, max: 1000 }),
      (prices, usage, extraIn, extraOut) => {
        const worst = worstCaseCostMicros(catalogueOf(prices), {
          promptTokens: usage.input + extraIn,
          completionTokens: usage.output + extraOut,
          requests: 1,
          webSearches: usage.webSearches,
        });
        assert.ok(BigInt(worst) >= referenceCost(prices, usage));
      },
    ),
    { numRuns: 2000 },
  );
});

/** Anything an upstream might put where a count belongs. */
const garbage = fc.oneof(
  fc.integer({ min: -1_000_000, max: -1 }),
  fc.double({ min: -1e6, max: 1e6, noNaN: true }).filter((n) => !Number.isInteger(n)),
  fc.constantFrom(1e300, -0, Number.MAX_SAFE_INTEGER, 2 ** 64, '12', 'lots', null, true, [], {}),
  fc.integer({ min: 0, max: 100_000 }),
);

it('property: a garbage usage report never throws; it is read as non-negative integers bounded by the caps and charged within the hold, never 0 for priced output', () => {
  const report = fc.record(
    {
      prompt_tokens: garbage,
      completion_tokens: garbage,
      prompt_tokens_details: fc.oneof(
        garbage,
        fc.record({ cached_tokens: garbage, cache_write_tokens: garbage, audio_tokens: garbage }),
      ),
      completion_tokens_details: fc.oneof(garbage, fc.record({ reasoning_tokens: garbage, audio_tokens: garbage })),
      server_tool_use: fc.oneof(garbage, fc.record({ web_search_requests: garbage })),
    },
    { requiredKeys: [] },
  );
  fc.assert(
    fc.property(
      referencePrices,
      fc.oneof(report, garbage),
      fc.integer({ min: 1, max: 5000 }),
      fc.integer({ min: 1, max: 10_000_000 }),
      (prices, reported, ownOutput, held) => {
        const account = accountChat(catalogueOf(prices), held, reported as any, { prompt: 9, output: () => ownOutput });
        for (const [part, value] of Object.entries(account.breakdown)) {
          assert.ok(Number.isSafeInteger(value) && value >= 0, `${part} = ${value}`);
          if (part !== 'requests') assert.ok(value <= MAX_REPORTED_TOKENS, part);
        }
        assert.ok(account.charge >= 0 && account.charge <= held);
        // Output was produced (we counted some): unless every output price or the call's price is 0, it costs something.
        const effective = effectivePricing(catalogueOf(prices));
        if ((effective.completion > 0 && effective.reasoning > 0 && effective.audioOutput > 0) || prices.request > 0)
          assert.ok(account.charge > 0, JSON.stringify(reported));
        assert.ok(
          Number.isSafeInteger(account.usage.prompt_tokens) && Number.isSafeInteger(account.usage.completion_tokens),
        );
      },
    ),
    { numRuns: 3000 },
  );
});

it('upstreams that count differently are read without charging a token twice or dropping one: DeepSeek cache hits, Gemini reasoning outside completion_tokens', () => {
  const own = { prompt: 5, output: () => 5 };
  const deepseek = chatBreakdown(
    { prompt_tokens: 1000, completion_tokens: 10, prompt_cache_hit_tokens: 600, prompt_cache_miss_tokens: 400 } as any,
    own,
  );
  assert.deepEqual([deepseek.prompt, deepseek.cachedRead], [400, 600]);
  // Gemini: total = prompt + completion + reasoning, so the 300 reasoning tokens are not inside the 20.
  const gemini = chatBreakdown(
    {
      prompt_tokens: 100,
      completion_tokens: 20,
      total_tokens: 420,
      completion_tokens_details: { reasoning_tokens: 300 },
    } as any,
    own,
  );
  assert.deepEqual([gemini.completion, gemini.reasoning], [20, 300]);
  // A Gemini call that only thought reports completion_tokens 0: the reasoning is still all charged.
  const thinker = chatBreakdown(
    {
      prompt_tokens: 21,
      completion_tokens: 0,
      total_tokens: 81,
      completion_tokens_details: { reasoning_tokens: 60 },
    } as any,
    { prompt: 5, output: () => 0 },
  );
  assert.deepEqual([thinker.completion, thinker.reasoning], [0, 60]);
  // OpenAI: reasoning inside completion_tokens (total = prompt + completion).
  const openai = chatBreakdown(
    {
      prompt_tokens: 100,
      completion_tokens: 320,
      total_tokens: 420,
      completion_tokens_details: { reasoning_tokens: 300 },
    } as any,
    own,
  );
  assert.deepEqual([openai.completion, openai.reasoning], [20, 300]);
});

it('an unset detailed price falls back to prompt (cache read, cache write, audio input) or completion (reasoning, audio output), never to 0', () => {
  const pricing: ModelPricing = { prompt: 2_000_000, completion: 8_000_000, request: 0, second: 0, image: 0 };
  const parts: UsageBreakdown = {
    prompt: 0,
    cachedRead: 1,
    cacheWrite: 1,
    cacheWrite1h: 0,
    audioIn: 1,
    completion: 0,
    reasoning: 1,
    audioOut: 1,
    requests: 0,
    images: 0,
    seconds: 0,
    webSearches: 0,
  };
  assert.equal(costMicros(pricing, parts), 3 * 2 + 2 * 8);
  assert.equal(costMicros({ ...pricing, cacheRead: 0 }, parts), 2 * 2 + 2 * 8, 'a price set to 0 is free, on purpose');
  assert.equal(
    costMicros({ ...pricing, cacheWrite: 2_500_000, reasoning: 10_000_000 }, parts),
    2 + 2.5 + 2 + 10 + 8 + 0.5,
  );
});

it('a cost sums its parts before it rounds up once, and adds per-call, per-image, per-second and per-search prices', () => {
  const pricing: ModelPricing = {
    prompt: 400_000,
    completion: 300_000,
    cacheRead: 100_000,
    request: 7,
    second: 1_000,
    image: 50,
    webSearch: 10_000,
  };
  // 1 × 0.4 + 1 × 0.3 + 3 × 0.1 = 1.0 micro-credit exactly: rounding each part up would say 3.
  assert.equal(costMicros(pricing, { prompt: 1, completion: 1, cachedRead: 3 }), 1);
  assert.equal(costMicros(pricing, { requests: 1, images: 2, seconds: 0.0015, webSearches: 3 }), 7 + 100 + 2 + 30_000);
  // The older names still work (the other endpoints pass them).
  assert.equal(costMicros(pricing, { promptTokens: 5, completionTokens: 10 }), 5);
});

it('property: a cost is the same in plain numbers as in BigInts, up to and past the largest safe integer, errors included', () => {
  // Mostly ordinary magnitudes, some from 2^32 to 2^53 and beyond, so that products and sums cross
  // Number.MAX_SAFE_INTEGER; now and then an invalid input, whose error must be the same too.
  const magnitude = fc.oneof(
    { arbitrary: fc.integer({ min: 0, max: 2_000_000 }), weight: 12 },
    { arbitrary: fc.integer({ min: 0, max: 2 ** 32 }), weight: 2 },
    {
      arbitrary: fc.constantFrom(0, 1, 999_999_999, 1_000_000_000, 2 ** 26, 2 ** 43, Number.MAX_SAFE_INTEGER, 2 ** 53),
      weight: 1,
    },
    { arbitrary: fc.maxSafeNat(), weight: 1 },
  );
  const invalid = fc.constantFrom(-1, 0.5, null);
  const price = fc.oneof({ arbitrary: magnitude, weight: 30 }, { arbitrary: invalid, weight: 1 });
  const pricing = fc.record({
    prompt: magnitude,
    completion: magnitude,
    cacheRead: fc.option(price, { nil: undefined }),
    cacheWrite: fc.option(price, { nil: undefined }),
    reasoning: fc.option(price, { nil: undefined }),
    audioInput: fc.option(price, { nil: undefined }),
    audioOutput: fc.option(price, { nil: undefined }),
    request: magnitude,
    second: magnitude,
    image: magnitude,
    webSearch: fc.option(magnitude, { nil: undefined }),
  }) as fc.Arbitrary<ModelPricing>;
  const count = fc.option(fc.oneof({ arbitrary: magnitude, weight: 40 }, { arbitrary: invalid, weight: 1 }), {
    nil: undefined,
    freq: 2,
  }) as fc.Arbitrary<number | undefined>;
  const usage = fc.record(
    {
      prompt: count,
      cachedRead: count,
      cacheWrite: count,
      audioIn: count,
      completion: count,
      reasoning: count,
      audioOut: count,
      promptTokens: count,
      completionTokens: count,
      requests: count,
      images: count,
      webSearches: count,
      seconds: fc.option(
        fc.oneof(
          { arbitrary: fc.double({ min: 0, max: 1e6, noNaN: true }), weight: 20 },
          { arbitrary: fc.constantFrom(-1, Infinity), weight: 1 },
        ),
        { nil: undefined },
      ),
    },
    { requiredKeys: [] },
  );
  const outcome = (run: () => number) => {
    try {
      return { cost: run() };
    } catch (error) {
      return { error: `${(error as Error).name}: ${(error as Error).message}` };
    }
  };
  let costed = 0;
  fc.assert(
    fc.property(pricing, usage, (p, u) => {
      const fast = outcome(() => costMicros(p, u));
      assert.deepEqual(
        fast,
        outcome(() => costMicrosInBigInts(p, u)),
      );
      if ('cost' in fast) costed++;
    }),
    { numRuns: 20_000 },
  );
  assert.ok(costed > 2_000, `most runs cost something rather than failing: ${costed}`);
});
