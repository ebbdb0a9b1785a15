import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { describeEachDatabase, type TestEnv } from '../../testing/harness.ts';
import { startMockUpstream } from '../../providers/testing/mock-upstream.ts';
import { fundedUser, holdsOf, putModel, settled, usageOf, wallet, type FundedUser } from '../../gateway/testing.ts';
import {
  SEARCH_ANSWER,
  SEARCH_BLOCKS,
  SEARCH_USAGE,
  SEARCHES,
  STALL_AFTER_SEARCH,
  startWebSearchUpstream,
} from './testing/web-search-upstream.ts';

/**
 * Anthropic's web search tool through `POST /api/v1/messages`, with @anthropic-ai/sdk as the client and an upstream
 * answering as Anthropic does (a search, its results, cited text, `server_tool_use.web_search_requests`).
 */
const upstream = await startWebSearchUpstream();
const mock = await startMockUpstream();
after(() => Promise.all([upstream.close(), mock.close()]));

/** Micro-credits per token (prompt, completion) and per search (0.01 credits). */
const PRICING = { prompt: 10, completion: 20, webSearch: 0.01 };
const SEARCH_PRICE = 10_000;
/** The configuration of this suite: 3 searches when the client says none, 4 at most, 1,000 input tokens held for each. */
const DEFAULT_USES = 3;
const MOST_USES = 4;
const TOKENS_PER_SEARCH = 1_000;
/** The upstream's report, priced: its tokens and its searches. */
const CHARGE = SEARCH_USAGE.input_tokens * 10 + SEARCH_USAGE.output_tokens * 20 + SEARCHES * SEARCH_PRICE;
const MAX_TOKENS = 500;

const webSearch = { type: 'web_search_20250305', name: 'web_search' } as const;
const question: Anthropic.MessageParam = { role: 'user', content: 'Weather in Paris today?' };

function sdk(env: TestEnv, user: FundedUser): Anthropic {
  return new Anthropic({ apiKey: user.key, baseURL: `${env.baseUrl}/api`, maxRetries: 0 });
}

/** What count_tokens answers for `body` (the prompt count the hold is sized on). */
async function counted(env: TestEnv, user: FundedUser, body: object): Promise<number> {
  const { max_tokens: _cap, stream: _stream, ...rest } = body as Record<string, unknown>;
  return (await sdk(env, user).messages.countTokens(rest as any)).input_tokens;
}

/**
 * The hold of a call with `uses` searches allowed, on this suite's prices: the counted prompt with the tokenizer
 * margin and the searches' input allowance at the input price, the output cap at the output price, each search's fee.
 */
function expectedHold(promptTokens: number, uses: number): number {
  const prompt = Math.ceil((promptTokens * 5) / 4) + 16 + uses * TOKENS_PER_SEARCH;
  return prompt * 10 + MAX_TOKENS * 20 + uses * SEARCH_PRICE;
}

async function charged(env: TestEnv, user: FundedUser, before: number): Promise<number> {
  return before - (await settled(env, user)).balance;
}

