import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, readSseFrames, settled, usageOf, type FundedUser } from './testing.ts';
import {
  anthropicReport,
  openAiReport,
  referenceCost,
  referencePrices,
  reportedUsage,
  type ReferencePrices,
  type ReportedUsage,
} from '../models/testing/reference-pricing.ts';

const mock = await startMockUpstream({ apiKey: 'sk-mock' });
after(() => mock.close());

const hi = [{ role: 'user', content: 'hi' }];

/** One chat through the gateway; the mock reports `usage` verbatim from `metadata.mock_usage` (an allow-listed field on both wire formats). */
async function chat(
  env: TestEnv,
  user: FundedUser,
  model: string,
  usage: unknown,
  options: { stream?: boolean; anthropic?: boolean; includeUsage?: boolean } = {},
) {
  const body: Record<string, unknown> = { model, messages: hi, metadata: { mock_usage: usage } };
  if (!options.stream) {
    const response = await env.request('POST', '/api/v1/chat/completions', { token: user.key, body });
    return {
      status: response.status,
      text: response.body?.choices?.[0]?.message?.content,
      usage: response.body?.usage,
      raw: response.text,
    };
  }
  const response = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      ...body,
      stream: true,
      ...(options.includeUsage ? { stream_options: { include_usage: true } } : {}),
    }),
  });
  const frames = await readSseFrames(response);
  const chunks = frames.filter((f) => f.data && f.data !== '[DONE]').map((f) => f.data);
  return {
    status: response.status,
    text: chunks.map((c: any) => c.choices?.[0]?.delta?.content ?? '').join(''),
    usage: chunks.find((c: any) => c.usage)?.usage,
    raw: JSON.stringify(frames),
    done: frames.at(-1)?.data === '[DONE]',
  };
}

/** What the call was charged (micro-credits), read from its usage record and its hold once the hold closed. */
async function charged(env: TestEnv, user: FundedUser) {
  const after = await settled(env, user);
  const [record] = await usageOf(env, user);
  const hold = await env.db.selectFrom('holds').selectAll().where('id', '=', record.hold_id!).executeTakeFirstOrThrow();
  return {
    balance: after.balance,
    cost: Number(record.cost),
    held: Number(hold.amount),
    captured: Number(hold.captured),
    record,
  };
}

