import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, holdsOf, putModel, settled, type FundedUser } from './testing.ts';

/**
 * The fields inside tools and tool choices, through the official SDKs (openai 7, @anthropic-ai/sdk 1.14), on both
 * upstream wires: a field the translation to the other vendor's wire carries (`strict`) reaches the upstream; one
 * it cannot carry is a 400 `UNSUPPORTED_PARAMETER` whose `param` is its path, before anything is held or sent; one
 * that changes nothing at the value sent passes; a same-wire call keeps its body as sent, but a tool the provider
 * runs itself at a per-use price (OpenRouter's server tools) is refused on that wire too.
 */
const mock = await startMockUpstream();
after(() => mock.close());

const pricing = { prompt: 1, completion: 2 };
/** acme/gpt speaks OpenAI chat (a chat call goes natively), anthropic/claude Anthropic Messages. */
const MODELS = ['acme/gpt', 'anthropic/claude'] as const;
const schema = {
  type: 'object' as const,
  properties: { city: { type: 'string' as const } },
  required: ['city'],
  additionalProperties: false as const,
};
const question = { role: 'user' as const, content: 'Weather in Paris?' };

const openai = (env: TestEnv, user: FundedUser) =>
  new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
const anthropic = (env: TestEnv, user: FundedUser) =>
  new Anthropic({ apiKey: user.key, baseURL: `${env.baseUrl}/api`, maxRetries: 0 });

/** The body the upstream received last. */
const lastSent = () => mock.requests.at(-1)!.body;

/**
 * Asserts that `call` is refused with 400 UNSUPPORTED_PARAMETER naming `param`, that nothing reached the
 * upstream, and that nothing was held or charged.
 */
async function assertRefused(env: TestEnv, user: FundedUser, param: string, call: () => Promise<unknown>) {
  const sent = mock.requests.length;
  const before = (await settled(env, user)).balance;
  const holds = (await holdsOf(env, user)).length;
  await assert.rejects(call, (error: any) => {
    assert.equal(error?.status, 400, String(error));
    const body = error.error?.error ?? error.error;
    assert.equal(body?.code, 'UNSUPPORTED_PARAMETER', JSON.stringify(error.error));
    assert.equal(body?.param, param, JSON.stringify(error.error));
    assert.match(String(body?.message), new RegExp(param.replace(/[[\].]/g, '\\$&')));
    return true;
  });
  assert.equal(mock.requests.length, sent, 'nothing reached the upstream');
  assert.equal((await holdsOf(env, user)).length, holds, 'nothing was held');
  assert.equal((await settled(env, user)).balance, before, 'nothing was charged');
}

