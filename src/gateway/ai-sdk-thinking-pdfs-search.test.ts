import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { createOpenAI } from '@ai-sdk/openai';
import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText, streamText, type ModelMessage } from 'ai';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import {
  CLAUDE_ANSWER,
  CLAUDE_SIGNATURE,
  CLAUDE_THOUGHT,
  CLAUDE_USAGE,
  startClaudeUpstream,
} from '../providers/testing/claude-upstream.ts';
import {
  DOCUMENT_ANSWER,
  DOCUMENT_USAGE,
  startDocumentUpstream,
  tinyPdf,
} from '../protocols/anthropic-messages/testing/document-upstream.ts';
import {
  SEARCH_ANSWER,
  SEARCH_BLOCKS,
  SEARCH_USAGE,
  SEARCHES,
  startWebSearchUpstream,
} from '../protocols/anthropic-messages/testing/web-search-upstream.ts';
import { PDF_PAGE_TOKENS } from './document-estimate.ts';
import { fundedUser, putModel, settled, wallet, type FundedUser } from './testing.ts';

/**
 * This session's AI API surfaces as the ecosystem's clients reach them: the Vercel AI SDK (`@ai-sdk/openai` chat and
 * Responses, `@ai-sdk/anthropic`), the openai SDK and @anthropic-ai/sdk, on a Claude model and an OpenAI-compatible
 * one: a reasoning effort turning Claude's thinking on, a PDF file part, Anthropic's web search tool. Each against
 * the scripted upstream of its provider, charged what that upstream reported.
 */
const claude = await startClaudeUpstream();
const documents = await startDocumentUpstream();
const search = await startWebSearchUpstream();
const mock = await startMockUpstream();
after(() => Promise.all([claude.close(), documents.close(), search.close(), mock.close()]));

/** Micro-credits per token, and per search. */
const PRICING = { prompt: 10, completion: 20 };
const CONTEXT = 50_000;
const PDF = tinyPdf('The grass is green.');
const pdfPart = {
  type: 'file' as const,
  mediaType: 'application/pdf',
  data: Buffer.from(PDF, 'base64'),
  filename: 'facts.pdf',
};
const pdfPrompt: ModelMessage[] = [{ role: 'user', content: [{ type: 'text', text: 'Summarize.' }, pdfPart] }];

/** The AI SDK's providers and the official SDKs, pointed at Tollgate with `user`'s key. */
function clients(env: TestEnv, user: FundedUser) {
  return {
    openai: createOpenAI({ baseURL: `${env.baseUrl}/api/v1`, apiKey: user.key }),
    anthropic: createAnthropic({ baseURL: `${env.baseUrl}/api/v1`, apiKey: user.key }),
    openaiSdk: new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 }),
    anthropicSdk: new Anthropic({ apiKey: user.key, baseURL: `${env.baseUrl}/api`, maxRetries: 0 }),
  };
}

/** What the call cost the user since `start` (settled). */
async function spent(env: TestEnv, user: FundedUser, start: number): Promise<number> {
  return start - (await settled(env, user)).balance;
}

/** streamText read to its end: its text, reasoning and usage. */
async function streamed(
  result: Pick<ReturnType<typeof streamText>, 'textStream' | 'reasoningText' | 'usage' | 'sources'>,
) {
  let text = '';
  for await (const delta of result.textStream) text += delta;
  return { text, reasoning: await result.reasoningText, usage: await result.usage, sources: await result.sources };
}

