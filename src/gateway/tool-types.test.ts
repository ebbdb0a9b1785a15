import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, holdsOf, putModel, settled, type FundedUser } from './testing.ts';

/**
 * Tools no upstream would run as the client meant, through the official SDKs (openai 7, @anthropic-ai/sdk 1.14) on
 * both upstream wires, each refused for its own reason before anything is held or sent: a chat function tool
 * without its name (left out unread on the way to Anthropic, refused by OpenAI only after the hold), a chat
 * tool_choice naming none of the tools or "required" with none; a Responses custom tool or tool_choice (the
 * client's own, with free-form input) and each of OpenAI's built-in tools; each Messages tool type of the SDK's
 * `ToolUnion` other than a custom tool (server tools, Anthropic-defined client tools) and a type nobody knows (and,
 * already refused, a Messages tool_choice naming no tool).
 */
const mock = await startMockUpstream();
after(() => mock.close());

const pricing = { prompt: 1, completion: 2 };
/** acme/gpt speaks OpenAI chat (a chat call goes natively), anthropic/claude Anthropic Messages. */
const MODELS = ['acme/gpt', 'anthropic/claude'] as const;
const schema = { type: 'object' as const, properties: { city: { type: 'string' as const } }, required: ['city'] };
const question = { role: 'user' as const, content: 'Weather in Paris?' };

/**
 * OpenAI's built-in tool types, one object each as a client sends it. `satisfies` keeps the list whole: a type the
 * SDK adds to its `Tool` union fails the type check until it is listed here (and in the gateway's list).
 */
const OPENAI_BUILT_IN_TOOLS = {
  file_search: { vector_store_ids: ['vs_1'] },
  computer: {},
  computer_use_preview: { display_height: 768, display_width: 1024, environment: 'browser' },
  web_search: {},
  web_search_2025_08_26: {},
  web_search_preview: {},
  web_search_preview_2025_03_11: {},
  mcp: { server_label: 'crm', server_url: 'https://mcp.example.com' },
  code_interpreter: { container: { type: 'auto' } },
  programmatic_tool_calling: {},
  image_generation: {},
  local_shell: {},
  shell: {},
  tool_search: {},
  apply_patch: {},
} satisfies Record<Exclude<OpenAI.Responses.Tool['type'], 'function' | 'custom' | 'namespace'>, object>;

/**
 * Every Messages tool type of the SDK's `ToolUnion` other than a custom tool, with its fixed name (a toolset has
 * none) and the kind of refusal it gets; `satisfies` keeps the list whole as above.
 */
const ANTHROPIC_TOOLS = {
  bash_20250124: ['bash', 'client'],
  code_execution_20250522: ['code_execution', 'server'],
  code_execution_20250825: ['code_execution', 'server'],
  code_execution_20260120: ['code_execution', 'server'],
  code_execution_20260521: ['code_execution', 'server'],
  browser_toolset_20260801: [null, 'client'],
  memory_20250818: ['memory', 'client'],
  computer_toolset_20260801: [null, 'client'],
  text_editor_20250124: ['str_replace_editor', 'client'],
  text_editor_20250429: ['str_replace_based_edit_tool', 'client'],
  text_editor_20250728: ['str_replace_based_edit_tool', 'client'],
  web_search_20250305: ['web_search', 'search'],
  web_fetch_20250910: ['web_fetch', 'server'],
  web_search_20260209: ['web_search', 'filtering'],
  web_fetch_20260209: ['web_fetch', 'server'],
  web_fetch_20260309: ['web_fetch', 'server'],
  web_search_20260318: ['web_search', 'filtering'],
  web_fetch_20260318: ['web_fetch', 'server'],
  tool_search_tool_bm25_20251119: ['tool_search_tool_bm25', 'server'],
  tool_search_tool_bm25: ['tool_search_tool_bm25', 'server'],
  tool_search_tool_regex_20251119: ['tool_search_tool_regex', 'server'],
  tool_search_tool_regex: ['tool_search_tool_regex', 'server'],
} satisfies Record<Exclude<Anthropic.ToolUnion['type'], 'custom' | null | undefined>, [string | null, Kind]>;