describeEachDatabase(
  'usage details are priced exactly (prompt caching, reasoning, audio, web search)',
  (env) => {
    before(async () => {
      // Per 1M tokens: prompt 10 credits (10 micro-credits a token), cached reads 1, cache writes 12.5, completion 20, reasoning 40.
      await putModel(env, 'acme/cached', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { prompt: 10, completion: 20, cacheRead: 1, cacheWrite: 12.5, reasoning: 40, request: 0.0001 },
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/silent', {
        provider: 'mock',
        upstreamModel: 'no-usage',
        pricing: { prompt: 10, completion: 20 },
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/embed', {
        provider: 'mock',
        upstreamModel: 'embed-1',
        pricing: { prompt: 1000 },
        outputModalities: ['embedding'],
      });
      await putModel(env, 'acme/plain', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { prompt: 10, completion: 20 },
        maxOutputTokens: 1000,
      });
      // Anthropic's list prices for a Sonnet-class model, per 1M tokens, at 100 credits per USD: $3, $3.75 write, $0.30 read, $15.
      await putModel(env, 'anthropic/cached', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing: { prompt: 300, completion: 1500, cacheRead: 30, cacheWrite: 375, webSearch: 0.001 },
        maxOutputTokens: 1000,
      });
    });

    it('hole 7: OpenAI cached input (prompt_tokens_details.cached_tokens) is charged at the cache-read price, not the full prompt price', async () => {
      const user = await fundedUser(env, 5);
      const usage = {
        prompt_tokens: 1000,
        completion_tokens: 10,
        total_tokens: 1010,
        prompt_tokens_details: { cached_tokens: 800 },
      };
      const answer = await chat(env, user, 'acme/cached', usage);
      assert.equal(answer.status, 200, answer.raw);
      // 200 plain prompt tokens × 10 + 800 cached × 1 + 10 completion × 20 + 100 per request = 3,100 (today: 10,300).
      const { cost, balance, record } = await charged(env, user);
      assert.equal(cost, 3_100);
      assert.equal(balance, 5_000_000 - 3_100);
      // The usage record keeps what its prompt and completion counts do not show.
      assert.deepEqual(JSON.parse(String(record.details)), {
        cachedRead: 800,
        cacheWrite: 0,
        audioIn: 0,
        reasoning: 0,
        audioOut: 0,
        webSearches: 0,
      });
      assert.deepEqual(answer.usage, {
        prompt_tokens: 1000,
        completion_tokens: 10,
        total_tokens: 1010,
        prompt_tokens_details: { cached_tokens: 800, cache_write_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
        cost: 0.0031,
      });
    });

    it('hole 7: Anthropic cache writes are charged at their (higher) cache-write price and cache reads at theirs, each token once', async () => {
      const user = await fundedUser(env, 5);
      // input_tokens excludes the cache: 100 plain + 2,000 written + 10,000 read = 12,100 input tokens in all.
      const answer = await chat(
        env,
        user,
        'anthropic/cached',
        { input_tokens: 100, cache_creation_input_tokens: 2000, cache_read_input_tokens: 10_000, output_tokens: 50 },
        { anthropic: true },
      );
      assert.equal(answer.status, 200, answer.raw);
      // 300 credits per 1M tokens is 300 micro-credits a token: 30,000 + 750,000 + 300,000 + 75,000 (today: 12,100 × 300 + 75,000).
      const expected = 100 * 300 + 2000 * 375 + 10_000 * 30 + 50 * 1500;
      const { cost } = await charged(env, user);
      assert.equal(cost, expected);
      assert.equal(answer.usage.prompt_tokens, 12_100);
      assert.deepEqual(answer.usage.prompt_tokens_details, {
        cached_tokens: 10_000,
        cache_write_tokens: 2000,
        audio_tokens: 0,
      });
      assert.equal(answer.usage.cost, expected / 1_000_000);
    });

    it('hole 7: a streamed Anthropic call is charged its cache writes and web searches, and its usage chunk says so', async () => {
      const user = await fundedUser(env, 5);
      const answer = await chat(
        env,
        user,
        'anthropic/cached',
        {
          input_tokens: 10,
          cache_creation_input_tokens: 1000,
          output_tokens: 4,
          server_tool_use: { web_search_requests: 2 },
        },
        { anthropic: true, stream: true, includeUsage: true },
      );
      assert.ok(answer.done, answer.raw);
      // 10 × 300 + 1,000 written × 375 + 4 × 1,500, and 2 searches × 1,000.
      assert.equal((await charged(env, user)).cost, 3_000 + 375_000 + 6_000 + 2_000);
      assert.deepEqual(answer.usage.prompt_tokens_details, {
        cached_tokens: 0,
        cache_write_tokens: 1000,
        audio_tokens: 0,
      });
      assert.equal(answer.usage.server_tool_use.web_search_requests, 2);
    });

    it('hole 7: reasoning tokens priced apart are charged at the reasoning price, in a streamed call too; the usage chunk shows them and the cost', async () => {
      const user = await fundedUser(env, 5);
      const usage = { prompt_tokens: 20, completion_tokens: 300, completion_tokens_details: { reasoning_tokens: 250 } };
      const answer = await chat(env, user, 'acme/cached', usage, { stream: true, includeUsage: true });
      assert.ok(answer.done, answer.raw);
      // 20 × 10 + 50 × 20 + 250 × 40 + 100 = 11,300.
      assert.equal((await charged(env, user)).cost, 11_300);
      assert.equal(answer.usage.completion_tokens_details.reasoning_tokens, 250);
      assert.equal(answer.usage.cost, 0.0113);
    });

    it('a detailed price the model does not set falls back to the plain price, never to 0: cached tokens of an unpriced cache cost the prompt price', async () => {
      const user = await fundedUser(env, 5);
      await chat(env, user, 'acme/plain', {
        prompt_tokens: 1000,
        completion_tokens: 10,
        prompt_tokens_details: { cached_tokens: 1000, cache_write_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 10 },
      });
      assert.equal((await charged(env, user)).cost, 1000 * 10 + 10 * 20);
    });

    it("a client that asked for the usage chunk gets one, on the gateway's own counts, when the upstream sent none", async () => {
      const user = await fundedUser(env, 5);
      const answer = await chat(env, user, 'acme/silent', undefined, { stream: true, includeUsage: true });
      assert.ok(answer.done, answer.raw);
      const { cost, record } = await charged(env, user);
      assert.equal(answer.usage.completion_tokens, 4);
      assert.equal(answer.usage.prompt_tokens, Number(record.prompt_tokens));
      assert.equal(answer.usage.cost, cost / 1_000_000);
      assert.equal(cost, Number(record.prompt_tokens) * 10 + 4 * 20);
    });

    it('hole 6: usage an upstream sends negative, fractional, non-numeric or absurd is sanitized and charged: the hold never stays open or expires uncharged', async () => {
      const reports: unknown[] = [
        { prompt_tokens: -50, completion_tokens: -3 },
        { prompt_tokens: 12.5, completion_tokens: 4.2 },
        { prompt_tokens: 'many', completion_tokens: null },
        { prompt_tokens: 1e300, completion_tokens: 4 },
        {
          prompt_tokens: 20,
          completion_tokens: 4,
          prompt_tokens_details: { cached_tokens: 900 },
          completion_tokens_details: { reasoning_tokens: -7 },
        },
        'not an object',
      ];
      for (const stream of [false, true]) {
        for (const usage of reports) {
          const user = await fundedUser(env, 5);
          const answer = await chat(env, user, 'acme/cached', usage, { stream, includeUsage: true });
          assert.equal(answer.status, 200, `${JSON.stringify(usage)}: ${answer.raw}`);
          const { cost, held, captured, balance, record } = await charged(env, user);
          assert.equal(record.status, 'ok');
          assert.ok(cost > 100 && cost <= held, `${JSON.stringify(usage)} charged ${cost} of ${held}`);
          assert.equal(captured, cost);
          assert.equal(balance, 5_000_000 - cost);
          assert.ok(Number.isSafeInteger(Number(record.prompt_tokens)) && Number(record.prompt_tokens) > 0);
          assert.ok(Number.isSafeInteger(Number(record.completion_tokens)) && Number(record.completion_tokens) > 0);
          assert.equal(answer.usage.cost, cost / 1_000_000);
        }
      }
      // An absurd count is charged the whole hold, not more.
      const user = await fundedUser(env, 5);
      await chat(env, user, 'acme/cached', { prompt_tokens: 1e300, completion_tokens: 4 });
      const absurd = await charged(env, user);
      assert.equal(absurd.cost, absurd.held);
    });

    it('hole 6: embeddings whose upstream reports a negative, fractional or absurd token count are charged on a sanitized count', async () => {
      for (const prompt_tokens of [-40, 3.5, 1e300, 'x']) {
        const user = await fundedUser(env, 5);
        const response = await env.request('POST', '/api/v1/embeddings', {
          token: user.key,
          body: {
            model: 'acme/embed',
            input: 'hello there',
            mock_usage: { prompt_tokens, total_tokens: prompt_tokens },
          },
        });
        assert.equal(response.status, 200, response.text);
        const { cost, held, record } = await charged(env, user);
        assert.equal(record.status, 'ok');
        assert.ok(cost > 0 && cost <= held, `${prompt_tokens}: ${cost} of ${held}`);
      }
    });

    it('property: random usage details through the gateway are charged the reference cost rounded up when the hold covers it, the hold otherwise, never 0', async () => {
      await fc.assert(
        fc.asyncProperty(
          referencePrices,
          reportedUsage({ maxInput: 4000, maxOutput: 1500 }),
          fc.boolean(),
          fc.boolean(),
          fc.integer({ min: 1, max: 1500 }),
          async (prices, usage, anthropic, stream, maxOutputTokens) => {
            const reported: ReportedUsage = anthropic
              ? { ...usage, audioIn: 0, audioOut: 0, reasoning: 0 }
              : { ...usage, webSearches: 0 };
            const id = anthropic ? 'anthropic/property' : 'acme/property';
            await putModel(env, id, {
              provider: anthropic ? 'anthropic' : 'mock',
              upstreamModel: 'default-model',
              pricing: credits(prices),
              maxOutputTokens,
            });
            const user = await fundedUser(env, 100);
            const answer = await chat(env, user, id, anthropic ? anthropicReport(reported) : openAiReport(reported), {
              stream,
              anthropic,
              includeUsage: true,
            });
            assert.equal(answer.text, 'alpha beta gamma delta');
            const { cost, held, balance, record } = await charged(env, user);
            const reference = referenceCost(prices, reported);
            assert.equal(
              BigInt(cost),
              reference < BigInt(held) ? reference : BigInt(held),
              `reference ${reference}, held ${held}`,
            );
            // What the hold could not cover is on the usage record, for the operator's accounts.
            assert.equal(
              BigInt(record.uncollected),
              reference > BigInt(held) ? reference - BigInt(held) : 0n,
              `reference ${reference}, held ${held}`,
            );
            if (reference > 0n) assert.ok(cost > 0, 'a priced call that produced output is never free');
            assert.equal(balance, 100_000_000 - cost);
            assert.equal(answer.usage.cost, cost / 1_000_000);
          },
        ),
        { numRuns: Number(process.env.PROPERTY_RUNS ?? 25) },
      );
      const verify = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(verify.status, 200, verify.text);
      assert.equal(verify.body.ok, true, verify.text);
    });
  },
  {
    config: {
      providers: [{ name: 'mock', baseUrl: `${mock.url}/v1`, apiKey: 'sk-mock' }],
      ANTHROPIC_BASE_URL: mock.url,
      ANTHROPIC_API_KEY: 'sk-mock',
    },
  },
);

/** Reference prices (micro-credits) as the operator API takes them (credits). */
function credits(prices: ReferencePrices): Record<string, number | null> {
  return Object.fromEntries(
    Object.entries(prices).map(([key, value]) => [key, value === null ? null : value / 1_000_000]),
  );
}