describeEachDatabase(
  "the Vercel AI SDK's reasoning effort on a Claude model",
  (env) => {
    before(async () => {
      for (const [id, upstreamModel] of [
        ['acme/opus-4.6', 'claude-opus-4-6'],
        ['acme/sonnet-4.5', 'claude-sonnet-4-5-20250929'],
      ])
        await putModel(env, id, { provider: 'anthropic', upstreamModel, pricing: PRICING, maxOutputTokens: 8000 });
    });

    it('@ai-sdk/openai providerOptions reasoningEffort: chat turns thinking on as each generation takes it, streamed or not; Responses needs forceReasoning (the SDK drops the effort of an id it does not know), then the thinking comes back and replays on the next turn', async () => {
      const user = await fundedUser(env, 1);
      const start = (await wallet(env, user)).balance;
      const { openai } = clients(env, user);
      const effort = { openai: { reasoningEffort: 'high' } };
      const thinking = {
        'acme/opus-4.6': { type: 'adaptive' },
        'acme/sonnet-4.5': { type: 'enabled', budget_tokens: 6400 },
      };
      let calls = 0;
      for (const [model, expected] of Object.entries(thinking)) {
        const generated = await generateText({
          model: openai.chat(model),
          prompt: 'Why?',
          maxRetries: 0,
          providerOptions: effort,
        });
        assert.equal(generated.text, CLAUDE_ANSWER);
        assert.deepEqual(claude.bodies.at(-1).thinking, expected, model);
        // Billed as output, and not shown: @ai-sdk/openai's chat model reads no `reasoning` field (README says so).
        assert.equal(generated.usage.outputTokens, CLAUDE_USAGE.output + CLAUDE_USAGE.thinking, model);
        assert.equal(generated.reasoningText, undefined);
        const result = await streamed(
          streamText({ model: openai.chat(model), prompt: 'Why?', maxRetries: 0, providerOptions: effort }),
        );
        assert.equal(result.text, CLAUDE_ANSWER);
        assert.deepEqual(claude.bodies.at(-1).thinking, expected, model);
        assert.equal(result.usage.inputTokens, CLAUDE_USAGE.input);
        calls += 2;
      }
      // Responses: @ai-sdk/openai treats an id it does not know as a model that cannot reason and leaves the effort out.
      const dropped = await generateText({
        model: openai.responses('acme/opus-4.6'),
        prompt: 'Why?',
        maxRetries: 0,
        providerOptions: effort,
      });
      assert.equal(claude.bodies.at(-1).thinking, undefined);
      assert.ok(
        (dropped.warnings ?? []).some(
          (warning) => warning.type === 'unsupported' && warning.feature === 'reasoningEffort',
        ),
      );
      const forced = { openai: { reasoningEffort: 'high', forceReasoning: true, store: false } };
      const first = await generateText({
        model: openai.responses('acme/opus-4.6'),
        prompt: 'Why?',
        maxRetries: 0,
        providerOptions: forced,
      });
      assert.deepEqual(claude.bodies.at(-1).thinking, { type: 'adaptive' });
      assert.equal(first.reasoningText, CLAUDE_THOUGHT);
      const again = await streamed(
        streamText({
          model: openai.responses('acme/opus-4.6'),
          messages: [{ role: 'user', content: 'Why?' }, ...first.response.messages, { role: 'user', content: 'More?' }],
          maxRetries: 0,
          providerOptions: forced,
        }),
      );
      assert.equal(again.reasoning, CLAUDE_THOUGHT);
      // The signed thinking of the first answer went back to Claude as it came.
      assert.deepEqual(claude.bodies.at(-1).messages[1].content[0], {
        type: 'thinking',
        thinking: CLAUDE_THOUGHT,
        signature: CLAUDE_SIGNATURE,
      });
      calls += 3;
      const thoughtful = CLAUDE_USAGE.input * 10 + (CLAUDE_USAGE.output + CLAUDE_USAGE.thinking) * 20;
      const plain = CLAUDE_USAGE.input * 10 + CLAUDE_USAGE.output * 20;
      assert.equal(await spent(env, user, start), (calls - 1) * thoughtful + plain);
    });
  },
  { config: { ANTHROPIC_BASE_URL: claude.url } },
);