/**
 * The kinds of Messages refusal: a server tool, an Anthropic-defined client tool, Anthropic's web search on a model
 * that cannot take it (acme/gpt is not Anthropic's, anthropic/claude prices no search: `web-search.test.ts` has the
 * model that takes it), and the later web search versions, which run code execution.
 */
type Kind = 'server' | 'client' | 'search' | 'filtering';

/** What each kind of Messages refusal says the tool is. */
const ANTHROPIC_KIND: Record<Kind, RegExp> = {
  server: /is a server tool, which Anthropic runs/,
  client: /is an Anthropic-defined client tool/,
  search:
    /runs only on a model of the anthropic provider|has no web search price.*the operator sets pricing\.webSearch/,
  filtering: /filters its results by running Anthropic's code execution/,
};

const openai = (env: TestEnv, user: FundedUser) =>
  new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
const anthropic = (env: TestEnv, user: FundedUser) =>
  new Anthropic({ apiKey: user.key, baseURL: `${env.baseUrl}/api`, maxRetries: 0 });

/**
 * Asserts that `call` is refused with 400 `code` naming `param` (in `param` and in the message, which also matches
 * `says`), that nothing reached the upstream, and that nothing was held or charged.
 */
async function assertRefused(
  env: TestEnv,
  user: FundedUser,
  [code, param, ...says]: [string, string, ...RegExp[]],
  call: () => Promise<unknown>,
) {
  const sent = mock.requests.length;
  const balance = (await settled(env, user)).balance;
  const holds = (await holdsOf(env, user)).length;
  await assert.rejects(call, (error: any) => {
    assert.equal(error?.status, 400, String(error));
    const body = error.error?.error ?? error.error;
    const shown = JSON.stringify(error.error);
    assert.equal(body?.code, code, shown);
    assert.equal(body?.param, param, shown);
    for (const pattern of [new RegExp(param.replace(/[[\].]/g, '\\$&')), ...says])
      assert.match(String(body?.message), pattern);
    return true;
  });
  assert.equal(mock.requests.length, sent, 'nothing reached the upstream');
  assert.equal((await holdsOf(env, user)).length, holds, 'nothing was held');
  assert.equal((await settled(env, user)).balance, balance, 'nothing was charged');
}

