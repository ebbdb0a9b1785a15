import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { describeEachDatabase, type TestEnv } from '../../testing/harness.ts';
import { startMockUpstream } from '../../providers/testing/mock-upstream.ts';
import { fundedUser, holdsOf, putModel, settled, wallet, type FundedUser } from '../../gateway/testing.ts';
import { tinyPdf } from './testing/document-upstream.ts';
import { PDF_PAGE_TOKENS } from '../../gateway/document-estimate.ts';

/**
 * A Messages stream with a PDF on a translated (OpenAI-compatible) model: its `message_start` shows the prompt the
 * gateway counted with the PDF at its page estimate (what count_tokens answers), not the model's whole context the
 * call is held at. Claude Code reads that `usage.input_tokens`
 * for its context meter: a PDF of a few hundred tokens showed the window full (200,000 of 200,000).
 */
const mock = await startMockUpstream();
after(() => mock.close());

/** Micro-credits per token. */
const PRICING = { prompt: 10, completion: 20 };
const CONTEXT = 200_000;
const MAX_TOKENS = 100;
/** The mock reports 11 input and 4 output tokens. */
const UPSTREAM = { input: 11, output: 4 };

const question: Anthropic.TextBlockParam = { type: 'text', text: 'What colour is the grass in this report?' };
const pdf: Anthropic.DocumentBlockParam = {
  type: 'document',
  source: { type: 'base64', media_type: 'application/pdf', data: tinyPdf('The grass is green.') },
  title: 'Report',
};

function sdk(env: TestEnv, user: FundedUser): Anthropic {
  return new Anthropic({ apiKey: user.key, baseURL: `${env.baseUrl}/api`, maxRetries: 0 });
}

describeEachDatabase(
  "a Messages stream's message_start with a PDF on an OpenAI-compatible model",
  (env) => {
    before(async () => {
      await putModel(env, 'acme/gpt', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: PRICING,
        contextLength: CONTEXT,
        maxOutputTokens: 1000,
      });
    });

    it("shows count_tokens' number as input_tokens (the text counted, the PDF at its page estimate), not the context the PDF is held at; the final usage is the upstream's, charged exactly", async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const client = sdk(env, user);
      const messages: Anthropic.MessageParam[] = [{ role: 'user', content: [pdf, question] }];
      // What the gateway knows of this prompt before the upstream reports, as count_tokens says it: the question as
      // counted and the one-page PDF at its page estimate.
      const { input_tokens: text } = await client.messages.countTokens({
        model: 'acme/gpt',
        messages: [{ role: 'user', content: [question] }],
      });
      const { input_tokens: counted } = await client.messages.countTokens({ model: 'acme/gpt', messages });
      assert.equal(counted, text + PDF_PAGE_TOKENS);
      const events = await client.messages.create({
        model: 'acme/gpt',
        max_tokens: MAX_TOKENS,
        messages,
        stream: true,
      });
      const usages: Array<[string, Anthropic.MessageDeltaUsage | Anthropic.Usage]> = [];
      for await (const event of events) {
        if (event.type === 'message_start') usages.push([event.type, event.message.usage]);
        if (event.type === 'message_delta') usages.push([event.type, event.usage]);
      }
      assert.deepEqual(
        usages.map(([type, usage]) => [type, usage.input_tokens]),
        [
          ['message_start', counted],
          ['message_delta', UPSTREAM.input],
        ],
      );
      // The hold is still the whole context: only what the stream shows changed.
      assert.deepEqual(await holdsOf(env, user), [CONTEXT * 10 + MAX_TOKENS * 20]);
      assert.equal((await settled(env, user)).balance, start - (UPSTREAM.input * 10 + UPSTREAM.output * 20));
    });

    it("the SDK's messages.stream helper ends on the upstream's input count", async () => {
      const user = await fundedUser(env, 10);
      const final = await sdk(env, user)
        .messages.stream({
          model: 'acme/gpt',
          max_tokens: MAX_TOKENS,
          messages: [{ role: 'user', content: [pdf, question] }],
        })
        .finalMessage();
      assert.equal(final.usage.input_tokens, UPSTREAM.input);
      assert.equal(final.usage.output_tokens, UPSTREAM.output);
      await settled(env, user);
    });
  },
  { config: { providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }] } },
);
