import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { describeEachDatabase } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser } from '../gateway/testing.ts';

/** An OpenAI-compatible upstream (Groq, Together, vLLM) whose ids hold a slash, none of them priced in its list. */
const mock = await startMockUpstream({
  models: [
    { id: 'meta-llama/llama-3', object: 'model' },
    { id: 'qwen/qwen-2/instruct', object: 'model' },
    { id: 'gpt-mock', object: 'model' },
  ],
});
after(() => mock.close());

const LLAMA = 'openai/meta-llama/llama-3';
const priced = (upstreamModel: string) => ({
  provider: 'openai',
  upstreamModel,
  pricing: { prompt: 1, completion: 2 },
  enabled: true,
});
const adminModel = async (env: any, id: string) =>
  (await env.admin('GET', '/api/admin/models')).body.data.find((m: { id: string }) => m.id === id);

describeEachDatabase(
  'model ids with more than two segments',
  (env) => {
    before(async () => {
      const sync = await env.admin('POST', '/api/admin/models/sync');
      assert.equal(sync.status, 200, sync.text);
      assert.deepEqual(sync.body.providers[0].needsPricing.sort(), [
        'openai/gpt-mock',
        LLAMA,
        'openai/qwen/qwen-2/instruct',
      ]);
      assert.equal((await adminModel(env, LLAMA)).enabled, false);
    });

    it('an imported model is priced and enabled through PUT with its id as it is, its rest %2F-encoded, or all encoded', async () => {
      for (const [path, name] of [
        [`/api/admin/models/${LLAMA}`, 'as it is'],
        ['/api/admin/models/openai/meta-llama%2Fllama-3', 'rest encoded'],
        ['/api/admin/models/openai%2Fmeta-llama%2Fllama-3', 'all encoded'],
      ]) {
        const response = await env.admin('PUT', path, { ...priced('meta-llama/llama-3'), name });
        assert.equal(response.status, 200, `${path}: ${response.text}`);
        assert.equal(response.body.id, LLAMA, path);
        assert.equal((await adminModel(env, LLAMA)).name, name, path);
      }
      const deeper = await env.admin(
        'PUT',
        '/api/admin/models/openai/qwen/qwen-2/instruct',
        priced('qwen/qwen-2/instruct'),
      );
      assert.equal(deeper.status, 200, deeper.text);
      assert.equal(deeper.body.id, 'openai/qwen/qwen-2/instruct');
      // Two segments, as before.
      assert.equal((await env.admin('PUT', '/api/admin/models/openai/gpt-mock', priced('gpt-mock'))).status, 200);
    });

    it('such a model is retrieved by GET /api/v1/models with its id as it is, partly or wholly encoded, and by the OpenAI SDK, and called by its id', async () => {
      await env.admin('PUT', `/api/admin/models/${LLAMA}`, priced('meta-llama/llama-3'));
      const user = await fundedUser(env, 10);
      for (const path of [
        `/api/v1/models/${LLAMA}`,
        '/api/v1/models/openai/meta-llama%2Fllama-3',
        '/api/v1/models/openai%2Fmeta-llama%2Fllama-3',
      ]) {
        const response = await env.request('GET', path, { token: user.key });
        assert.equal(response.status, 200, `${path}: ${response.text}`);
        assert.equal(response.body.id, LLAMA, path);
        assert.equal(response.body.owned_by, 'openai', path);
      }
      const client = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      assert.equal((await client.models.retrieve(LLAMA)).id, LLAMA);
      const chat = await client.chat.completions.create({ model: LLAMA, messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(chat.model, LLAMA);
      assert.equal(mock.requests.at(-1)?.body.model, 'meta-llama/llama-3');
    });

    it('an unknown deeper id is the 404 MODEL_NOT_FOUND, not "No route"', async () => {
      const user = await fundedUser(env, 0);
      const response = await env.request('GET', '/api/v1/models/openai/meta-llama/nope', { token: user.key });
      assert.equal(response.status, 404, response.text);
      assert.equal(response.body.error.code, 'MODEL_NOT_FOUND');
      assert.match(response.body.error.message, /"openai\/meta-llama\/nope" does not exist/);
    });

    it('PUT refuses an id with an empty segment (a doubled or trailing slash) or a space with a 400 naming the part, in words and not a pattern', async () => {
      for (const [path, param] of [
        ['/api/admin/models/openai/meta-llama//llama-3', 'model'],
        ['/api/admin/models/openai/gpt-mock/', 'model'],
        ['/api/admin/models/openai/meta%20llama', 'model'],
        ['/api/admin/models/openai%2F%2Fllama', 'id'],
      ]) {
        const response = await env.admin('PUT', path, priced('x'));
        assert.equal(response.status, 400, `${path}: ${response.text}`);
        assert.equal(response.body.error.code, 'INVALID_REQUEST', path);
        assert.match(
          response.body.error.message,
          new RegExp(`^Invalid params: ${param} must be .*no spaces and no empty part between slashes`),
          path,
        );
        assert.doesNotMatch(response.body.error.message, /pattern/, path);
      }
      assert.equal((await adminModel(env, 'openai/gpt-mock/')) ?? null, null);
    });

    it('needsPricing lists only the listed models that still wait for a price: not one the operator priced, nor one enabled', async () => {
      // Priced but left disabled; enabled at no price (a free local model); the deeper one untouched.
      await env.admin('PUT', `/api/admin/models/${LLAMA}`, { ...priced('meta-llama/llama-3'), enabled: false });
      await env.admin('PUT', '/api/admin/models/openai/gpt-mock', { ...priced('gpt-mock'), pricing: {} });
      await env.admin('PUT', '/api/admin/models/openai/qwen/qwen-2/instruct', {
        ...priced('qwen/qwen-2/instruct'),
        pricing: {},
        enabled: false,
      });
      for (let sync = 0; sync < 2; sync++) {
        const report = await env.admin('POST', '/api/admin/models/sync');
        assert.equal(report.status, 200, report.text);
        assert.deepEqual(report.body.providers[0].needsPricing, ['openai/qwen/qwen-2/instruct']);
        assert.equal(report.body.providers[0].updated, 3);
      }
      // The sync kept what the operator set.
      assert.equal((await adminModel(env, LLAMA)).pricing.prompt, 1);
      assert.equal((await adminModel(env, 'openai/gpt-mock')).enabled, true);
    });
  },
  { config: { OPENAI_BASE_URL: `${mock.url}/v1`, OPENAI_API_KEY: 'sk-test' } },
);