describeEachDatabase(
  'tools refused for their own reason: nameless functions, custom and built-in Responses tools, Messages tool types',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/gpt', { provider: 'mock', upstreamModel: 'gpt', pricing, maxOutputTokens: 100 });
      await putModel(env, 'anthropic/claude', {
        provider: 'anthropic',
        upstreamModel: 'claude',
        pricing,
        maxOutputTokens: 100,
      });
    });

    for (const model of MODELS) {
      it(`chat on ${model}: a function tool or tool choice without its function or its name, or with an empty name, is a 400 INVALID_REQUEST naming it, nothing held or sent`, async () => {
        const user = await fundedUser(env, 1);
        const client = openai(env, user);
        const weather = { type: 'function' as const, function: { name: 'weather', parameters: schema } };
        const refused: Array<[string, Record<string, unknown>]> = [
          ['tools[1].function.name', { tools: [weather, { type: 'function', function: { parameters: schema } }] }],
          ['tools[0].function.name', { tools: [{ type: 'function', function: { name: '', parameters: schema } }] }],
          ['tools[0].function.name', { tools: [{ type: 'function', function: { name: 7, parameters: schema } }] }],
          ['tools[0].function', { tools: [{ type: 'function' }] }],
          ['tools[0].custom.name', { tools: [{ type: 'custom', custom: { description: 'SQL' } }] }],
          ['tools[1]', { tools: [weather, 'weather'] }],
          ['tools', { tools: weather }],
          ['tool_choice.function.name', { tools: [weather], tool_choice: { type: 'function', function: {} } }],
          ['tool_choice.function', { tools: [weather], tool_choice: { type: 'function' } }],
        ];
        for (const [param, fields] of refused) {
          for (const stream of [false, true]) {
            await assertRefused(env, user, ['INVALID_REQUEST', param], async () => {
              const answer = await client.chat.completions.create({
                model,
                messages: [question],
                ...fields,
                stream,
              } as any);
              if (stream) for await (const _ of answer as any);
            });
          }
        }
        // A named function, and a choice naming it, still reach the upstream.
        const choice = { type: 'function' as const, function: { name: 'weather' } };
        await client.chat.completions.create({ model, messages: [question], tools: [weather], tool_choice: choice });
        assert.equal(mock.requests.at(-1)!.body.tools.length, 1);
      });

      it(`chat on ${model}: a function tool_choice naming none of the tools, or "required" with no tools, is a 400 INVALID_REQUEST naming it and the tools' names, nothing held or sent`, async () => {
        const user = await fundedUser(env, 1);
        const client = openai(env, user);
        const weather = { type: 'function' as const, function: { name: 'weather', parameters: schema } };
        const nope = { type: 'function' as const, function: { name: 'nope' } };
        const refused: Array<[string, RegExp, Record<string, unknown>]> = [
          [
            'tool_choice.function.name',
            /"nope", which is not among the tools \(the tools are named "weather"\)/,
            { tools: [weather], tool_choice: nope },
          ],
          [
            'tool_choice.function.name',
            /"nope", which is not among the tools \(the request has no tools\)/,
            { tool_choice: nope },
          ],
          ['tool_choice', /"required" needs tools, and the request has none/, { tool_choice: 'required' }],
          ['tool_choice', /"required" needs tools/, { tools: [], tool_choice: 'required' }],
        ];
        for (const [param, says, fields] of refused) {
          for (const stream of [false, true]) {
            await assertRefused(env, user, ['INVALID_REQUEST', param, says], async () => {
              const answer = await client.chat.completions.create({
                model,
                messages: [question],
                ...fields,
                stream,
              } as any);
              if (stream) for await (const _ of answer as any);
            });
          }
        }
        // "required" with a tool still reaches the upstream.
        await client.chat.completions.create({
          model,
          messages: [question],
          tools: [weather],
          tool_choice: 'required',
        });
        assert.equal(mock.requests.at(-1)!.body.tools.length, 1);
      });

      it(`responses.create on ${model}: a custom tool_choice is refused as the client's tool with free-form input, saying to declare a function; nothing held or sent`, async () => {
        const user = await fundedUser(env, 1);
        const client = openai(env, user);
        const weather = { type: 'function' as const, name: 'weather', parameters: schema, strict: false };
        const says = [/custom tool is one your client runs/, /free-form/, /"function" tool with "parameters"/];
        await assertRefused(env, user, ['UNSUPPORTED_PARAMETER', 'tool_choice.type', ...says], () =>
          client.responses.create({
            model,
            input: 'Weather?',
            tools: [weather],
            tool_choice: { type: 'custom', name: 'sql' },
          }),
        );
      });

      it(`messages.create on ${model}: a tool_choice naming none of the tools is a 400 INVALID_REQUEST by tool_choice.name, nothing held or sent`, async () => {
        const user = await fundedUser(env, 1);
        const client = anthropic(env, user);
        const weather: Anthropic.Tool = { name: 'weather', input_schema: schema };
        const sent = mock.requests.length;
        for (const tools of [[weather], undefined]) {
          await assert.rejects(
            client.messages.create({
              model,
              max_tokens: 20,
              messages: [question],
              tools,
              tool_choice: { type: 'tool', name: 'nope' },
            }),
            (error: any) => {
              assert.equal(error?.status, 400, String(error));
              assert.equal(
                error.error?.error?.param ?? error.error?.param,
                'tool_choice.name',
                JSON.stringify(error.error),
              );
              return true;
            },
          );
        }
        assert.equal(mock.requests.length, sent, 'nothing reached the upstream');
        assert.equal((await holdsOf(env, user)).length, 0, 'nothing was held');
      });

      it(`responses.create on ${model}: a custom tool is refused as the client's tool with free-form input, by its path, saying to declare a function; nothing held or sent`, async () => {
        const user = await fundedUser(env, 1);
        const client = openai(env, user);
        const weather = { type: 'function' as const, name: 'weather', parameters: schema, strict: false };
        const sql = { type: 'custom' as const, name: 'sql', description: 'Runs SQL' };
        const says = [/custom tool is one your client runs/, /free-form/, /"function" tool with "parameters"/];
        await assertRefused(env, user, ['UNSUPPORTED_PARAMETER', 'tools[1].type', ...says], () =>
          client.responses.create({ model, input: 'Weather?', tools: [weather, sql] }),
        );
        await assertRefused(env, user, ['UNSUPPORTED_PARAMETER', 'tools[0].tools[1].type', ...says], () =>
          client.responses.create({
            model,
            input: 'Weather?',
            tools: [{ type: 'namespace', name: 'crm', description: 'CRM', tools: [weather, sql] }],
          }),
        );
        await assert.rejects(
          client.responses.create({ model, input: 'Weather?', tools: [sql] }),
          (error: any) => !/built-in/i.test(error.error?.message ?? error.message),
        );
      });

      it(`responses.create on ${model}: each of OpenAI's built-in tool types is refused as a built-in tool, by its path and naming it; an unknown type as unknown; nothing held or sent`, async () => {
        const user = await fundedUser(env, 1);
        const client = openai(env, user);
        const weather = { type: 'function' as const, name: 'weather', parameters: schema, strict: false };
        for (const [type, fields] of Object.entries(OPENAI_BUILT_IN_TOOLS)) {
          await assertRefused(
            env,
            user,
            [
              'UNSUPPORTED_PARAMETER',
              'tools[1].type',
              new RegExp(`"${type}" is refused: built-in tools are not supported`),
            ],
            () => client.responses.create({ model, input: 'Hi', tools: [weather, { type, ...fields } as any] }),
          );
        }
        await assertRefused(
          env,
          user,
          ['UNSUPPORTED_PARAMETER', 'tools[0].type', /"frobnicate" is not a tool type Tollgate knows/],
          () => client.responses.create({ model, input: 'Hi', tools: [{ type: 'frobnicate' } as any] }),
        );
      });

      it(`messages.create on ${model}: each tool type of the SDK's ToolUnion but custom is refused by its path, naming it as a server or an Anthropic-defined client tool; an unknown type as unknown; custom tools need a name and input_schema; nothing held or sent`, async () => {
        const user = await fundedUser(env, 1);
        const client = anthropic(env, user);
        const weather: Anthropic.Tool = { name: 'weather', input_schema: schema };
        const call = (tools: unknown[]) => () =>
          client.messages.create({ model, max_tokens: 20, messages: [question], tools: tools as any });
        for (const [type, [name, kind]] of Object.entries(ANTHROPIC_TOOLS)) {
          const tool = { type, ...(name ? { name } : {}) };
          const says = [new RegExp(`"${type}"`), ANTHROPIC_KIND[kind]];
          await assertRefused(env, user, ['UNSUPPORTED_PARAMETER', 'tools[1].type', ...says], call([weather, tool]));
        }
        await assertRefused(
          env,
          user,
          ['UNSUPPORTED_PARAMETER', 'tools[0].type', /"frobnicate_20990101" is not a tool type Tollgate knows/],
          call([{ type: 'frobnicate_20990101', name: 'f', input_schema: schema }]),
        );
        await assertRefused(env, user, ['INVALID_REQUEST', 'tools[0].input_schema'], call([{ name: 'weather' }]));
        await assertRefused(env, user, ['INVALID_REQUEST', 'tools[0].name'], call([{ input_schema: schema }]));
      });
    }
  },
  { config: { ANTHROPIC_BASE_URL: mock.url, providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }] } },
);