describeEachDatabase(
  'fields inside tools and tool choices: translated, harmless, or refused by name',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/gpt', { provider: 'mock', upstreamModel: 'gpt', pricing, maxOutputTokens: 100 });
      await putModel(env, 'openrouter/gpt', {
        provider: 'openrouter',
        upstreamModel: 'gpt',
        pricing,
        maxOutputTokens: 100,
      });
      await putModel(env, 'anthropic/claude', {
        provider: 'anthropic',
        upstreamModel: 'claude',
        pricing,
        maxOutputTokens: 100,
      });
    });

    it("chat on an Anthropic model: a function tool with strict: true reaches Anthropic as the tool's strict", async () => {
      const user = await fundedUser(env, 1);
      await openai(env, user).chat.completions.create({
        model: 'anthropic/claude',
        messages: [question],
        tools: [{ type: 'function', function: { name: 'weather', parameters: schema, strict: true } }],
      });
      assert.equal(mock.requests.at(-1)!.path, '/v1/messages');
      assert.deepEqual(lastSent().tools, [{ name: 'weather', input_schema: schema, strict: true }]);
    });

    it('chat on an Anthropic model: tool fields and tool choices the translation cannot carry are refused by path, nothing held or sent', async () => {
      const user = await fundedUser(env, 1);
      const client = openai(env, user);
      const weather = { type: 'function' as const, function: { name: 'weather', parameters: schema } };
      const grammar = {
        type: 'custom' as const,
        custom: {
          name: 'sql',
          format: { type: 'grammar' as const, grammar: { syntax: 'lark' as const, definition: 'start: "x"' } },
        },
      };
      const refused: Array<[string, Partial<OpenAI.Chat.ChatCompletionCreateParamsNonStreaming>]> = [
        ['tools[1].type', { tools: [weather, grammar] }],
        [
          'tools[0].function.defer_loading',
          { tools: [{ ...weather, function: { ...weather.function, defer_loading: true } } as any] },
        ],
        ['tools[0].cache_control', { tools: [{ ...weather, cache_control: { type: 'ephemeral' } } as any] }],
        [
          'tool_choice',
          {
            tools: [weather],
            tool_choice: {
              type: 'allowed_tools',
              allowed_tools: { mode: 'required', tools: [{ type: 'function', function: { name: 'weather' } }] },
            },
          },
        ],
        ['tool_choice.type', { tools: [weather], tool_choice: { type: 'custom', custom: { name: 'weather' } } }],
      ];
      for (const [param, fields] of refused) {
        for (const stream of [false, true]) {
          await assertRefused(env, user, param, async () => {
            const answer = await client.chat.completions.create({
              model: 'anthropic/claude',
              messages: [question],
              ...fields,
              stream,
            } as any);
            if (stream) for await (const _ of answer as any);
          });
        }
      }
      // The same body reaches an OpenAI-compatible upstream as sent: the same wire carries every field.
      const choice = refused[3]![1];
      await client.chat.completions.create({ model: 'acme/gpt', messages: [question], ...choice } as any);
      assert.deepEqual(lastSent().tool_choice, choice.tool_choice);
    });

    for (const model of ['openrouter/gpt', 'acme/gpt']) {
      it(`chat on ${model}: a tool the provider runs itself (OpenRouter's openrouter:web_search, billed per search) is refused by path, nothing held or sent`, async () => {
        const user = await fundedUser(env, 1);
        const client = openai(env, user);
        const weather = { type: 'function' as const, function: { name: 'weather', parameters: schema } };
        await assertRefused(env, user, 'tools[1].type', () =>
          client.chat.completions.create({
            model,
            messages: [question],
            tools: [weather, { type: 'openrouter:web_search', parameters: { max_results: 5 } } as any],
          }),
        );
        await assertRefused(env, user, 'tool_choice.type', () =>
          client.chat.completions.create({
            model,
            messages: [question],
            tools: [weather],
            tool_choice: { type: 'openrouter:web_search' } as any,
          }),
        );
      });
    }

    for (const model of MODELS) {
      it(`responses.create on ${model}: a function tool with strict: true reaches the upstream as its strict`, async () => {
        const user = await fundedUser(env, 1);
        await openai(env, user).responses.create({
          model,
          input: 'Weather in Paris?',
          tools: [{ type: 'function', name: 'weather', parameters: schema, strict: true }],
        });
        const tool = lastSent().tools[0];
        assert.equal(model === 'acme/gpt' ? tool.function.strict : tool.strict, true, JSON.stringify(tool));
      });

      it(`responses.create on ${model}: function tool fields that no upstream wire carries are refused by path, nothing held or sent; their defaults pass`, async () => {
        const user = await fundedUser(env, 1);
        const client = openai(env, user);
        const weather = { type: 'function' as const, name: 'weather', parameters: schema, strict: false };
        const refused: Array<[string, Record<string, unknown>]> = [
          ['tools[0].defer_loading', { tools: [{ ...weather, defer_loading: true }] }],
          ['tools[0].allowed_callers', { tools: [{ ...weather, allowed_callers: ['programmatic'] }] }],
          ['tools[0].async', { tools: [{ ...weather, async: true }] }],
          ['tools[0].output_schema', { tools: [{ ...weather, output_schema: { type: 'string' } }] }],
          ['tools[0].colour', { tools: [{ ...weather, colour: 'red' }] }],
          [
            'tools[0].tools[0].defer_loading',
            {
              tools: [
                {
                  type: 'namespace',
                  name: 'crm',
                  description: 'CRM',
                  tools: [{ type: 'function', name: 'find', defer_loading: true }],
                },
              ],
            },
          ],
          [
            'tool_choice.namespace',
            { tools: [weather], tool_choice: { type: 'function', name: 'weather', namespace: 'crm' } },
          ],
        ];
        for (const [param, fields] of refused)
          await assertRefused(env, user, param, () =>
            client.responses.create({ model, input: 'Weather?', ...fields } as any),
          );

        await client.responses.create({
          model,
          input: 'Weather?',
          tools: [{ ...weather, defer_loading: false, allowed_callers: ['direct'], async: false, output_schema: null }],
        });
        const tool = lastSent().tools[0];
        assert.deepEqual(
          Object.keys(model === 'acme/gpt' ? tool.function : tool).sort(),
          model === 'acme/gpt' ? ['name', 'parameters'] : ['input_schema', 'name'],
        );
      });

      it(`messages.create on ${model}: defer_loading and allowed_callers beyond "direct" are refused by path (their tools are refused), nothing held or sent`, async () => {
        const user = await fundedUser(env, 1);
        const client = anthropic(env, user);
        const weather = { name: 'weather', input_schema: schema };
        const refused: Array<[string, Anthropic.Tool]> = [
          ['tools[0].defer_loading', { ...weather, defer_loading: true }],
          ['tools[0].allowed_callers', { ...weather, allowed_callers: ['direct', 'code_execution_20250825'] }],
        ];
        for (const [param, tool] of refused)
          await assertRefused(env, user, param, () =>
            client.messages.create({ model, max_tokens: 20, messages: [question], tools: [tool] }),
          );
      });
    }

    it("messages.create on an OpenAI-compatible model: strict reaches it as the function's strict; cache_control, eager_input_streaming and the defaults change nothing and are left out", async () => {
      const user = await fundedUser(env, 1);
      const client = anthropic(env, user);
      const tool: Anthropic.Tool = {
        name: 'weather',
        input_schema: schema,
        strict: true,
        cache_control: { type: 'ephemeral' },
        eager_input_streaming: true,
        defer_loading: false,
        allowed_callers: ['direct'],
      };
      await client.messages.create({ model: 'acme/gpt', max_tokens: 20, messages: [question], tools: [tool] });
      assert.deepEqual(lastSent().tools, [
        { type: 'function', function: { name: 'weather', parameters: schema, strict: true } },
      ]);
      // On an Anthropic model the client's own tool goes as sent.
      await client.messages.create({ model: 'anthropic/claude', max_tokens: 20, messages: [question], tools: [tool] });
      assert.deepEqual(lastSent().tools, [tool]);
    });
  },
  {
    config: {
      ANTHROPIC_BASE_URL: mock.url,
      OPENROUTER_BASE_URL: `${mock.url}/v1`,
      providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }],
    },
  },
);
