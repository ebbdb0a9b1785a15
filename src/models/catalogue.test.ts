import { after, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, putModel } from '../gateway/testing.ts';
import { costMicros, parseDecimal, usdToMicros } from './pricing.ts';

const mock = await startMockUpstream({
  models: [
    {
      id: 'acme/small',
      name: 'Acme: Small',
      context_length: 32768,
      top_provider: { max_completion_tokens: 4096 },
      architecture: { input_modalities: ['text'], output_modalities: ['text'] },
      pricing: { prompt: '0.0000003', completion: '0.0000012', request: '0', image: '0' },
    },
    {
      id: 'acme/vision',
      name: 'Acme: Vision',
      context_length: 128000,
      architecture: { input_modalities: ['text', 'image'], output_modalities: ['text'] },
      pricing: { prompt: '0.000003', completion: '0.000015', request: '0.001', image: '0.0048' },
    },
    { id: 'acme/varies', name: 'Acme: Router', pricing: { prompt: '-1', completion: '-1' } },
    // OpenRouter's detailed prices, as its /models lists them (USD per token, per search); `-1` is "varies".
    {
      id: 'acme/cached',
      name: 'Acme: Cached',
      pricing: {
        prompt: '0.000003',
        completion: '0.000015',
        input_cache_read: '0.0000003',
        input_cache_write: '0.00000375',
        input_cache_write_1h: '0.000006',
        internal_reasoning: '0.00002',
        audio: '0.00004',
        audio_output: '-1',
        web_search: '0.01',
      },
    },
    { id: 'acme/unpriced' },
  ],
});
after(() => mock.close());

