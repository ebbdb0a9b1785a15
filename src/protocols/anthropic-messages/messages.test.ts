import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type TestEnv } from '../../testing/harness.ts';
import { authorizeForTest } from '../../oauth/testing.ts';
import { startMockUpstream } from '../../providers/testing/mock-upstream.ts';
import {
  fundedUser,
  putModel,
  readSseFrames,
  settled,
  usageOf,
  wallet,
  type FundedUser,
} from '../../gateway/testing.ts';
import {
  classifyResponse,
  isInsufficientCreditsError,
  isSpendingLimitError,
} from '../../../packages/sdk/src/errors.ts';

const mock = await startMockUpstream();
after(() => mock.close());

const CREDIT = 1_000_000;
/** One credit per output token and nothing else: a charge in credits is the number of tokens produced. */
const perToken = { prompt: 0, completion: 1_000_000 };
const hi = [{ role: 'user', content: 'hi' }];

/** A Messages call as Anthropic's clients make it: `x-api-key` and `anthropic-version` (Claude Code adds `?beta=true`). */
function messages(
  env: TestEnv,
  key: string | null,
  body: unknown,
  options: { path?: string; headers?: Record<string, string>; signal?: AbortSignal } = {},
): Promise<Response> {
  return fetch(`${env.baseUrl}${options.path ?? '/api/v1/messages'}`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'anthropic-version': '2023-06-01',
      ...(key ? { 'x-api-key': key } : {}),
      ...options.headers,
    },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: options.signal,
  });
}

/** The Anthropic error envelope of a response: its status, its `error` object, and that nothing else is at the top. */
async function anthropicError(response: Response): Promise<{ status: number; error: Record<string, any> }> {
  const body = (await response.json()) as any;
  assert.equal(body.type, 'error', JSON.stringify(body));
  assert.deepEqual(Object.keys(body).sort(), ['error', 'type']);
  return { status: response.status, error: body.error };
}

