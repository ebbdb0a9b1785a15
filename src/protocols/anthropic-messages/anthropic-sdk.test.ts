import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { describeEachDatabase, type TestEnv } from '../../testing/harness.ts';
import { authorizeForTest } from '../../oauth/testing.ts';
import { startMockUpstream } from '../../providers/testing/mock-upstream.ts';
import { fundedUser, keyWithDailyLimit, putModel, settled, wallet } from '../../gateway/testing.ts';
import { startToolUpstream, THINKING, THINKING_SIGNATURE, TOOL_UPSTREAM_ANSWER } from './testing/tool-upstream.ts';

const mock = await startMockUpstream();
const tools = await startToolUpstream();
after(() => Promise.all([mock.close(), tools.close()]));

/** Prices in credits per 1M tokens, i.e. micro-credits per token: every charge below is exact. */
const PRICING = { prompt: 10, completion: 20, cacheRead: 1, cacheWrite: 13 };
/** What the Anthropic upstream reports when told to: the cache counts beside `input_tokens`, as Anthropic does. */
const CACHE_USAGE = {
  input_tokens: 11,
  cache_creation_input_tokens: 100,
  cache_read_input_tokens: 200,
  output_tokens: 4,
};
/** 11 × 10 + 100 × 13 + 200 × 1 + 4 × 20. */
const CACHE_CHARGE = 1690;
/** The OpenAI-compatible mock's usage: 11 prompt, 4 completion tokens. */
const OPENAI_CHARGE = 11 * 10 + 4 * 20;
const REPLY = 'alpha beta gamma delta';

/** The SDK as a developer builds it: `baseURL` is Tollgate's `/api` (the SDK adds `/v1/messages`). */
function sdk(env: TestEnv, credential: { apiKey: string } | { authToken: string }): Anthropic {
  return new Anthropic({
    ...credential,
    ...('apiKey' in credential ? { authToken: null } : { apiKey: null }),
    baseURL: `${env.baseUrl}/api`,
    maxRetries: 0,
  });
}

/** `metadata` the mock reads its usage from (Anthropic's own API knows only `user_id`; the mock knows both). */
const reportCache = { user_id: 'u1', mock_usage: CACHE_USAGE } as Anthropic.Metadata;

async function charged(env: TestEnv, user: Awaited<ReturnType<typeof fundedUser>>, before: number): Promise<number> {
  return before - (await settled(env, user)).balance;
}