describeEachDatabase(
  'a PDF through the Vercel AI SDK, the openai SDK and @anthropic-ai/sdk',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/claude', {
        provider: 'anthropic',
        upstreamModel: 'reader',
        pricing: PRICING,
        contextLength: CONTEXT,
        maxOutputTokens: 1000,
      });
      await putModel(env, 'acme/gpt', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: PRICING,
        contextLength: CONTEXT,
        maxOutputTokens: 1000,
      });
    });

    /** What each model's upstream answers and reports. */
    const answers = {
      'acme/claude': { text: DOCUMENT_ANSWER, input: DOCUMENT_USAGE.input, output: DOCUMENT_USAGE.output },
      'acme/gpt': { text: 'alpha beta gamma delta', input: 11, output: 4 },
    } as const;

    it('a file part (application/pdf) through @ai-sdk/openai chat and Responses and @ai-sdk/anthropic, streamed or not: the upstream gets the PDF, the usage is its report, each call charged it', async () => {
      for (const [model, answer] of Object.entries(answers)) {
        const user = await fundedUser(env, 10);
        const start = (await wallet(env, user)).balance;
        const { openai, anthropic } = clients(env, user);
        for (const language of [openai.chat(model), openai.responses(model), anthropic(model)]) {
          const generated = await generateText({ model: language, messages: pdfPrompt, maxRetries: 0 });
          const result = await streamed(streamText({ model: language, messages: pdfPrompt, maxRetries: 0 }));
          for (const [how, got] of [
            ['generateText', generated],
            ['streamText', result],
          ] as const) {
            const at = `${model} ${language.provider} ${how}`;
            assert.equal(got.text, answer.text, at);
            assert.equal(got.usage.inputTokens, answer.input, at);
            assert.equal(got.usage.outputTokens, answer.output, at);
          }
          const sent =
            model === 'acme/claude'
              ? documents.bodies.at(-1).messages[0].content[1]
              : mock.requests.at(-1)!.body.messages[0].content[1];
          assert.deepEqual(
            sent,
            model === 'acme/claude'
              ? {
                  type: 'document',
                  source: { type: 'base64', media_type: 'application/pdf', data: PDF },
                  title: 'facts.pdf',
                }
              : { type: 'file', file: { filename: 'facts.pdf', file_data: `data:application/pdf;base64,${PDF}` } },
            `${model} ${language.provider}`,
          );
        }
        assert.equal(await spent(env, user, start), 6 * (answer.input * 10 + answer.output * 20), model);
      }
    });

    it('@ai-sdk/anthropic with citations on the PDF: the cited passage comes back as a document source, streamed or not', async () => {
      const user = await fundedUser(env, 10);
      const { anthropic } = clients(env, user);
      const cited: ModelMessage[] = [
        {
          role: 'user',
          content: [
            { ...pdfPart, providerOptions: { anthropic: { citations: { enabled: true } } } },
            { type: 'text', text: 'What colour is the grass?' },
          ],
        },
      ];
      const generated = await generateText({ model: anthropic('acme/claude'), messages: cited, maxRetries: 0 });
      const result = await streamed(streamText({ model: anthropic('acme/claude'), messages: cited, maxRetries: 0 }));
      for (const sources of [generated.sources, result.sources])
        assert.deepEqual(
          sources.map((source) => [source.sourceType, source.sourceType === 'document' && source.filename]),
          [['document', 'facts.pdf']],
        );
      await settled(env, user);
    });

    it("the openai SDK: a chat file part with its filename streamed with include_usage, and a Responses input_file streamed: the usage is the upstream's report, not the context the PDF is held at", async () => {
      for (const [model, answer] of Object.entries(answers)) {
        const user = await fundedUser(env, 10);
        const { openaiSdk } = clients(env, user);
        const chunks = await openaiSdk.chat.completions.create({
          model,
          stream: true,
          stream_options: { include_usage: true },
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'Summarize.' },
                { type: 'file', file: { filename: 'facts.pdf', file_data: `data:application/pdf;base64,${PDF}` } },
              ],
            },
          ],
        });
        let text = '';
        const usages: OpenAI.CompletionUsage[] = [];
        for await (const chunk of chunks) {
          text += chunk.choices[0]?.delta.content ?? '';
          if (chunk.usage) usages.push(chunk.usage);
        }
        assert.equal(text, answer.text, model);
        assert.deepEqual(
          usages.map((usage) => [usage.prompt_tokens, usage.completion_tokens]),
          [[answer.input, answer.output]],
          model,
        );
        let completed: OpenAI.Responses.Response | undefined;
        const events = await openaiSdk.responses.create({
          model,
          stream: true,
          input: [
            {
              role: 'user',
              content: [
                { type: 'input_text', text: 'Summarize.' },
                { type: 'input_file', filename: 'facts.pdf', file_data: `data:application/pdf;base64,${PDF}` },
              ],
            },
          ],
        });
        for await (const event of events) if (event.type === 'response.completed') completed = event.response;
        // `output_text` is the SDK's own addition to a whole answer: a streamed one is read from its items.
        const output = completed?.output.flatMap((item) => (item.type === 'message' ? item.content : []));
        assert.equal(
          output?.map((part) => (part.type === 'output_text' ? part.text : '')).join(''),
          answer.text,
          model,
        );
        assert.deepEqual(
          [completed?.usage?.input_tokens, completed?.usage?.output_tokens],
          [answer.input, answer.output],
        );
        await settled(env, user);
      }
    });
  },
  { config: { ANTHROPIC_BASE_URL: documents.url, providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }] } },
);