describeEachDatabase(
  'the model catalogue',
  (env) => {
    it('PUT /api/admin/models/:vendor/:model sets a model that GET /api/v1/models lists in the OpenAI format, prices in credits', async () => {
      const saved = await putModel(env, 'acme/writer', {
        provider: 'openai',
        upstreamModel: 'gpt-x',
        name: 'Acme Writer',
        pricing: { prompt: 2.5, completion: 10, request: 0.000001 },
        contextLength: 128000,
        maxOutputTokens: 16384,
        inputModalities: ['text', 'image'],
      });
      assert.equal(saved.id, 'acme/writer');
      assert.deepEqual(saved.pricing, {
        prompt: 2.5,
        completion: 10,
        cacheRead: null,
        cacheWrite: null,
        cacheWrite1h: null,
        reasoning: null,
        audioInput: null,
        audioOutput: null,
        request: 0.000001,
        image: 0,
        second: 0,
        webSearch: 0,
      });
      const user = await fundedUser(env, 0, ['ai:models']);
      const list = await env.request('GET', '/api/v1/models', { token: user.key });
      assert.equal(list.body.object, 'list');
      const writer = list.body.data.find((m: any) => m.id === 'acme/writer');
      assert.deepEqual(writer, {
        id: 'acme/writer',
        object: 'model',
        created: writer.created,
        owned_by: 'acme',
        name: 'Acme Writer',
        pricing: {
          prompt: 2.5,
          completion: 10,
          cacheRead: 2.5,
          cacheWrite: 2.5,
          cacheWrite1h: null,
          reasoning: 10,
          audioInput: 2.5,
          audioOutput: 10,
          request: 0.000001,
          image: 0,
          second: 0,
          webSearch: 0,
        },
        context_length: 128000,
        modalities: { input: ['text', 'image'], output: ['text'] },
        type: 'model',
        display_name: 'Acme Writer',
        created_at: new Date(writer.created * 1000).toISOString(),
      });
      assert.ok(Number.isInteger(writer.created));
    });

    it('detailed prices round-trip through the operator API: set ones as set, unset ones null (the public list shows their fallback)', async () => {
      const saved = await putModel(env, 'acme/detailed', {
        provider: 'openai',
        upstreamModel: 'gpt-x',
        pricing: { prompt: 2, completion: 8, cacheRead: 0.5, cacheWrite: null, reasoning: 0, webSearch: 0.025 },
      });
      assert.deepEqual(saved.pricing, {
        prompt: 2,
        completion: 8,
        cacheRead: 0.5,
        cacheWrite: null,
        cacheWrite1h: null,
        reasoning: 0,
        audioInput: null,
        audioOutput: null,
        request: 0,
        image: 0,
        second: 0,
        webSearch: 0.025,
      });
      const listed = (await env.admin('GET', '/api/admin/models')).body.data.find((m: any) => m.id === 'acme/detailed');
      assert.deepEqual(listed.pricing, saved.pricing);
      const user = await fundedUser(env, 0, ['ai:models']);
      const publicEntry = (await env.request('GET', '/api/v1/models', { token: user.key })).body.data.find(
        (m: any) => m.id === 'acme/detailed',
      );
      assert.deepEqual(publicEntry.pricing, {
        prompt: 2,
        completion: 8,
        cacheRead: 0.5,
        cacheWrite: 2,
        cacheWrite1h: null,
        reasoning: 0,
        audioInput: 2,
        audioOutput: 8,
        request: 0,
        image: 0,
        second: 0,
        webSearch: 0.025,
      });
    });

    it('a change is seen at once (the cache is dropped): a disabled model is a 404 on the next call', async () => {
      const user = await fundedUser(env, 10, ['ai:chat', 'ai:models']);
      await putModel(env, 'acme/soon-gone', { provider: 'echo', upstreamModel: 'echo', pricing: { prompt: 1 } });
      const ok = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/soon-gone', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(ok.status, 200);
      await putModel(env, 'acme/soon-gone', {
        provider: 'echo',
        upstreamModel: 'echo',
        pricing: { prompt: 1 },
        enabled: false,
      });
      const gone = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/soon-gone', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(gone.status, 404);
      assert.equal(gone.body.error.code, 'MODEL_NOT_FOUND');
    });

    it('PUT refuses an unknown provider, a price with 7 decimals, a negative price (detailed ones too), an unknown price and a self-fallback with 400', async () => {
      for (const body of [
        { provider: 'nowhere', upstreamModel: 'x', pricing: {} },
        { provider: 'openai', upstreamModel: 'x', pricing: { prompt: 0.0000001 } },
        { provider: 'openai', upstreamModel: 'x', pricing: { prompt: -1 } },
        { provider: 'openai', upstreamModel: 'x', pricing: { cacheRead: -1 } },
        { provider: 'openai', upstreamModel: 'x', pricing: { cacheWrite: 0.0000001 } },
        { provider: 'openai', upstreamModel: 'x', pricing: { webSearch: null } },
        { provider: 'openai', upstreamModel: 'x', pricing: { cached: 1 } },
        { provider: 'openai', upstreamModel: 'x', pricing: {}, fallbacks: ['acme/bad'] },
      ]) {
        const response = await env.admin('PUT', '/api/admin/models/acme/bad', body);
        assert.equal(response.status, 400, JSON.stringify(body));
        assert.equal(response.body.error.code, 'INVALID_REQUEST');
      }
      assert.equal(
        (
          await env.request('PUT', '/api/admin/models/acme/bad', {
            body: { provider: 'openai', upstreamModel: 'x', pricing: {} },
          })
        ).status,
        401,
      );
    });

    it('PUT refuses a contextLength or maxOutputTokens past 2^31 - 1 (what the catalogue stores) with 400, and the model already set stays readable', async () => {
      await putModel(env, 'acme/bounded', {
        provider: 'echo',
        upstreamModel: 'echo',
        pricing: { prompt: 1 },
        maxOutputTokens: 64,
      });
      for (const field of ['contextLength', 'maxOutputTokens'])
        for (const value of ['2147483648', '9007199254740993', '9223372036854775808', '1e308']) {
          const response = await env.request('PUT', '/api/admin/models/acme/bounded', {
            token: env.adminToken,
            headers: { 'content-type': 'application/json' },
            raw: `{"provider":"echo","upstreamModel":"echo","pricing":{"prompt":1},"${field}":${value}}`,
          });
          assert.equal(response.status, 400, `${field}=${value}: ${response.text}`);
          assert.equal(response.body.error.code, 'INVALID_REQUEST');
          assert.match(response.body.error.message, new RegExp(`${field} must be <= 2147483647`));
        }
      const largest = await putModel(env, 'acme/bounded', {
        provider: 'echo',
        upstreamModel: 'echo',
        pricing: { prompt: 1 },
        contextLength: 2147483647,
        maxOutputTokens: 64,
      });
      assert.equal(largest.contextLength, 2147483647);
      const read = await env.admin('GET', '/api/admin/models');
      assert.equal(read.status, 200, read.text);
      const model = await env.admin('GET', '/api/v1/models/acme/bounded');
      assert.notEqual(model.status, 500, model.text);
    });

    it('sync imports OpenRouter prices (cache read/write, 1-hour cache write, reasoning, audio, web search included) converted exactly with CREDITS_PER_USD; an unpriced model is imported disabled', async () => {
      const response = await env.admin('POST', '/api/admin/models/sync');
      assert.equal(response.status, 200, response.text);
      const openrouter = response.body.providers.find((p: any) => p.provider === 'openrouter');
      assert.equal(openrouter.imported, 5);
      assert.deepEqual(openrouter.needsPricing.sort(), ['acme/unpriced', 'acme/varies']);
      const all = (await env.admin('GET', '/api/admin/models')).body.data;
      const small = all.find((m: any) => m.id === 'acme/small');
      // $0.30 and $1.20 per 1M tokens × 250 credits per USD.
      assert.deepEqual(small.pricing, {
        prompt: 75,
        completion: 300,
        cacheRead: null,
        cacheWrite: null,
        cacheWrite1h: null,
        reasoning: null,
        audioInput: null,
        audioOutput: null,
        request: 0,
        image: 0,
        second: 0,
        webSearch: 0,
      });
      assert.equal(small.provider, 'openrouter');
      assert.equal(small.upstreamModel, 'acme/small');
      assert.equal(small.maxOutputTokens, 4096);
      assert.equal(small.contextLength, 32768);
      const vision = all.find((m: any) => m.id === 'acme/vision');
      assert.deepEqual(vision.pricing, {
        prompt: 750,
        completion: 3750,
        cacheRead: null,
        cacheWrite: null,
        cacheWrite1h: null,
        reasoning: null,
        audioInput: null,
        audioOutput: null,
        request: 0.25,
        image: 1.2,
        second: 0,
        webSearch: 0,
      });
      assert.deepEqual(vision.inputModalities, ['text', 'image']);
      assert.equal(all.find((m: any) => m.id === 'acme/unpriced').enabled, false);
      // Cache, reasoning, audio and web-search prices are imported; one listed as "varies" stays unset (it falls back to the completion price).
      const cached = all.find((m: any) => m.id === 'acme/cached');
      assert.deepEqual(cached.pricing, {
        prompt: 750,
        completion: 3750,
        cacheRead: 75,
        cacheWrite: 937.5,
        cacheWrite1h: 1500,
        reasoning: 5000,
        audioInput: 10_000,
        audioOutput: null,
        request: 0,
        image: 0,
        second: 0,
        webSearch: 2.5,
      });
      const user = await fundedUser(env, 0, ['ai:models']);
      const listed = (await env.request('GET', '/api/v1/models', { token: user.key })).body.data.find(
        (m: any) => m.id === 'acme/cached',
      );
      assert.equal(listed.pricing.cacheRead, 75);
      assert.equal(listed.pricing.audioOutput, 3750);
      // The OpenRouter key went upstream.
      assert.equal(mock.requests.find((r) => r.path === '/v1/models')?.headers.authorization, 'Bearer sk-or-test');
    });

    it('pricing.cacheWrite1h is set through PUT, shown by the operator and public lists (null when unset), and kept by a sync whose source lists none, following its prompt price and never below it', async () => {
      const saved = await putModel(env, 'acme/small', {
        provider: 'openrouter',
        upstreamModel: 'acme/small',
        pricing: { prompt: 75, completion: 300, cacheWrite: 93.75, cacheWrite1h: 150 },
      });
      assert.equal(saved.pricing.cacheWrite1h, 150);
      await putModel(env, 'acme/no-hour', { provider: 'echo', upstreamModel: 'echo', pricing: { prompt: 1 } });
      const user = await fundedUser(env, 0, ['ai:models']);
      const listed = async () => (await env.request('GET', '/api/v1/models', { token: user.key })).body.data;
      const before = await listed();
      assert.equal(before.find((m: any) => m.id === 'acme/small').pricing.cacheWrite1h, 150);
      assert.equal(before.find((m: any) => m.id === 'acme/no-hour').pricing.cacheWrite1h, null);
      assert.equal((await env.admin('POST', '/api/admin/models/sync')).status, 200);
      const synced = (await env.admin('GET', '/api/admin/models')).body.data.find((m: any) => m.id === 'acme/small');
      assert.equal(synced.pricing.cacheWrite1h, 150);
      assert.equal(synced.pricing.cacheWrite, null); // the listed prices follow the provider
      // The provider's prompt price rose from 50 to the 75 it lists: the kept 1-hour price rises with it.
      await putModel(env, 'acme/small', {
        provider: 'openrouter',
        upstreamModel: 'acme/small',
        pricing: { prompt: 50, completion: 300, cacheWrite1h: 100 },
      });
      assert.equal((await env.admin('POST', '/api/admin/models/sync')).status, 200);
      const risen = (await env.admin('GET', '/api/admin/models')).body.data.find((m: any) => m.id === 'acme/small');
      assert.equal(risen.pricing.prompt, 75);
      assert.equal(risen.pricing.cacheWrite1h, 150);
      // Never below plain input, whatever the operator set against it.
      await putModel(env, 'acme/small', {
        provider: 'openrouter',
        upstreamModel: 'acme/small',
        pricing: { prompt: 75, completion: 300, cacheWrite1h: 10 },
      });
      assert.equal((await env.admin('POST', '/api/admin/models/sync')).status, 200);
      const floored = (await env.admin('GET', '/api/admin/models')).body.data.find((m: any) => m.id === 'acme/small');
      assert.equal(floored.pricing.cacheWrite1h, 75);
      const invalid = await env.admin('PUT', '/api/admin/models/acme/no-hour', {
        provider: 'echo',
        upstreamModel: 'echo',
        pricing: { prompt: 1, cacheWrite1h: -1 },
      });
      assert.equal(invalid.status, 400);
    });

    it('answerTimeoutMs is set through PUT (null: UPSTREAM_TIMEOUT_MS), shown by GET /api/admin/models, kept by a sync, and refused with a 400 naming it when not an integer from 100 to 2^31 - 1', async () => {
      const saved = await putModel(env, 'acme/vision', {
        provider: 'openrouter',
        upstreamModel: 'acme/vision',
        pricing: { prompt: 1 },
        fallbacks: ['acme/small'],
        answerTimeoutMs: 15_000,
      });
      assert.equal(saved.answerTimeoutMs, 15_000);
      const adminList = async () =>
        (await env.admin('GET', '/api/admin/models')).body.data.find((m: any) => m.id === 'acme/vision');
      assert.equal((await adminList()).answerTimeoutMs, 15_000);
      // The provider lists acme/vision: the sync refreshes its prices and keeps what the operator set by hand.
      assert.equal((await env.admin('POST', '/api/admin/models/sync')).status, 200);
      const synced = await adminList();
      assert.equal(synced.answerTimeoutMs, 15_000);
      assert.deepEqual(synced.fallbacks, ['acme/small']);
      assert.equal(synced.pricing.prompt, 750); // $3 per 1M tokens × 250: the listed price, not the one set
      for (const value of ['0', '-5', '99', '1.5', '"300"', 'true', '2147483648', '1e308']) {
        const response = await env.request('PUT', '/api/admin/models/acme/vision', {
          token: env.adminToken,
          headers: { 'content-type': 'application/json' },
          raw: `{"provider":"openrouter","upstreamModel":"acme/vision","pricing":{"prompt":1},"answerTimeoutMs":${value}}`,
        });
        assert.equal(response.status, 400, `answerTimeoutMs=${value}: ${response.text}`);
        assert.equal(response.body.error.code, 'INVALID_REQUEST');
        assert.match(response.body.error.message, /answerTimeoutMs/);
      }
      assert.equal((await adminList()).answerTimeoutMs, 15_000, 'a refused PUT changed nothing');
      for (const answerTimeoutMs of [100, 2147483647, null])
        assert.equal(
          (
            await putModel(env, 'acme/vision', {
              provider: 'openrouter',
              upstreamModel: 'acme/vision',
              pricing: { prompt: 1 },
              answerTimeoutMs,
            })
          ).answerTimeoutMs,
          answerTimeoutMs,
        );
      const omitted = await putModel(env, 'acme/vision', {
        provider: 'openrouter',
        upstreamModel: 'acme/vision',
        pricing: { prompt: 1 },
      });
      assert.equal(omitted.answerTimeoutMs, null, 'a PUT replaces the whole entry');
    });
  },
  { config: { OPENROUTER_BASE_URL: `${mock.url}/v1`, OPENROUTER_API_KEY: 'sk-or-test', CREDITS_PER_USD: 250 } },
);

