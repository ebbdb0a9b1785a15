import fc from 'fast-check';

/**
 * An independent reference of the price model for the property tests, written from the README's "Price
 * model" table rather than from `pricing.ts`: it prices usage as the providers report it (totals that
 * include their details) with exact fractions, and shares no code with the gateway.
 */

/** Prices in micro-credits as the operator sets them; `null` detailed prices are unset. */
export interface ReferencePrices {
  prompt: number;
  completion: number;
  cacheRead: number | null;
  cacheWrite: number | null;
  reasoning: number | null;
  audioInput: number | null;
  audioOutput: number | null;
  request: number;
  webSearch: number;
}

/** Usage as a provider reports it: `input` includes the cache and audio input, `output` includes reasoning and audio output. */
export interface ReportedUsage {
  input: number;
  cachedRead: number;
  cacheWrite: number;
  audioIn: number;
  output: number;
  reasoning: number;
  audioOut: number;
  webSearches: number;
}

/** The exact cost of one call in micro-credits, rounded up to the next micro-credit. */
export function referenceCost(prices: ReferencePrices, usage: ReportedUsage): bigint {
  const orPrompt = (price: number | null) => BigInt(price ?? prices.prompt);
  const orCompletion = (price: number | null) => BigInt(price ?? prices.completion);
  const plainInput = usage.input - usage.cachedRead - usage.cacheWrite - usage.audioIn;
  const plainOutput = usage.output - usage.reasoning - usage.audioOut;
  if (plainInput < 0 || plainOutput < 0) throw new Error('the reference takes consistent reports only');
  // Token prices are per 1,000,000 tokens: the token part is a fraction over 10^6, rounded up once.
  const perMillion =
    BigInt(plainInput) * BigInt(prices.prompt) +
    BigInt(usage.cachedRead) * orPrompt(prices.cacheRead) +
    BigInt(usage.cacheWrite) * orPrompt(prices.cacheWrite) +
    BigInt(usage.audioIn) * orPrompt(prices.audioInput) +
    BigInt(plainOutput) * BigInt(prices.completion) +
    BigInt(usage.reasoning) * orCompletion(prices.reasoning) +
    BigInt(usage.audioOut) * orCompletion(prices.audioOutput);
  const tokens = perMillion / 1_000_000n + (perMillion % 1_000_000n === 0n ? 0n : 1n);
  return tokens + BigInt(prices.request) + BigInt(usage.webSearches) * BigInt(prices.webSearch);
}

/** The report as OpenAI / OpenRouter send it (`prompt_tokens` includes cached, cache-write and audio tokens). */
export function openAiReport(usage: ReportedUsage): Record<string, unknown> {
  return {
    prompt_tokens: usage.input,
    completion_tokens: usage.output,
    total_tokens: usage.input + usage.output,
    prompt_tokens_details: {
      cached_tokens: usage.cachedRead,
      cache_write_tokens: usage.cacheWrite,
      audio_tokens: usage.audioIn,
    },
    completion_tokens_details: { reasoning_tokens: usage.reasoning, audio_tokens: usage.audioOut },
    server_tool_use: { web_search_requests: usage.webSearches },
  };
}

/** The report as Anthropic sends it: `input_tokens` **excludes** cache reads and writes (no audio, no separate reasoning count). */
export function anthropicReport(usage: ReportedUsage): Record<string, unknown> {
  return {
    input_tokens: usage.input - usage.cachedRead - usage.cacheWrite,
    cache_read_input_tokens: usage.cachedRead,
    cache_creation_input_tokens: usage.cacheWrite,
    output_tokens: usage.output,
    server_tool_use: { web_search_requests: usage.webSearches },
  };
}

/** Prices per 1M tokens up to 100 credits, detailed ones unset a third of the time. */
const price = fc.integer({ min: 0, max: 100_000_000 });
const detailed = fc.option(price, { freq: 3, nil: null });
/** Random catalogue prices (micro-credits). */
export const referencePrices: fc.Arbitrary<ReferencePrices> = fc.record({
  prompt: price,
  completion: price,
  cacheRead: detailed,
  cacheWrite: detailed,
  reasoning: detailed,
  audioInput: detailed,
  audioOutput: detailed,
  request: fc.integer({ min: 0, max: 10_000 }),
  webSearch: fc.integer({ min: 0, max: 100_000 }),
});

/** A random consistent provider report: details never exceed their totals. */
export const reportedUsage = (
  options: { audio?: boolean; reasoning?: boolean; maxInput?: number; maxOutput?: number } = {},
): fc.Arbitrary<ReportedUsage> =>
  fc
    .record({
      input: fc.integer({ min: 1, max: options.maxInput ?? 200_000 }),
      output: fc.integer({ min: 1, max: options.maxOutput ?? 50_000 }),
      shares: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { minLength: 5, maxLength: 5 }),
      webSearches: fc.integer({ min: 0, max: 5 }),
    })
    .map(({ input, output, shares: [a, b, c, d, e], webSearches }) => {
      const cachedRead = Math.floor(input * a);
      const cacheWrite = Math.floor((input - cachedRead) * b);
      const audioIn = options.audio === false ? 0 : Math.floor((input - cachedRead - cacheWrite) * c);
      const reasoning = options.reasoning === false ? 0 : Math.floor(output * d);
      const audioOut = options.audio === false ? 0 : Math.floor((output - reasoning) * e);
      return { input, cachedRead, cacheWrite, audioIn, output, reasoning, audioOut, webSearches };
    });