describeEachDatabase(
  "Anthropic's web search tool through @ai-sdk/anthropic",
  (env) => {
    before(async () => {
      await putModel(env, 'acme/claude', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing: { ...PRICING, webSearch: 0.01 },
        contextLength: CONTEXT,
        maxOutputTokens: 1000,
      });
    });

    it('webSearch_20250305 with maxUses: the upstream gets max_uses as set, the answer its sources and searches, streamed or not; the next turn replays the search blocks; each call charged tokens and searches', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const { anthropic, anthropicSdk } = clients(env, user);
      const tools = { web_search: anthropic.tools.webSearch_20250305({ maxUses: 2 }) };
      const generated = await generateText({
        model: anthropic('acme/claude'),
        prompt: 'Weather?',
        tools,
        maxRetries: 0,
      });
      const result = await streamed(
        streamText({ model: anthropic('acme/claude'), prompt: 'Weather?', tools, maxRetries: 0 }),
      );
      assert.deepEqual(search.bodies.at(-1).tools, [{ type: 'web_search_20250305', name: 'web_search', max_uses: 2 }]);
      for (const got of [generated, result]) {
        assert.equal(got.text, SEARCH_ANSWER);
        assert.deepEqual(
          got.sources.map((source) => source.sourceType === 'url' && source.url),
          [SEARCH_BLOCKS[1].content![0]!.url],
        );
        assert.equal(got.usage.inputTokens, SEARCH_USAGE.input_tokens);
      }
      await generateText({
        model: anthropic('acme/claude'),
        messages: [
          { role: 'user', content: 'Weather?' },
          ...generated.response.messages,
          { role: 'user', content: 'And tomorrow?' },
        ],
        tools,
        maxRetries: 0,
      });
      assert.deepEqual(
        search.bodies.at(-1).messages[1].content.map((block: { type: string }) => block.type),
        ['server_tool_use', 'web_search_tool_result', 'text'],
      );
      const charge = SEARCH_USAGE.input_tokens * 10 + SEARCH_USAGE.output_tokens * 20 + SEARCHES * 10_000;
      assert.equal(await spent(env, user, start), 3 * charge);
      // count_tokens with a PDF and the tool: this upstream has no count_tokens (a 404), so the gateway's own count
      // answers: the one-page PDF at its page estimate, the text and the tool, not the context a call holds; nothing
      // charged.
      const { input_tokens } = await anthropicSdk.messages.countTokens({
        model: 'acme/claude',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: PDF } },
              { type: 'text', text: 'Anything newer than this?' },
            ],
          },
        ],
        tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      });
      assert.ok(input_tokens >= PDF_PAGE_TOKENS && input_tokens < PDF_PAGE_TOKENS + 200, String(input_tokens));
      assert.equal(await spent(env, user, start), 3 * charge);
    });
  },
  { config: { ANTHROPIC_BASE_URL: search.url } },
);