describeEachDatabase(
  'POST /api/v1/messages over HTTP',
  (env) => {
    let user: FundedUser;
    before(async () => {
      for (const [id, provider, upstreamModel] of [
        ['acme/claude', 'anthropic', 'claude-x'],
        ['acme/claude-stall', 'anthropic', 'stall-2'],
        ['acme/claude-cut', 'anthropic', 'cut-2'],
        ['acme/gpt', 'mock', 'default-model'],
        ['acme/gpt-stall', 'mock', 'stall-2'],
        ['acme/gpt-cut', 'mock', 'cut-2'],
        ['acme/gpt-down', 'mock', 'status-500'],
      ]) {
        await putModel(env, id, { provider, upstreamModel, pricing: perToken, maxOutputTokens: 100 });
      }
      await putModel(env, 'acme/claude-code', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing: { prompt: 1, completion: 1 },
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/gpt-code', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { prompt: 1, completion: 1 },
        maxOutputTokens: 1000,
      });
      user = await fundedUser(env, 1000);
    });

    it("accepts x-api-key or Bearer, anthropic-version and anthropic-beta headers, and a query string (Claude Code's ?beta=true)", async () => {
      const variants: Array<{ key: string | null; path?: string; headers?: Record<string, string> }> = [
        { key: user.key },
        {
          key: user.key,
          path: '/api/v1/messages?beta=true',
          headers: { 'anthropic-beta': 'prompt-caching-2024-07-31,fine-grained-tool-streaming-2025-05-14' },
        },
        { key: null, headers: { authorization: `Bearer ${user.key}` } },
      ];
      for (const variant of variants) {
        const response = await messages(
          env,
          variant.key,
          { model: 'acme/claude', max_tokens: 10, messages: hi },
          variant,
        );
        assert.equal(response.status, 200, await response.clone().text());
        assert.equal(((await response.json()) as any).content[0].text, 'alpha beta gamma delta');
      }
      // The query string is not forwarded; the native body is.
      assert.equal(mock.requests.at(-1)!.path, '/v1/messages');
    });

    it("a request shaped like Claude Code's (Bearer, betas, ?beta=true, cached system blocks, tools, metadata, context_management) streams from either upstream", async () => {
      const body = {
        max_tokens: 32000,
        stream: true,
        temperature: 1,
        metadata: { user_id: 'user_abc_account__session_1' },
        system: [
          {
            type: 'text',
            text: "You are Claude Code, Anthropic's official CLI for Claude.",
            cache_control: { type: 'ephemeral' },
          },
          { type: 'text', text: 'Be careful.' },
        ],
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: '<system-reminder>ctx</system-reminder>' },
              { type: 'text', text: 'fix it', cache_control: { type: 'ephemeral' } },
            ],
          },
        ],
        tools: [
          {
            name: 'Bash',
            description: 'Runs a command',
            input_schema: {
              $schema: 'http://json-schema.org/draft-07/schema#',
              type: 'object',
              properties: { command: { type: 'string' } },
              required: ['command'],
              additionalProperties: false,
            },
          },
        ],
        tool_choice: { type: 'auto' },
        context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
      };
      const headers = {
        authorization: `Bearer ${user.key}`,
        'anthropic-beta': 'claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27',
        'x-app': 'cli',
      };
      for (const model of ['acme/claude-code', 'acme/gpt-code']) {
        const response = await messages(env, null, { ...body, model }, { path: '/api/v1/messages?beta=true', headers });
        assert.equal(response.status, 200, await response.clone().text());
        const frames = await readSseFrames(response);
        assert.equal(
          frames
            .filter((f) => f.event === 'content_block_delta')
            .map((f) => f.data.delta.text)
            .join(''),
          'alpha beta gamma delta',
          model,
        );
        assert.equal(frames.at(-1)!.event, 'message_stop');
        const sent = mock.requests.at(-1)!.body;
        assert.equal('context_management' in sent, false, model);
        assert.equal(sent.max_tokens, 1000, model); // clamped to the model's cap, as held
        if (model === 'acme/claude-code')
          assert.deepEqual([sent.system, sent.metadata, sent.tools], [body.system, body.metadata, body.tools]);
        else assert.equal(sent.messages[0].role, 'system');
      }
    });

    it('a mid-conversation system message (role "system", as Claude Code 2.1 sends after the user\'s turn) is accepted: as sent to Anthropic, joined to the system prompt for OpenAI, counted', async () => {
      const agents = 'Available agent types for the Agent tool: claude, Explore, Plan. '.repeat(20);
      const body = {
        max_tokens: 32000,
        stream: true,
        system: [{ type: 'text', text: 'You are a Claude agent.', cache_control: { type: 'ephemeral' } }],
        messages: [
          { role: 'user', content: [{ type: 'text', text: 'say hi', cache_control: { type: 'ephemeral' } }] },
          { role: 'system', content: agents },
        ],
        thinking: { type: 'adaptive' },
        output_config: { effort: 'high' },
      };
      const headers = {
        authorization: `Bearer ${user.key}`,
        'anthropic-beta': 'claude-code-20250219,mid-conversation-system-2026-04-07,effort-2025-11-24',
      };
      for (const model of ['acme/claude-code', 'acme/gpt-code']) {
        const response = await messages(env, null, { ...body, model }, { path: '/api/v1/messages?beta=true', headers });
        assert.equal(response.status, 200, await response.clone().text());
        const frames = await readSseFrames(response);
        assert.equal(frames.at(-1)!.event, 'message_stop', model);
        const sent = mock.requests.at(-1)!.body;
        if (model === 'acme/claude-code') assert.deepEqual(sent.messages, body.messages);
        else
          assert.deepEqual(
            sent.messages.map((m: any) => [m.role, m.content]),
            [
              ['system', `You are a Claude agent.\n\n${agents}`],
              ['user', 'say hi'],
            ],
          );
      }
      // Text blocks too; the system text is counted (and so held for); a system message holds text only.
      const count = async (msgs: unknown[]) => {
        const response = await messages(
          env,
          user.key,
          { model: 'acme/gpt', messages: msgs },
          { path: '/api/v1/messages/count_tokens' },
        );
        assert.equal(response.status, 200, await response.clone().text());
        return ((await response.json()) as any).input_tokens as number;
      };
      const withSystem = await count([...hi, { role: 'system', content: [{ type: 'text', text: agents }] }]);
      assert.ok(withSystem - (await count(hi)) > 200, String(withSystem));
      const refused = await messages(env, user.key, {
        model: 'acme/gpt',
        max_tokens: 10,
        messages: [
          ...hi,
          { role: 'system', content: [{ type: 'image', source: { type: 'url', url: 'https://x.test/a.png' } }] },
        ],
      });
      const { status, error } = await anthropicError(refused);
      assert.equal(status, 400);
      assert.match(error.message, /messages\[1\]\.content\[0\]/);
      const onlySystem = await messages(env, user.key, {
        model: 'acme/gpt',
        max_tokens: 10,
        messages: [{ role: 'system', content: 'x' }],
      });
      assert.equal(onlySystem.status, 400);
    });

    it('tool_choice.disable_parallel_tool_use reaches an OpenAI-compatible upstream as parallel_tool_calls: false', async () => {
      const response = await messages(env, user.key, {
        model: 'acme/gpt',
        max_tokens: 10,
        messages: hi,
        tools: [{ name: 'f', input_schema: { type: 'object', properties: {} } }],
        tool_choice: { type: 'auto', disable_parallel_tool_use: true },
      });
      assert.equal(response.status, 200, await response.clone().text());
      const sent = mock.requests.at(-1)!.body;
      assert.deepEqual([sent.tool_choice, sent.parallel_tool_calls], ['auto', false]);
    });

    it('answers credential and permission failures in the Anthropic envelope: 401 authentication_error, 403 permission_error', async () => {
      const missing = await anthropicError(
        await messages(env, null, { model: 'acme/claude', max_tokens: 10, messages: hi }),
      );
      assert.equal(missing.status, 401);
      assert.equal(missing.error.type, 'authentication_error');
      assert.equal(missing.error.code, 'UNAUTHENTICATED');
      const wrong = await anthropicError(
        await messages(env, 'ak_not_a_real_key', { model: 'acme/claude', max_tokens: 10, messages: hi }),
      );
      assert.equal(wrong.status, 401);
      assert.match(wrong.error.message, /x-api-key/);
      const modelsOnly = await fundedUser(env, 1, ['ai:models']);
      const denied = await anthropicError(
        await messages(env, modelsOnly.key, { model: 'acme/claude', max_tokens: 10, messages: hi }),
      );
      assert.equal(denied.status, 403);
      assert.equal(denied.error.type, 'permission_error');
      assert.match(denied.error.message, /ai:chat/);
      const countDenied = await anthropicError(
        await messages(
          env,
          modelsOnly.key,
          { model: 'acme/claude', messages: hi },
          { path: '/api/v1/messages/count_tokens' },
        ),
      );
      assert.equal(countDenied.status, 403);
    });

    it('Authorization wins over x-api-key when both are sent; an OAuth access token works in x-api-key too', async () => {
      const both = await anthropicError(
        await messages(
          env,
          user.key,
          { model: 'acme/claude', max_tokens: 10, messages: hi },
          { headers: { authorization: 'Bearer ak_wrong' } },
        ),
      );
      assert.equal(both.status, 401);
      const authorization = await authorizeForTest(env);
      await env.admin('POST', `/api/admin/users/${authorization.user.userId}/credits`, { amount: 10 });
      const response = await messages(env, authorization.accessToken, {
        model: 'acme/claude',
        max_tokens: 10,
        messages: hi,
      });
      assert.equal(response.status, 200, await response.clone().text());
    });

    it("a thinking budget at or above the model's output cap is a 400 before anything is held", async () => {
      const body = {
        model: 'acme/claude',
        max_tokens: 500,
        thinking: { type: 'enabled', budget_tokens: 100 },
        messages: hi,
      };
      const { status, error } = await anthropicError(await messages(env, user.key, body));
      assert.equal(status, 400);
      assert.equal(error.param, 'thinking.budget_tokens');
      assert.match(error.message, /output cap of "acme\/claude" \(100 tokens\)/);
    });

    it('x-api-key is read only by the Messages routes: chat still wants Authorization', async () => {
      const response = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-api-key': user.key },
        body: JSON.stringify({ model: 'acme/gpt', messages: hi }),
      });
      assert.equal(response.status, 401);
    });

    it('bad input is a 400 invalid_request_error naming what is wrong, never a 500; an unknown model a 404 not_found_error', async () => {
      const before = (await settled(env, user)).balance;
      const cases: Array<[unknown, string, RegExp]> = [
        [{ model: 'acme/claude', messages: hi }, 'INVALID_REQUEST', /max_tokens is required/],
        [{ model: 'acme/claude', max_tokens: 10, messages: 'hi' }, 'INVALID_REQUEST', /messages/],
        [
          { model: 'acme/claude', max_tokens: 10, messages: [{ role: 'system', content: 'x' }] },
          'INVALID_REQUEST',
          /role/,
        ],
        [{ model: 'acme/claude', max_tokens: 0, messages: hi }, 'INVALID_REQUEST', /max_tokens/],
        [
          {
            model: 'acme/claude',
            max_tokens: 10,
            messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64' } }] }],
          },
          'INVALID_REQUEST',
          /messages\[0\]\.content\[0\]\.source/,
        ],
        [
          {
            model: 'acme/claude',
            max_tokens: 10,
            messages: hi,
            tools: [{ type: 'web_search_20250305', name: 'web_search', input_schema: {} }],
          },
          'UNSUPPORTED_PARAMETER',
          /tools\[0\]/,
        ],
        [
          { model: 'acme/claude', max_tokens: 10, messages: hi, service_tier: 'auto' },
          'UNSUPPORTED_PARAMETER',
          /priority/,
        ],
        ['{"model": "acme/claude", ', 'INVALID_REQUEST', /JSON/],
      ];
      for (const [body, code, message] of cases) {
        const { status, error } = await anthropicError(await messages(env, user.key, body));
        assert.equal(status, 400, JSON.stringify(body));
        assert.equal(error.type, 'invalid_request_error');
        assert.equal(error.code, code);
        assert.match(error.message, message);
      }
      const large = await anthropicError(
        await messages(env, user.key, {
          model: 'acme/claude',
          max_tokens: 10,
          messages: [{ role: 'user', content: 'x'.repeat(5 * 2 ** 20) }],
        }),
      );
      assert.equal(large.status, 413);
      assert.equal(large.error.type, 'request_too_large');
      assert.equal(large.error.code, 'PAYLOAD_TOO_LARGE');
      assert.equal(large.error.limit, 4 * 2 ** 20);
      const unknown = await anthropicError(
        await messages(env, user.key, { model: 'acme/nope', max_tokens: 10, messages: hi }),
      );
      assert.equal(unknown.status, 404);
      assert.equal(unknown.error.type, 'not_found_error');
      assert.equal(unknown.error.code, 'MODEL_NOT_FOUND');
      assert.equal((await wallet(env, user)).balance, before);
    });

    it('an upstream failure before output is a 502 api_error in the envelope, nothing charged', async () => {
      const poorer = await fundedUser(env, 100);
      for (const stream of [false, true]) {
        const { status, error } = await anthropicError(
          await messages(env, poorer.key, { model: 'acme/gpt-down', max_tokens: 10, stream, messages: hi }),
        );
        assert.equal(status, 502);
        assert.equal(error.type, 'api_error');
        assert.equal(error.code, 'UPSTREAM_ERROR');
      }
      assert.equal((await settled(env, poorer)).balance, 100 * CREDIT);
    });

    it("a stream renders Anthropic's events exactly, with event: lines; an Anthropic upstream's own sequence is relayed as it came", async () => {
      // The mock's Anthropic stream sends no ping; translated streams send one after message_start, as Anthropic does.
      for (const [model, ping] of [
        ['acme/claude', []],
        ['acme/gpt', ['ping']],
      ] as const) {
        const response = await messages(env, user.key, { model, max_tokens: 10, stream: true, messages: hi });
        assert.equal(response.status, 200);
        assert.match(response.headers.get('content-type')!, /^text\/event-stream/);
        const frames = await readSseFrames(response);
        assert.ok(
          frames.every((f) => f.event === f.data.type),
          model,
        );
        assert.deepEqual(
          frames.map((f) => f.event),
          [
            'message_start',
            ...ping,
            'content_block_start',
            ...Array(4).fill('content_block_delta'),
            'content_block_stop',
            'message_delta',
            'message_stop',
          ],
          model,
        );
        assert.equal(frames[0].data.message.model, model);
        // Anthropic's message_start holds the input count (LangChain reads it only there): the upstream's own
        // from an Anthropic upstream, the gateway's count of the prompt from another; message_delta has the billed one.
        assert.ok(frames[0].data.message.usage.input_tokens > 0, JSON.stringify(frames[0].data.message.usage));
        assert.equal(
          frames
            .filter((f) => f.event === 'content_block_delta')
            .map((f) => f.data.delta.text)
            .join(''),
          'alpha beta gamma delta',
        );
        assert.deepEqual(frames.at(-2)!.data, {
          type: 'message_delta',
          delta: { stop_reason: 'end_turn', stop_sequence: null },
          usage: {
            input_tokens: 11,
            output_tokens: 4,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            cost: 4,
          },
        });
      }
    });

    it('a stream cut by the client is charged for what was produced and stops the upstream, on either upstream', async () => {
      for (const model of ['acme/claude-stall', 'acme/gpt-stall']) {
        const payer = await fundedUser(env, 1000);
        const requestsBefore = mock.requests.length;
        const controller = new AbortController();
        const response = await messages(
          env,
          payer.key,
          { model, max_tokens: 50, stream: true, messages: hi },
          { signal: controller.signal },
        );
        assert.equal(response.status, 200);
        const reader = response.body!.getReader();
        let text = '';
        while ((text.match(/"text_delta"/g) ?? []).length < 2)
          text += new TextDecoder().decode((await reader.read()).value);
        controller.abort();
        await mock.settled(requestsBefore + 1);
        assert.equal(mock.requests.at(-1)!.aborted, true, 'the upstream connection was closed');
        assert.equal((await settled(env, payer)).balance, (1000 - 2) * CREDIT, model); // "alpha beta": 2 tokens at 1 credit
        const [record] = await usageOf(env, payer);
        assert.equal(record.status, 'client_aborted');
      }
    });

    it("a stream cut short (the client gone, as Claude Code's Esc, or the upstream broken) is charged message_start's input counts, cache reads and writes at their prices", async () => {
      // Anthropic tells the input, cache reads and writes in message_start; only the output waits for message_delta.
      const cached = {
        input_tokens: 11,
        cache_creation_input_tokens: 100,
        cache_read_input_tokens: 200,
        output_tokens: 4,
      };
      const pricing = { prompt: 10, completion: 20, cacheRead: 1, cacheWrite: 13 };
      await putModel(env, 'acme/claude-stall-cached', {
        provider: 'anthropic',
        upstreamModel: 'stall-2',
        pricing,
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/claude-cut-cached', {
        provider: 'anthropic',
        upstreamModel: 'cut-2',
        pricing,
        maxOutputTokens: 100,
      });
      // 11 × 10 + 100 × 13 + 200 × 1 micro-credits of input, and "alpha beta" (2 tokens) × 20 of output.
      const charge = 11 * 10 + 100 * 13 + 200 * 1 + 2 * 20;
      for (const model of ['acme/claude-stall-cached', 'acme/claude-cut-cached']) {
        const payer = await fundedUser(env, 1);
        const controller = new AbortController();
        // A prompt of ~400 tokens, so that the hold covers the 311 input tokens the mock reports.
        const prompt = [{ role: 'user', content: 'word '.repeat(400) }];
        const body = { model, max_tokens: 50, stream: true, messages: prompt, metadata: { mock_usage: cached } };
        const response = await messages(env, payer.key, body, { signal: controller.signal });
        assert.equal(response.status, 200);
        const reader = response.body!.getReader();
        let text = '';
        while ((text.match(/"text_delta"/g) ?? []).length < 2)
          text += new TextDecoder().decode((await reader.read()).value);
        if (model === 'acme/claude-stall-cached') controller.abort();
        else while (!(await reader.read()).done);
        assert.equal((await settled(env, payer)).balance, CREDIT - charge, model);
        const [record] = await usageOf(env, payer);
        assert.equal(record.status, model === 'acme/claude-stall-cached' ? 'client_aborted' : 'upstream_error');
        assert.equal(Number(record.prompt_tokens), 311, model);
      }
    });

    it('a stream the upstream breaks after output ends with an event: error frame in the envelope, charged for what was produced', async () => {
      for (const model of ['acme/claude-cut', 'acme/gpt-cut']) {
        const payer = await fundedUser(env, 1000);
        const response = await messages(env, payer.key, { model, max_tokens: 50, stream: true, messages: hi });
        const frames = await readSseFrames(response);
        assert.deepEqual(frames.at(-1)!.event, 'error', model);
        assert.equal(frames.at(-1)!.data.type, 'error');
        assert.equal(frames.at(-1)!.data.error.type, 'api_error');
        assert.equal(frames.at(-1)!.data.error.code, 'UPSTREAM_ERROR');
        assert.equal((await settled(env, payer)).balance, (1000 - 2) * CREDIT, model);
        const [record] = await usageOf(env, payer);
        assert.equal(record.status, 'upstream_error');
      }
    });

    it("402 and 429 carry the contract's fields inside the Anthropic envelope, and the Tollgate SDK classifies them", async () => {
      const poor = await fundedUser(env, 0.5);
      const read = (r: Response) =>
        r.text().then((text) => ({ status: r.status, text, retry: r.headers.get('x-should-retry') }));
      const refused = await messages(env, poor.key, { model: 'acme/claude', max_tokens: 1, messages: hi }).then(read);
      assert.equal(refused.status, 402);
      assert.equal(refused.retry, 'false');
      const credits = JSON.parse(refused.text);
      assert.deepEqual(credits.error, {
        type: 'billing_error',
        code: 'INSUFFICIENT_CREDITS',
        message: credits.error.message,
        available: 0.5,
        required: 1,
      });
      const classified = classifyResponse(refused.status, refused.text);
      assert.ok(isInsufficientCreditsError(classified));
      assert.equal(classified.restriction.available, 0.5);
      assert.equal(classified.restriction.required, 1);

      const limited = await env.dashboard(user.session, 'POST', '/api/user/api-keys', {
        name: 'limited',
        permissions: ['ai:chat'],
        limit: 2,
        limitPeriod: 'daily',
      });
      const over = await messages(env, limited.body.apiKey.key, {
        model: 'acme/claude',
        max_tokens: 3,
        stream: true,
        messages: hi,
      }).then(read);
      assert.equal(over.status, 429);
      // The Anthropic SDK (and Claude Code) would retry a 429 with backoff; a spending limit stays exceeded until it resets.
      assert.equal(over.retry, 'false');
      const limit = JSON.parse(over.text).error;
      assert.equal(limit.type, 'rate_limit_error');
      assert.equal(limit.code, 'SPENDING_LIMIT_EXCEEDED');
      assert.deepEqual([limit.limitType, limit.limit, limit.current, limit.requested], ['daily', 2, 0, 3]);
      assert.match(limit.resetsAt, /T00:00:00\.000Z$/);
      const spending = classifyResponse(over.status, over.text);
      assert.ok(isSpendingLimitError(spending));
      assert.equal(spending.restriction.limit, 2);
    });

    it('thinking replayed in the conversation is held for (Anthropic bills it as input): a wallet that covers the rest is refused', async () => {
      // One credit per input token, output free: the hold is the counted prompt (with its margin).
      await putModel(env, 'acme/claude-input', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing: { prompt: 1_000_000, completion: 0 },
        maxOutputTokens: 100,
      });
      const payer = await fundedUser(env, 100);
      const thinking = Array.from({ length: 300 }, (_, i) => `step${i}`).join(' ');
      const conversation = [
        { role: 'user', content: 'hi' },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking, signature: 'sig' },
            { type: 'text', text: 'Hello.' },
          ],
        },
        { role: 'user', content: 'again' },
      ];
      const count = async (turns: unknown[]) => {
        const response = await messages(
          env,
          payer.key,
          { model: 'acme/claude-input', messages: turns },
          { path: '/api/v1/messages/count_tokens' },
        );
        return ((await response.json()) as { input_tokens: number }).input_tokens;
      };
      const withThinking = await count(conversation);
      const without = await count([
        conversation[0],
        { ...conversation[1], content: [conversation[1].content[1]] },
        conversation[2],
      ]);
      assert.ok(withThinking - without >= 300, `${withThinking} vs ${without}`);
      // The prompt without the thinking fits 100 credits; with it, the hold does not.
      assert.ok(without * 1.25 + 16 < 100);
      const { status, error } = await anthropicError(
        await messages(env, payer.key, { model: 'acme/claude-input', max_tokens: 10, messages: conversation }),
      );
      assert.equal(status, 402);
      assert.ok(error.required >= withThinking, `${error.required} < ${withThinking}`);
      assert.equal((await wallet(env, payer)).balance, 100 * CREDIT);
    });

    it("count_tokens answers { input_tokens } by our tokenizer, images at the model's budget, without charging; 404 for an unknown model", async () => {
      const before = (await settled(env, user)).balance;
      await putModel(env, 'acme/vision', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing: perToken,
        maxOutputTokens: 100,
        imageTokens: 1000,
      });
      const count = async (body: unknown) => messages(env, user.key, body, { path: '/api/v1/messages/count_tokens' });
      const plain = await count({ model: 'acme/vision', messages: hi });
      assert.equal(plain.status, 200);
      const { input_tokens: tokens } = (await plain.json()) as any;
      assert.ok(Number.isInteger(tokens) && tokens > 0);
      const image = { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } };
      const withImage = (await (
        await count({
          model: 'acme/vision',
          messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }, image] }],
        })
      ).json()) as any;
      assert.equal(withImage.input_tokens, tokens + 1000);
      const unknown = await anthropicError(await count({ model: 'acme/nope', messages: hi }));
      assert.equal(unknown.status, 404);
      assert.equal((await wallet(env, user)).balance, before);
    });

    it('both routes are in the OpenAPI document, with Bearer and x-api-key security', async () => {
      const document = (await env.request('GET', '/api/openapi.json')).body;
      assert.deepEqual(document.components.securitySchemes.apiKey, {
        type: 'apiKey',
        in: 'header',
        name: 'x-api-key',
        description: document.components.securitySchemes.apiKey.description,
      });
      for (const path of ['/api/v1/messages', '/api/v1/messages/count_tokens']) {
        const operation = document.paths[path].post;
        assert.deepEqual(
          operation.security,
          [
            { bearer: [] },
            { oauth2: ['ai:chat'] },
            { oauth2: ['ai:completions'] },
            { apiKey: [] },
            { session: [], csrf: [] },
          ],
          path,
        );
        assert.deepEqual(operation.tags, ['ai']);
        assert.ok(
          operation.summary && operation.requestBody && operation.responses['200'] && operation.responses['402'],
          path,
        );
      }
    });

    it('after all of it the ledger verifies', async () => {
      const report = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(report.body.ok, true, report.text);
    });
  },
  { config: { ANTHROPIC_BASE_URL: mock.url, providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }] } },
);
