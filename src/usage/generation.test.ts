import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { authorizeForTest } from '../oauth/testing.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, readSseFrames, settled } from '../gateway/testing.ts';

const mock = await startMockUpstream();
after(() => mock.close());

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const hi = [{ role: 'user', content: 'hi' }];

/** `GET /api/v1/generation?id=` with `token`. */
const generation = (env: TestEnv, token: string, id: string) =>
  env.request('GET', `/api/v1/generation?id=${encodeURIComponent(id)}`, { token });

/** A chat call with `token` (not streamed); resolves the answer. */
async function chat(env: TestEnv, token: string, model = 'acme/chat') {
  const response = await env.request('POST', '/api/v1/chat/completions', { token, body: { model, messages: hi } });
  assert.equal(response.status, 200, response.text);
  return response.body;
}

describeEachDatabase(
  'GET /api/v1/generation: one call by the id it was answered with',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/chat', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { prompt: 3, completion: 5, request: 0.0001 },
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/stall', {
        provider: 'mock',
        upstreamModel: 'stall-2',
        pricing: { prompt: 3, completion: 5 },
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/claude', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing: { prompt: 3, completion: 5 },
        maxOutputTokens: 100,
      });
    });

    it("a chat's generation has the response's id, cost and tokens", async () => {
      const user = await fundedUser(env, 10);
      const answer = await chat(env, user.key);
      const response = await generation(env, user.key, answer.id);
      assert.equal(response.status, 200, response.text);
      const { data } = response.body;
      assert.equal(data.id, answer.id);
      assert.equal(data.total_cost, answer.usage.cost, "the cost is the response's usage.cost");
      assert.equal(data.usage, answer.usage.cost);
      assert.equal(data.tokens_prompt, answer.usage.prompt_tokens);
      assert.equal(data.tokens_completion, answer.usage.completion_tokens);
      assert.equal(data.native_tokens_prompt, answer.usage.prompt_tokens);
      assert.equal(data.native_tokens_cached, 0);
      assert.equal(data.native_tokens_reasoning, 0);
      assert.equal(data.model, 'acme/chat');
      assert.match(data.created_at, ISO);
      assert.deepEqual(
        { streamed: data.streamed, cancelled: data.cancelled, finish_reason: data.finish_reason, app_id: data.app_id },
        { streamed: false, cancelled: false, finish_reason: 'stop', app_id: null },
      );
      assert.equal(data.is_byok, false);
      assert.ok(Number.isInteger(data.latency) && data.latency >= 0);
      assert.equal(data.provider_name, null, 'what Tollgate does not know is null');
    });

    it("a streamed chat's generation has the chunks' id and the usage chunk's cost, once settled", async () => {
      const user = await fundedUser(env, 10);
      const response = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'acme/chat',
          messages: hi,
          stream: true,
          stream_options: { include_usage: true },
        }),
      });
      assert.equal(response.status, 200);
      const chunks = (await readSseFrames(response)).map((frame) => frame.data).filter((data) => data !== '[DONE]');
      const usage = chunks.find((chunk) => chunk.usage)?.usage;
      assert.ok(usage, 'the usage chunk');
      await settled(env, user);
      const { status, body } = await generation(env, user.key, chunks[0].id);
      assert.equal(status, 200);
      assert.equal(body.data.id, chunks[0].id);
      assert.equal(body.data.total_cost, usage.cost);
      assert.equal(body.data.tokens_completion, usage.completion_tokens);
      assert.equal(body.data.streamed, true);
      assert.equal(body.data.finish_reason, 'stop');
    });

    it('a stream the client left is there once settled: cancelled, no finish reason, charged what was produced', async () => {
      const user = await fundedUser(env, 10);
      const controller = new AbortController();
      const response = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'acme/stall', messages: hi, stream: true }),
        signal: controller.signal,
      });
      assert.equal(response.status, 200);
      const reader = response.body!.getReader();
      let text = '';
      while ((text.match(/"content":"[^"]+"/g) ?? []).length < 2)
        text += new TextDecoder().decode((await reader.read()).value);
      const id = JSON.parse(/^data: (.*)$/m.exec(text)![1]!).id as string;
      controller.abort();
      await settled(env, user);
      let found = await generation(env, user.key, id);
      // The settle commits once the gateway sees the client gone: a client asks again until it is there.
      for (let i = 0; found.status === 404 && i < 200; i++) {
        await new Promise((resolve) => setTimeout(resolve, 5));
        found = await generation(env, user.key, id);
      }
      assert.equal(found.status, 200, found.text);
      assert.deepEqual(
        {
          cancelled: found.body.data.cancelled,
          streamed: found.body.data.streamed,
          finish: found.body.data.finish_reason,
        },
        { cancelled: true, streamed: true, finish: null },
      );
      assert.equal(found.body.data.tokens_completion, 2);
      assert.ok(found.body.data.total_cost > 0, 'what was produced is charged');
    });

    it('a Messages, a Responses and a legacy completion call are found by the ids they were answered with', async () => {
      const user = await fundedUser(env, 10);
      const ask = async (path: string, body: Record<string, unknown>) => {
        const response = await env.request('POST', path, { token: user.key, body });
        assert.equal(response.status, 200, response.text);
        const found = await generation(env, user.key, response.body.id);
        assert.equal(found.status, 200, `${path}: ${found.text}`);
        assert.equal(found.body.data.total_cost, response.body.usage.cost, path);
        return response.body.id as string;
      };
      assert.equal(await ask('/api/v1/messages', { model: 'acme/claude', max_tokens: 16, messages: hi }), 'msg_mock');
      // A Messages answer from an OpenAI upstream gets a new msg_ id: the one the call was recorded with.
      assert.match(await ask('/api/v1/messages', { model: 'acme/chat', max_tokens: 16, messages: hi }), /^msg_/);
      assert.match(await ask('/api/v1/responses', { model: 'acme/chat', input: 'hi' }), /^resp_/);
      assert.match(await ask('/api/v1/completions', { model: 'tollgate/echo', prompt: 'hi' }), /^cmpl-/);
    });

    it("calls settled together (PostgreSQL's batched closes) are each found by their own id", async () => {
      const users = await Promise.all(Array.from({ length: 8 }, () => fundedUser(env, 10)));
      const answers = await Promise.all(users.map((user) => chat(env, user.key, 'tollgate/echo')));
      for (const [i, user] of users.entries()) {
        const found = await generation(env, user.key, answers[i].id);
        assert.equal(found.status, 200, found.text);
        assert.equal(found.body.data.total_cost, answers[i].usage.cost);
      }
    });

    it('the official openai SDK reads the generation of its chat through its generic get', async () => {
      const user = await fundedUser(env, 10);
      const client = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      const completion = await client.chat.completions.create({
        model: 'tollgate/echo',
        messages: [{ role: 'user', content: 'hello' }],
      });
      const stats = await client.get<{ data: { id: string; total_cost: number } }>('/generation', {
        query: { id: completion.id },
      });
      assert.equal(stats.data.id, completion.id);
      assert.equal(stats.data.total_cost, (completion.usage as unknown as { cost: number }).cost);
      await assert.rejects(
        client.get('/generation', { query: { id: 'chatcmpl-unknown' } }),
        (error: any) => error.status === 404 && error.code === 'NOT_FOUND',
      );
    });

    it("an unknown id is a 404; another user's id is the same 404; no id a 400; no credential a 401", async () => {
      const user = await fundedUser(env, 10);
      const other = await fundedUser(env, 10);
      const theirs = await chat(env, other.key, 'tollgate/echo');
      const unknown = await generation(env, user.key, 'chatcmpl-nothing-like-it');
      assert.equal(unknown.status, 404);
      assert.equal(unknown.body.error.code, 'NOT_FOUND');
      const foreign = await generation(env, user.key, theirs.id);
      assert.equal(foreign.status, 404, "another user's call is not found");
      assert.deepEqual(foreign.body, unknown.body, 'not told apart from an unknown id');
      assert.equal((await generation(env, other.key, theirs.id)).status, 200, 'its owner reads it');

      const missing = await env.request('GET', '/api/v1/generation', { token: user.key });
      assert.equal(missing.status, 400);
      assert.equal(missing.body.error.code, 'INVALID_REQUEST');
      assert.equal((await env.request('GET', `/api/v1/generation?id=${theirs.id}`)).status, 401);
    });

    it("any key of the user reads its calls; an app's token needs billing:read and reads only its own app's calls", async () => {
      const user = await fundedUser(env, 10);
      const first = await authorizeForTest(env, { user: user.session, scopes: ['ai:chat', 'billing:read'] });
      const second = await authorizeForTest(env, { user: user.session, scopes: ['ai:chat', 'billing:read'] });
      const chatOnly = await authorizeForTest(env, { user: user.session, scopes: ['ai:chat'] });
      const byFirst = await chat(env, first.accessToken, 'tollgate/echo');
      const byKey = await chat(env, user.key, 'tollgate/echo');
      await settled(env, user);

      const mine = await generation(env, first.accessToken, byFirst.id);
      assert.equal(mine.status, 200, mine.text);
      assert.equal(mine.body.data.app_id, first.clientId);
      assert.equal((await generation(env, second.accessToken, byFirst.id)).status, 404, "another app's call");
      assert.equal((await generation(env, first.accessToken, byKey.id)).status, 404, 'a call made through no app');
      const keyReads = await generation(env, user.key, byFirst.id);
      assert.equal(keyReads.status, 200, "the user's own key reads every call of the user");

      const refused = await generation(env, chatOnly.accessToken, byFirst.id);
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.code, 'PERMISSION_DENIED');
      assert.match(refused.body.error.message, /billing:read/);
      const refusedBeforeValidation = await env.request('GET', '/api/v1/generation', { token: chatOnly.accessToken });
      assert.equal(refusedBeforeValidation.status, 403, 'the scope is checked before the query');

      const modelsOnly = await env.dashboard(user.session, 'POST', '/api/user/api-keys', {
        name: 'models only',
        permissions: ['ai:models'],
      });
      assert.equal((await generation(env, modelsOnly.body.apiKey.key, byKey.id)).status, 200, 'any key of the user');
      assert.equal((await env.dashboard(user.session, 'GET', `/api/v1/generation?id=${byKey.id}`)).status, 200);
    });
  },
  { config: { ANTHROPIC_BASE_URL: mock.url, providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }] } },
);
