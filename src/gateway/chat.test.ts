import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, readSseFrames, settled, usageOf, wallet } from './testing.ts';

const mock = await startMockUpstream({ apiKey: 'sk-mock' });
after(() => mock.close());

/** Prices that make charges easy to read: 1 credit per 1M prompt tokens is 1 micro-credit per token. */
const pricing = { prompt: 1, completion: 3, request: 0.0001 };

/** A streamed chat sent with fetch, so that the test reads the event stream itself. */
const postStream = (baseUrl: string, key: string, body: Record<string, unknown>) =>
  fetch(`${baseUrl}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ stream: true, messages: [{ role: 'user', content: 'hi' }], ...body }),
  });

describeEachDatabase(
  'chat completions through an OpenAI-compatible upstream',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/ok', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing,
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/see', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing,
        maxOutputTokens: 1000,
        imageTokens: 1500,
      });
      await putModel(env, 'acme/no-usage', {
        provider: 'mock',
        upstreamModel: 'no-usage',
        pricing,
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/late-end', {
        provider: 'mock',
        upstreamModel: 'late-end',
        pricing,
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/capped', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing,
        maxOutputTokens: 50,
      });
      await putModel(env, 'acme/pricey', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { prompt: 1_000_000, completion: 1_000_000 },
        maxOutputTokens: 1000,
      });
    });

    it('a non-streaming chat returns choices[0].message.content, renames the model and charges the reported usage', async () => {
      const user = await fundedUser(env, 5);
      const response = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/ok', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.choices[0].message.content, 'alpha beta gamma delta');
      assert.equal(response.body.model, 'acme/ok');
      assert.equal(mock.requests.at(-1)!.headers.authorization, 'Bearer sk-mock');
      // Reported usage: 11 prompt tokens × 1 + 4 completion tokens × 3 + 100 per request, in micro-credits.
      const after = await wallet(env, user);
      assert.deepEqual(after, { balance: 5_000_000 - (11 + 12 + 100), reserved: 0, available: 5_000_000 - 123 });
      const [record] = await usageOf(env, user);
      assert.equal(record.status, 'ok');
      assert.equal(record.kind, 'chat');
      assert.equal(record.model, 'acme/ok');
      assert.equal(Number(record.cost), 123);
      assert.equal(Number(record.prompt_tokens), 11);
      assert.equal(Number(record.completion_tokens), 4);
      assert.ok(record.hold_id?.startsWith('hold_'));
    });

    it('allow-listed OpenAI fields (tools, response_format, vision parts) reach the upstream untouched', async () => {
      const user = await fundedUser(env, 5);
      const body = {
        model: 'acme/see',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is this?' },
              { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
            ],
          },
        ],
        tools: [
          {
            type: 'function',
            function: { name: 'lookup', parameters: { type: 'object', properties: { q: { type: 'string' } } } },
          },
        ],
        tool_choice: 'auto',
        response_format: { type: 'json_object' },
        temperature: 0.2,
        seed: 7,
        user: 'end-user-1',
      };
      const response = await env.request('POST', '/api/v1/chat/completions', { token: user.key, body });
      assert.equal(response.status, 200, response.text);
      const sent = mock.requests.at(-1)!.body;
      assert.equal(sent.model, 'default-model');
      for (const field of [
        'messages',
        'tools',
        'tool_choice',
        'response_format',
        'temperature',
        'seed',
        'user',
      ] as const)
        assert.deepEqual(sent[field], body[field], field);
    });

    it("the output cap is clamped to the model's and sent upstream, so the hold bounds the cost", async () => {
      const user = await fundedUser(env, 5);
      await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/capped', max_tokens: 5000, messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(mock.requests.at(-1)!.body.max_tokens, 50);
      await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/capped', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(mock.requests.at(-1)!.body.max_tokens, 50);
      await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/capped', max_completion_tokens: 20, messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(mock.requests.at(-1)!.body.max_completion_tokens, 20);
      assert.equal(mock.requests.at(-1)!.body.max_tokens, undefined);
    });

    it('a streamed chat is relayed as SSE chunks ending in [DONE]; usage is shown only when asked and always billed', async () => {
      const user = await fundedUser(env, 5);
      const plain = await postStream(env.baseUrl, user.key, { model: 'acme/ok' });
      assert.equal(plain.status, 200);
      assert.match(plain.headers.get('content-type')!, /^text\/event-stream/);
      const frames = await readSseFrames(plain);
      assert.equal(frames.at(-1)!.data, '[DONE]');
      const chunks = frames.slice(0, -1).map((f) => f.data);
      assert.equal(chunks.map((c) => c.choices[0]?.delta?.content ?? '').join(''), 'alpha beta gamma delta');
      assert.ok(chunks.every((c) => c.model === 'acme/ok' && c.usage === undefined));
      // The upstream was asked for usage although the client did not ask.
      assert.equal(mock.requests.at(-1)!.body.stream_options.include_usage, true);
      assert.equal((await settled(env, user)).balance, 5_000_000 - 123);

      const withUsage = await postStream(env.baseUrl, user.key, {
        model: 'acme/ok',
        stream_options: { include_usage: true },
      });
      const usageFrame = (await readSseFrames(withUsage)).find((f) => f.data?.usage);
      assert.deepEqual(usageFrame?.data.usage, {
        prompt_tokens: 11,
        completion_tokens: 4,
        total_tokens: 15,
        prompt_tokens_details: { cached_tokens: 0, cache_write_tokens: 0, audio_tokens: 0 },
        completion_tokens_details: { reasoning_tokens: 0, audio_tokens: 0 },
        cost: 0.000123,
      });
      assert.equal((await settled(env, user)).balance, 5_000_000 - 246);
    });

    it('streamed chats one after another reuse one upstream connection, even when the stream ends a little after [DONE]', async () => {
      const user = await fundedUser(env, 5);
      const stream = async () => {
        const response = await postStream(env.baseUrl, user.key, { model: 'acme/late-end' });
        assert.equal((await readSseFrames(response)).at(-1)!.data, '[DONE]');
        await settled(env, user);
        // The upstream's answer has ended (its last bytes come after [DONE]): the connection is free again.
        await mock.settled(mock.requests.length);
      };
      await stream();
      const before = mock.connections();
      for (let i = 0; i < 5; i++) await stream();
      assert.equal(mock.connections() - before, 0, 'no new connection to the upstream');
    });

    it('an upstream that reports no usage is billed on counted tokens', async () => {
      const user = await fundedUser(env, 5);
      const response = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/no-usage', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(response.status, 200);
      const [record] = await usageOf(env, user);
      assert.equal(Number(record.completion_tokens), 4); // " alpha beta gamma delta" is 4 tokens
      assert.ok(Number(record.prompt_tokens) > 0);
      assert.equal(Number(record.cost), Number(record.prompt_tokens) + 4 * 3 + 100);
      assert.equal((await wallet(env, user)).balance, 5_000_000 - Number(record.cost));
    });

    it('a streamed answer whose upstream reports no usage is billed on the tokens counted as it streamed', async () => {
      const user = await fundedUser(env, 5);
      const response = await postStream(env.baseUrl, user.key, { model: 'acme/no-usage' });
      assert.equal(response.status, 200);
      await readSseFrames(response);
      await settled(env, user);
      const [record] = await usageOf(env, user);
      assert.equal(Number(record.completion_tokens), 4); // the same count as the whole answer's
      assert.equal((await wallet(env, user)).balance, 5_000_000 - Number(record.cost));
    });

    it('unknown model → 404 MODEL_NOT_FOUND, malformed model → 400, no messages → 400, nothing held', async () => {
      const user = await fundedUser(env, 5);
      const unknown = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/nope', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(unknown.status, 404);
      assert.deepEqual(Object.keys(unknown.body.error).sort(), ['code', 'message', 'type']);
      assert.equal(unknown.body.error.code, 'MODEL_NOT_FOUND');
      const malformed = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(malformed.status, 400);
      assert.equal(malformed.body.error.code, 'INVALID_REQUEST');
      const empty = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/ok', messages: [] },
      });
      assert.equal(empty.status, 400);
      assert.equal((await wallet(env, user)).balance, 5_000_000);
    });

    it('stream_options.include_usage that is not a boolean is a 400 naming it, "must be true or false", without the union\'s other shapes', async () => {
      const user = await fundedUser(env, 5);
      const response = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: {
          model: 'acme/ok',
          stream: true,
          stream_options: { include_usage: 'x' },
          messages: [{ role: 'user', content: 'hi' }],
        },
      });
      assert.equal(response.status, 400, response.text);
      assert.equal(response.body.error.code, 'INVALID_REQUEST');
      assert.equal(response.body.error.param, 'stream_options.include_usage');
      assert.equal(response.body.error.message, 'Invalid body: stream_options.include_usage must be true or false');
      assert.equal((await wallet(env, user)).reserved, 0);
    });

    it('a key without ai:chat or ai:completions gets 403; with ai:completions alone it may chat', async () => {
      const modelsOnly = await fundedUser(env, 5, ['ai:models']);
      const refused = await env.request('POST', '/api/v1/chat/completions', {
        token: modelsOnly.key,
        body: { model: 'acme/ok', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(refused.status, 403);
      assert.equal(refused.body.error.code, 'PERMISSION_DENIED');
      const completions = await fundedUser(env, 5, ['ai:completions']);
      const allowed = await env.request('POST', '/api/v1/chat/completions', {
        token: completions.key,
        body: { model: 'acme/ok', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(allowed.status, 200);
      const noModels = await env.request('GET', '/api/v1/models', { token: completions.key });
      assert.equal(noModels.status, 403);
    });

    it('a worst case above the available credits is a 402 INSUFFICIENT_CREDITS with available and required, and never reaches upstream', async () => {
      const user = await fundedUser(env, 1);
      const before = mock.requests.length;
      const response = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/pricey', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(response.status, 402);
      assert.equal(response.body.error.code, 'INSUFFICIENT_CREDITS');
      assert.equal(response.body.error.type, 'insufficient_credits_error');
      assert.equal(response.body.error.available, 1);
      assert.ok(response.body.error.required > 1);
      assert.equal(mock.requests.length, before);
    });
  },
  { config: { providers: [{ name: 'mock', baseUrl: `${mock.url}/v1`, apiKey: 'sk-mock' }] } },
);