describeEachDatabase(
  "Anthropic's web search tool on the Messages route: held for, billed, replayed",
  (env) => {
    before(async () => {
      await putModel(env, 'acme/claude', { provider: 'anthropic', upstreamModel: 'claude-x', pricing: PRICING });
      await putModel(env, 'acme/claude-stall', {
        provider: 'anthropic',
        upstreamModel: STALL_AFTER_SEARCH,
        pricing: PRICING,
      });
      await putModel(env, 'acme/claude-unpriced', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing: { prompt: 10, completion: 20 },
      });
      await putModel(env, 'acme/gpt', { provider: 'mock', upstreamModel: 'gpt', pricing: PRICING });
    });

    it('messages.create with the tool and no max_uses: the upstream gets max_uses 3, the answer its search blocks and count, the wallet tokens + searches × price, held for 3 searches', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const body = { model: 'acme/claude', max_tokens: MAX_TOKENS, messages: [question], tools: [webSearch] };
      const message = await sdk(env, user).messages.create(body);
      assert.deepEqual(message.content, SEARCH_BLOCKS);
      assert.equal(message.usage.server_tool_use?.web_search_requests, SEARCHES);
      assert.equal((message.usage as any).cost, CHARGE / 1e6);
      assert.deepEqual(upstream.bodies.at(-1).tools, [{ ...webSearch, max_uses: DEFAULT_USES }]);
      assert.equal(await charged(env, user, start), CHARGE);
      assert.deepEqual(await holdsOf(env, user), [expectedHold(await counted(env, user, body), DEFAULT_USES)]);
      const [record] = await usageOf(env, user);
      assert.equal(record!.status, 'ok');
      assert.equal(Number(record!.cost), CHARGE);
      assert.equal(Number(record!.uncollected), 0);
      assert.equal(JSON.parse(String(record!.details)).webSearches, SEARCHES);
    });

    it('messages.stream with the tool: the hold covers max_uses searches while the call runs; the events carry the search blocks and citations, the last usage the searches; charged exactly', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const body = { model: 'acme/claude', max_tokens: MAX_TOKENS, messages: [question], tools: [webSearch] };
      const gate = upstream.gate();
      const stream = sdk(env, user).messages.stream(body);
      await gate.arrived;
      const held = await holdsOf(env, user);
      const running = await wallet(env, user);
      gate.release();
      const final = await stream.finalMessage();
      const hold = expectedHold(await counted(env, user, body), DEFAULT_USES);
      assert.deepEqual(held, [hold]);
      assert.equal(running.reserved, hold);
      assert.deepEqual(final.content, SEARCH_BLOCKS);
      assert.equal(final.usage.server_tool_use?.web_search_requests, SEARCHES);
      assert.equal(await charged(env, user, start), CHARGE);
      const [record] = await usageOf(env, user);
      assert.equal(Number(record!.cost), CHARGE);
      assert.equal(JSON.parse(String(record!.details)).webSearches, SEARCHES);
    });

    it('messages.stream abandoned after a search ran (its result arrived, then the first words): charged the input, the output produced and that search', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const stream = sdk(env, user).messages.stream({
        model: 'acme/claude-stall',
        max_tokens: MAX_TOKENS,
        messages: [question],
        tools: [webSearch],
      });
      const blocks: string[] = [];
      stream.on('streamEvent', (event) => {
        if (event.type === 'content_block_start') blocks.push(event.content_block.type);
      });
      await new Promise<void>((resolve) => stream.on('text', () => resolve()));
      stream.abort();
      await stream.done().catch(() => {});
      assert.deepEqual(blocks, ['server_tool_use', 'web_search_tool_result', 'text']);
      const [record] = await usageOf(env, user);
      assert.equal(record!.status, 'client_aborted');
      // Anthropic bills a search once it ran, whether or not its answer was read to the end.
      assert.equal(JSON.parse(String(record!.details)).webSearches, 1);
      const cost = SEARCH_USAGE.input_tokens * 10 + Number(record!.completion_tokens) * 20 + SEARCH_PRICE;
      assert.equal(Number(record!.cost), cost);
      assert.equal(await charged(env, user, start), cost);
    });

    it('a max_uses within the ceiling goes upstream as sent and is held for; one above it is lowered to the ceiling (4) and held for 4', async () => {
      const user = await fundedUser(env, 10);
      for (const [asked, sent] of [
        [2, 2],
        [9, MOST_USES],
      ] as const) {
        const tool = { ...webSearch, max_uses: asked, allowed_domains: ['example.com'] };
        const body: Anthropic.MessageCreateParamsNonStreaming = {
          model: 'acme/claude',
          max_tokens: MAX_TOKENS,
          messages: [question],
          tools: [tool],
        };
        await sdk(env, user).messages.create(body);
        assert.deepEqual(upstream.bodies.at(-1).tools, [{ ...tool, max_uses: sent }]);
        assert.equal((await holdsOf(env, user)).at(-1), expectedHold(await counted(env, user, body), sent));
      }
    });

    it('refused before anything is held or sent: on a model whose provider is not anthropic, and on an anthropic model without a webSearch price, each saying which', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const sent = upstream.bodies.length + mock.requests.length;
      const refusals: Array<[string, RegExp]> = [
        ['acme/gpt', /runs only on a model of the anthropic provider, and this model's provider is "mock"/],
        ['acme/claude-unpriced', /has no web search price.*sets pricing\.webSearch/],
      ];
      for (const [model, says] of refusals) {
        await assert.rejects(
          sdk(env, user).messages.create({ model, max_tokens: MAX_TOKENS, messages: [question], tools: [webSearch] }),
          (error: any) => {
            assert.equal(error.status, 400);
            assert.equal(error.error.error.code, 'UNSUPPORTED_PARAMETER');
            assert.equal(error.error.error.param, 'tools[0].type');
            assert.match(error.error.error.message, says);
            return true;
          },
        );
      }
      assert.equal(upstream.bodies.length + mock.requests.length, sent, 'nothing reached an upstream');
      assert.deepEqual(await holdsOf(env, user), [], 'nothing was held');
      assert.equal((await settled(env, user)).balance, start);
    });

    it('a second turn replaying the search blocks and cited text is accepted on an Anthropic model, passed as sent and counted into the hold; refused on another model', async () => {
      const user = await fundedUser(env, 10);
      const replay = (model: string, content: unknown) => ({
        model,
        max_tokens: MAX_TOKENS,
        messages: [question, { role: 'assistant', content }, { role: 'user', content: 'And tomorrow?' }] as any,
        tools: [{ ...webSearch, max_uses: 1 }],
      });
      const body = replay('acme/claude', SEARCH_BLOCKS);
      const message = await sdk(env, user).messages.create(body);
      assert.equal(message.content.at(-1)?.type, 'text');
      assert.deepEqual(upstream.bodies.at(-1).messages[1].content, SEARCH_BLOCKS);
      const withBlocks = await counted(env, user, body);
      const plain = await counted(env, user, replay('acme/claude', [{ type: 'text', text: SEARCH_ANSWER }]));
      // The query, the encrypted results and the citation: well over a hundred tokens more than the text alone.
      assert.ok(withBlocks > plain + 100, `${withBlocks} counted with the blocks, ${plain} without`);
      assert.equal((await holdsOf(env, user)).at(-1), expectedHold(withBlocks, 1));
      const { tools: _tools, ...noTool } = replay('acme/gpt', SEARCH_BLOCKS);
      await assert.rejects(sdk(env, user).messages.create(noTool), (error: any) => {
        assert.equal(error.status, 400);
        assert.equal(error.error.error.param, 'messages[1].content[0]');
        assert.match(error.error.error.message, /server_tool_use block\) is refused on "acme\/gpt"/);
        return true;
      });
    });

    it('a replayed search without its result (an answer paused mid-search, sent back to be continued) is one more search held for, and refused on a model without a webSearch price', async () => {
      const user = await fundedUser(env, 10);
      const paused = (model: string) => ({
        model,
        max_tokens: MAX_TOKENS,
        messages: [question, { role: 'assistant', content: [SEARCH_BLOCKS[0]] }] as any,
        tools: [{ ...webSearch, max_uses: 1 }],
      });
      const body = paused('acme/claude');
      await sdk(env, user).messages.create(body);
      assert.equal((await holdsOf(env, user)).at(-1), expectedHold(await counted(env, user, body), 2));
      const { tools: _tools, ...noTool } = paused('acme/claude-unpriced');
      await assert.rejects(sdk(env, user).messages.create(noTool), (error: any) => {
        assert.equal(error.status, 400);
        assert.equal(error.error.error.param, 'messages[1].content[0]');
        assert.match(error.error.error.message, /has no web search price/);
        return true;
      });
    });

    it('the tool is checked field by field: a tool_choice naming web_search passes, a max_uses below 1 or a field the tool does not have is a 400 naming it, nothing held', async () => {
      const user = await fundedUser(env, 10);
      const client = sdk(env, user);
      const call = (tool: object, extra: object = {}) =>
        client.messages.create({
          model: 'acme/claude',
          max_tokens: MAX_TOKENS,
          messages: [question],
          tools: [tool as any],
          ...extra,
        });
      await call(webSearch, { tool_choice: { type: 'tool', name: 'web_search' } });
      assert.deepEqual(upstream.bodies.at(-1).tool_choice, { type: 'tool', name: 'web_search' });
      const holds = (await holdsOf(env, user)).length;
      const refused: Array<[object, string, string]> = [
        [{ ...webSearch, max_uses: 0 }, 'INVALID_REQUEST', 'tools[0].max_uses'],
        [{ ...webSearch, input_schema: {} }, 'UNSUPPORTED_PARAMETER', 'tools[0].input_schema'],
        [{ ...webSearch, defer_loading: true }, 'UNSUPPORTED_PARAMETER', 'tools[0].defer_loading'],
      ];
      for (const [tool, code, param] of refused)
        await assert.rejects(call(tool), (error: any) => {
          assert.equal(error.status, 400);
          assert.equal(error.error.error.code, code);
          assert.equal(error.error.error.param, param);
          return true;
        });
      assert.equal((await holdsOf(env, user)).length, holds, 'nothing more was held');
    });

    it('count_tokens with the web search tool answers 200, counting the tool', async () => {
      const user = await fundedUser(env, 1);
      const without = await counted(env, user, { model: 'acme/claude', messages: [question] });
      const withTool = await counted(env, user, { model: 'acme/claude', messages: [question], tools: [webSearch] });
      assert.ok(withTool > without, `${withTool} with the tool, ${without} without`);
    });

    it('after all of it the ledger verifies', async () => {
      const report = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(report.body.ok, true, report.text);
    });
  },
  {
    config: {
      ANTHROPIC_BASE_URL: upstream.url,
      providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }],
      WEB_SEARCH_DEFAULT_MAX_USES: DEFAULT_USES,
      WEB_SEARCH_MAX_USES: MOST_USES,
      WEB_SEARCH_HOLD_TOKENS: TOKENS_PER_SEARCH,
    },
  },
);