describeEachDatabase(
  '@anthropic-ai/sdk against Tollgate',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/claude', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing: PRICING,
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/gpt', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: PRICING,
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/or-claude', {
        provider: 'openrouter',
        upstreamModel: 'anthropic/claude-x',
        pricing: PRICING,
        maxOutputTokens: 1000,
      });
    });

    it('messages.create through an Anthropic upstream: the native body passes, the cache tokens are reported and charged exactly', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const message = await sdk(env, { apiKey: user.key }).messages.create({
        model: 'acme/claude',
        max_tokens: 200,
        system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
        messages: [{ role: 'user', content: 'hi' }],
        stop_sequences: ['END'],
        metadata: reportCache,
      });
      assert.match(message.id, /^msg_/);
      assert.equal(message.model, 'acme/claude');
      assert.deepEqual(message.content, [{ type: 'text', text: REPLY }]);
      assert.equal(message.stop_reason, 'end_turn');
      assert.deepEqual(message.usage, { ...CACHE_USAGE, cost: CACHE_CHARGE / 1e6 });
      // The upstream got the client's own body: cache_control and metadata intact, model and cap ours.
      const sent = mock.requests.at(-1)!;
      assert.equal(sent.path, '/v1/messages');
      assert.deepEqual(sent.body.system, [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }]);
      assert.deepEqual(sent.body.stop_sequences, ['END']);
      assert.deepEqual(sent.body.metadata, reportCache);
      assert.equal(sent.body.model, 'claude-x');
      assert.equal(sent.body.max_tokens, 200);
      assert.equal(await charged(env, user, start), CACHE_CHARGE);
    });

    it('messages.stream through an Anthropic upstream: the text, the final usage with cache tokens and cost, charged exactly', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const stream = sdk(env, { apiKey: user.key }).messages.stream({
        model: 'acme/claude',
        max_tokens: 200,
        messages: [{ role: 'user', content: 'hi' }],
        metadata: reportCache,
      });
      let text = '';
      stream.on('text', (delta) => (text += delta));
      const final = await stream.finalMessage();
      assert.equal(text, REPLY);
      assert.equal(final.model, 'acme/claude');
      assert.equal(final.stop_reason, 'end_turn');
      // The SDK keeps Anthropic's four counts from the last message_delta (our cost rides there too, unread by it).
      for (const [field, value] of Object.entries(CACHE_USAGE))
        assert.equal(final.usage[field as keyof typeof CACHE_USAGE], value, field);
      assert.equal(await charged(env, user, start), CACHE_CHARGE);
    });

    it('messages.create and messages.stream through an OpenAI-compatible upstream, with an OAuth token as Bearer (authToken)', async () => {
      const authorization = await authorizeForTest(env);
      await env.admin('POST', `/api/admin/users/${authorization.user.userId}/credits`, { amount: 10 });
      const client = sdk(env, { authToken: authorization.accessToken });
      const message = await client.messages.create({
        model: 'acme/gpt',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'hi' }],
      });
      assert.deepEqual(message.content, [{ type: 'text', text: REPLY }]);
      assert.equal(message.stop_reason, 'end_turn');
      assert.deepEqual(message.usage, {
        input_tokens: 11,
        output_tokens: 4,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        cost: OPENAI_CHARGE / 1e6,
      });
      assert.equal(mock.requests.at(-1)!.path, '/v1/chat/completions');
      const final = await client.messages
        .stream({ model: 'acme/gpt', max_tokens: 50, messages: [{ role: 'user', content: 'hi' }] })
        .finalMessage();
      assert.deepEqual(final.content, [{ type: 'text', text: REPLY }]);
      assert.equal(final.usage.output_tokens, 4);
      assert.equal(final.usage.input_tokens, 11);
    });

    it('cache_control reaches an OpenRouter upstream on the translated content parts (the top-level one on the last part, where Anthropic puts it); another OpenAI-compatible upstream gets plain text', async () => {
      const user = await fundedUser(env, 10);
      const client = sdk(env, { apiKey: user.key });
      const ephemeral = { type: 'ephemeral' as const };
      const conversation: Anthropic.MessageCreateParamsNonStreaming = {
        model: 'acme/or-claude',
        max_tokens: 50,
        system: [
          { type: 'text', text: 'Rules.' },
          { type: 'text', text: 'A long manual.', cache_control: ephemeral },
        ],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'Weather?', cache_control: ephemeral }] },
          { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'weather', input: {} }] },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny', cache_control: ephemeral }],
          },
        ],
      };
      await client.messages.create(conversation);
      assert.deepEqual(mock.requests.at(-1)!.body.messages, [
        {
          role: 'system',
          content: [
            { type: 'text', text: 'Rules.' },
            { type: 'text', text: 'A long manual.', cache_control: ephemeral },
          ],
        },
        { role: 'user', content: [{ type: 'text', text: 'Weather?', cache_control: ephemeral }] },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'toolu_1', type: 'function', function: { name: 'weather', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'toolu_1', content: [{ type: 'text', text: 'sunny', cache_control: ephemeral }] },
      ]);
      // Automatic caching (top-level cache_control): the breakpoint lands on the last part, streamed or not.
      const automatic = {
        model: 'acme/or-claude',
        max_tokens: 50,
        cache_control: ephemeral,
        system: 'Rules.',
        messages: [
          { role: 'user' as const, content: 'Weather?' },
          { role: 'assistant' as const, content: 'Where?' },
          { role: 'user' as const, content: 'Paris' },
        ],
      };
      await client.messages.stream(automatic).finalMessage();
      assert.deepEqual(mock.requests.at(-1)!.body.messages.slice(1), [
        { role: 'user', content: 'Weather?' },
        { role: 'assistant', content: 'Where?' },
        { role: 'user', content: [{ type: 'text', text: 'Paris', cache_control: ephemeral }] },
      ]);
      await client.messages.create({ ...automatic, model: 'acme/gpt' });
      assert.deepEqual(mock.requests.at(-1)!.body.messages.at(-1), { role: 'user', content: 'Paris' });
    });

    it('an API key as Bearer (authToken) works too, and count_tokens counts without charging', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      for (const credential of [{ authToken: user.key }, { apiKey: user.key }]) {
        const counted = await sdk(env, credential).messages.countTokens({
          model: 'acme/claude',
          system: 'Be brief.',
          messages: [{ role: 'user', content: 'Hello there, how are you?' }],
        });
        assert.ok(counted.input_tokens > 10 && counted.input_tokens < 40, String(counted.input_tokens));
      }
      assert.equal((await wallet(env, user)).balance, start);
    });

    it('the SDK surfaces a 402 and a 429 as APIError with their status, the contract fields inside the Anthropic envelope', async () => {
      const poor = await fundedUser(env, 0.001);
      const refused = await sdk(env, { apiKey: poor.key })
        .messages.create({ model: 'acme/claude', max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }] })
        .catch((error) => error);
      assert.ok(refused instanceof Anthropic.APIError, String(refused));
      assert.equal(refused.status, 402);
      assert.equal((refused.error as any).type, 'error');
      assert.deepEqual(Object.keys((refused.error as any).error).sort(), [
        'available',
        'code',
        'message',
        'required',
        'type',
      ]);
      assert.equal((refused.error as any).error.code, 'INSUFFICIENT_CREDITS');
      assert.equal((refused.error as any).error.type, 'billing_error');

      const user = await fundedUser(env, 10);
      const limited = await keyWithDailyLimit(env, user, 0.001);
      const limitedError = await sdk(env, { apiKey: limited })
        .messages.create({ model: 'acme/claude', max_tokens: 1000, messages: [{ role: 'user', content: 'hi' }] })
        .catch((error) => error);
      assert.ok(limitedError instanceof Anthropic.RateLimitError, String(limitedError));
      assert.equal(limitedError.status, 429);
      const body = (limitedError.error as any).error;
      assert.deepEqual(Object.keys(body).sort(), [
        'code',
        'current',
        'limit',
        'limitType',
        'message',
        'requested',
        'resetsAt',
        'type',
      ]);
      assert.equal(body.code, 'SPENDING_LIMIT_EXCEEDED');
      assert.equal(body.type, 'rate_limit_error');
      assert.equal(body.limitType, 'daily');
      assert.equal(body.limit, 0.001);
    });

    it("what the SDK calls beyond messages and count_tokens (messages.batches) is a 404 in Anthropic's envelope", async () => {
      const user = await fundedUser(env, 1);
      const error = await sdk(env, { apiKey: user.key })
        .messages.batches.create({
          requests: [
            {
              custom_id: 'a',
              params: { model: 'acme/claude', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
            },
          ],
        })
        .then(
          () => assert.fail('a batch was accepted'),
          (thrown) => thrown,
        );
      assert.ok(error instanceof Anthropic.NotFoundError, String(error));
      assert.equal((error.error as any).type, 'error');
      assert.equal((error.error as any).error.type, 'not_found_error');
      assert.equal((error.error as any).error.code, 'NOT_FOUND');
      assert.match((error.error as any).error.message, /No route POST \/api\/v1\/messages\/batches/);
    });

    it("models.list and models.retrieve read Anthropic's fields (type, display_name, created_at) and the list ends after one page", async () => {
      const user = await fundedUser(env, 1, ['ai:models']);
      const client = sdk(env, { apiKey: user.key });
      const listed: Anthropic.ModelInfo[] = [];
      for await (const model of client.models.list()) listed.push(model);
      const claude = listed.find((model) => model.id === 'acme/claude');
      assert.ok(claude, JSON.stringify(listed.map((model) => model.id)));
      assert.equal(claude.type, 'model');
      assert.equal(typeof claude.display_name, 'string');
      assert.ok(!Number.isNaN(Date.parse(claude.created_at)), claude.created_at);
      assert.equal(new Set(listed.map((model) => model.id)).size, listed.length, 'no page was fetched twice');
      const retrieved = await client.models.retrieve('acme/claude');
      assert.equal(retrieved.id, 'acme/claude');
      assert.equal(retrieved.display_name, claude.display_name);
      assert.equal(retrieved.created_at, claude.created_at);
    });

    it('after all of it the ledger verifies', async () => {
      const report = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(report.status, 200);
      assert.equal(report.body.ok, true, report.text);
    });
  },
  {
    config: {
      ANTHROPIC_BASE_URL: mock.url,
      OPENROUTER_BASE_URL: `${mock.url}/v1`,
      OPENROUTER_API_KEY: 'sk-or-mock',
      providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }],
    },
  },
);