// A provider's list is not ours to trust: a token count past what the catalogue keeps must not fail the sync.
const oversized = await startMockUpstream({
  models: [
    {
      id: 'acme/boundless',
      context_length: 2 ** 31,
      top_provider: { max_completion_tokens: 2 ** 53 },
      pricing: { prompt: '0.000001', completion: '0.000002' },
    },
    { id: 'acme/bounded', context_length: 2 ** 31 - 1, pricing: { prompt: '0.000001', completion: '0.000002' } },
  ],
});
after(() => oversized.close());

describeEachDatabase(
  'a provider list with token counts past what the catalogue keeps',
  (env) => {
    it('is imported with those counts unknown (null), not a failed sync; a count within bounds is kept', async () => {
      const response = await env.admin('POST', '/api/admin/models/sync');
      assert.equal(response.status, 200, response.text);
      const all = (await env.admin('GET', '/api/admin/models')).body.data;
      const boundless = all.find((m: any) => m.id === 'acme/boundless');
      assert.equal(boundless.contextLength, null);
      assert.equal(boundless.maxOutputTokens, null);
      assert.equal(all.find((m: any) => m.id === 'acme/bounded').contextLength, 2 ** 31 - 1);
    });
  },
  { config: { OPENROUTER_BASE_URL: `${oversized.url}/v1`, OPENROUTER_API_KEY: 'sk-or-test' } },
);

it('USD prices convert to micro-credits exactly, with no float drift, rounding up', () => {
  // 0.0000003 USD/token × 100 credits/USD × 1e6 micro × 1e6 tokens = 30 credits per 1M tokens.
  assert.equal(usdToMicros('0.0000003', 100, 1_000_000n), 30_000_000);
  // Floats would give 0.1 + 0.2 drift; decimals do not.
  assert.equal(usdToMicros('0.00000007', 100, 1_000_000n), 7_000_000);
  assert.equal(usdToMicros('1.5e-7', 100, 1_000_000n), 15_000_000);
  assert.equal(usdToMicros('0.0048', 100, 1n), 480_000);
  assert.equal(usdToMicros('0.000000001', 0.3, 1n), 1); // 3e-10 credits → rounds up to one micro-credit
  assert.equal(usdToMicros('0.1', 0.1, 1n), 10_000);
  assert.equal(usdToMicros('-1', 100, 1n), null);
  assert.equal(usdToMicros('abc', 100, 1n), null);
  assert.deepEqual(parseDecimal('12.3400'), { digits: 123400n, scale: 4 });
});

it('a cost rounds up to the next micro-credit and adds per-call, per-second and per-image prices', () => {
  const pricing = { prompt: 1_500_000, completion: 2_000_000, request: 10, second: 100, image: 1000 };
  assert.equal(costMicros(pricing, { promptTokens: 1, completionTokens: 0 }), 2); // 1.5 → 2
  assert.equal(
    costMicros(pricing, { promptTokens: 2, completionTokens: 3, requests: 1, seconds: 1.5, images: 2 }),
    3 + 6 + 10 + 150 + 2000,
  );
});