describeEachDatabase(
  '@anthropic-ai/sdk through tool-calling and cache-reporting upstreams',
  (env) => {
    const weather: Anthropic.Tool = {
      name: 'weather',
      description: 'The weather of a city',
      input_schema: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
    };
    const question: Anthropic.MessageParam = { role: 'user', content: 'Weather in Paris?' };
    /** 20 input tokens at 10 and 6 output at 20, whatever the upstream. */
    const TOOL_CALL_CHARGE = 20 * 10 + 6 * 20;

    before(async () => {
      await putModel(env, 'acme/claude', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing: PRICING,
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/gpt', {
        provider: 'tools',
        upstreamModel: 'gpt-x',
        pricing: PRICING,
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/cached', {
        provider: 'tools',
        upstreamModel: 'cache-report',
        pricing: PRICING,
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/thinker', {
        provider: 'anthropic',
        upstreamModel: 'thinker',
        pricing: PRICING,
        maxOutputTokens: 4000,
      });
    });

    it('through an OpenAI-compatible upstream, its cached and cache-write tokens are told apart and charged exactly too', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      // The upstream reports OPENAI_CACHE_USAGE, the same counts in OpenAI's shape. max_tokens keeps the hold above the
      // 311 reported input tokens of a two-letter prompt (a capture never exceeds its hold).
      for (const stream of [false, true]) {
        const params = {
          model: 'acme/cached',
          max_tokens: 200,
          messages: [{ role: 'user' as const, content: 'hi' }],
          metadata: { user_id: 'u1' },
        };
        const client = sdk(env, { apiKey: user.key });
        const message = stream
          ? await client.messages.stream(params).finalMessage()
          : await client.messages.create(params);
        for (const [field, value] of Object.entries(CACHE_USAGE))
          assert.equal(message.usage[field as keyof typeof CACHE_USAGE], value, `${field} (stream: ${stream})`);
        // Anthropic's metadata (the end user's id) is not OpenAI's, which OpenAI refuses without `store`: left out.
        assert.equal(tools.bodies.at(-1).metadata, undefined);
      }
      assert.equal(await charged(env, user, start), 2 * CACHE_CHARGE);
    });

    it('extended thinking: thinking and signature deltas reach the SDK, and the signed block goes back upstream as it came', async () => {
      const user = await fundedUser(env, 10);
      const client = sdk(env, { apiKey: user.key });
      const params = {
        model: 'acme/thinker',
        max_tokens: 2000,
        thinking: { type: 'enabled' as const, budget_tokens: 1024 },
        messages: [question],
      };
      const kinds: string[] = [];
      const stream = client.messages.stream(params);
      stream.on('streamEvent', (event) => {
        if (event.type === 'content_block_delta') kinds.push(event.delta.type);
      });
      const first = await stream.finalMessage();
      assert.deepEqual(kinds, ['thinking_delta', 'signature_delta', 'text_delta']);
      assert.deepEqual(first.content[0], { type: 'thinking', thinking: THINKING, signature: THINKING_SIGNATURE });
      const whole = await client.messages.create(params);
      assert.deepEqual(
        whole.content.map((b) => b.type),
        ['thinking', 'text'],
      );
      await client.messages.create({
        ...params,
        messages: [question, { role: 'assistant', content: first.content }, { role: 'user', content: 'And tomorrow?' }],
      });
      const sent = tools.bodies.at(-1);
      assert.deepEqual(sent.thinking, { type: 'enabled', budget_tokens: 1024 });
      assert.deepEqual(sent.messages[1].content[0], {
        type: 'thinking',
        thinking: THINKING,
        signature: THINKING_SIGNATURE,
      });
    });

    for (const model of ['acme/claude', 'acme/gpt']) {
      for (const streamed of [false, true]) {
        it(`${model}, ${streamed ? 'streamed' : 'not streamed'}: tool_use with its parsed input, then the tool_result answered; each turn charged what the upstream reported`, async () => {
          const user = await fundedUser(env, 10);
          const start = (await wallet(env, user)).balance;
          const client = sdk(env, { apiKey: user.key });
          const ask = (messages: Anthropic.MessageParam[]) => {
            const params = { model, max_tokens: 100, tools: [weather], messages };
            return streamed ? client.messages.stream(params).finalMessage() : client.messages.create(params);
          };
          const first = await ask([question]);
          assert.equal(first.stop_reason, 'tool_use');
          const use = first.content.find((block) => block.type === 'tool_use');
          assert.ok(use && use.type === 'tool_use', JSON.stringify(first.content));
          assert.equal(use.name, 'weather');
          assert.deepEqual(use.input, { city: 'Paris' });

          const second = await ask([
            question,
            { role: 'assistant', content: first.content },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: use.id, content: 'sunny, 24°C' }] },
          ]);
          assert.equal(second.stop_reason, 'end_turn');
          assert.deepEqual(
            second.content.map((b) => (b.type === 'text' ? b.text : b.type)),
            [TOOL_UPSTREAM_ANSWER],
          );
          // The upstream saw the tool result, in its own wire format.
          const sent = tools.bodies.at(-1);
          if (model === 'acme/claude')
            assert.deepEqual(sent.messages[2].content[0], {
              type: 'tool_result',
              tool_use_id: use.id,
              content: 'sunny, 24°C',
            });
          else
            assert.ok(
              sent.messages.some(
                (m: any) =>
                  m.role === 'tool' && m.tool_call_id === use.id && JSON.stringify(m.content).includes('sunny'),
              ),
              JSON.stringify(sent.messages),
            );
          assert.equal(await charged(env, user, start), 2 * TOOL_CALL_CHARGE);
        });
      }
    }

    for (const streamed of [false, true]) {
      it(`the SDK's tool runner${streamed ? ', streamed,' : ''} runs its loop to the end: the server-held thread it asks for first is refused as thread_unsupported_request, so it resends the whole history unthreaded`, async () => {
        const user = await fundedUser(env, 10);
        const start = (await wallet(env, user)).balance;
        const client = sdk(env, { apiKey: user.key });
        const ran: unknown[] = [];
        const tool = {
          ...weather,
          run: async (input: unknown) => {
            ran.push(input);
            return 'sunny, 24°C';
          },
        };
        const sentBefore = tools.bodies.length;
        const params = { model: 'acme/claude', max_tokens: 100, tools: [tool], messages: [question] };
        let final: Anthropic.Beta.BetaMessage;
        if (streamed) {
          const runner = client.beta.messages.toolRunner({ ...params, stream: true });
          for await (const turn of runner) for await (const _event of turn);
          final = await runner.done();
        } else final = await client.beta.messages.toolRunner(params);
        assert.deepEqual(ran, [{ city: 'Paris' }]);
        assert.deepEqual(
          final.content.map((b) => (b.type === 'text' ? b.text : b.type)),
          [TOOL_UPSTREAM_ANSWER],
        );
        // The refused `thread` never went upstream; each of the two turns did, once, and was charged once.
        const sent = tools.bodies.slice(sentBefore);
        assert.equal(sent.length, 2);
        for (const body of sent) assert.equal(body.thread, undefined);
        assert.equal(await charged(env, user, start), 2 * TOOL_CALL_CHARGE);
      });
    }

    it("a request with `thread` is refused with Anthropic's thread_unsupported_request (400, typed by the SDK), nothing held", async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const error = await sdk(env, { apiKey: user.key })
        .beta.messages.create({
          model: 'acme/claude',
          max_tokens: 100,
          messages: [question],
          thread: { type: 'create' },
          betas: ['message-threads-2026-08-12'],
        } as Anthropic.Beta.MessageCreateParamsNonStreaming)
        .then(
          () => assert.fail('a thread was accepted'),
          (thrown) => thrown,
        );
      assert.ok(error instanceof Anthropic.BadRequestError, String(error));
      assert.equal(error.status, 400);
      const body = (error.error as any).error;
      assert.equal(body.type, 'invalid_request_error');
      assert.equal(body.code, 'UNSUPPORTED_PARAMETER');
      assert.equal(body.param, 'thread');
      assert.equal(body.details.error_code, 'thread_unsupported_request');
      assert.equal(await charged(env, user, start), 0);
    });
  },
  { config: { ANTHROPIC_BASE_URL: tools.url, providers: [{ name: 'tools', baseUrl: `${tools.url}/v1` }] } },
);
