import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import Anthropic from '@anthropic-ai/sdk';
import { describeEachDatabase, type TestEnv } from '../../testing/harness.ts';
import { fundedUser, holdsOf, putModel, settled, usageOf, wallet } from '../../gateway/testing.ts';
import {
  DOCUMENT_ANSWER,
  DOCUMENT_COUNT,
  DOCUMENT_USAGE,
  startDocumentUpstream,
  tinyPdf,
} from './testing/document-upstream.ts';
import { PDF_PAGE_TOKENS } from '../../gateway/document-estimate.ts';

const upstream = await startDocumentUpstream();
after(() => upstream.close());

/** Credits per 1M tokens, i.e. micro-credits per token: every hold and charge below is exact. */
const PRICING = { prompt: 10, completion: 20 };
/** The context of the models below: what a call with a PDF holds as input. */
const CONTEXT = 50_000;
/** What every call is charged: the usage the upstream reports, 3,210 input and 7 output tokens. */
const CHARGE = DOCUMENT_USAGE.input * 10 + DOCUMENT_USAGE.output * 20;

const PDF = tinyPdf('The grass is green.');

const pdfDocument: Anthropic.DocumentBlockParam = {
  type: 'document',
  source: { type: 'base64', media_type: 'application/pdf', data: PDF },
  title: 'Facts',
  cache_control: { type: 'ephemeral' },
};
const textDocument: Anthropic.DocumentBlockParam = {
  type: 'document',
  source: { type: 'text', media_type: 'text/plain', data: 'The grass is green. The sky is blue.' },
  title: 'Colours',
  context: 'A note about colours.',
};
const urlDocument: Anthropic.DocumentBlockParam = {
  type: 'document',
  source: { type: 'url', url: 'https://example.com/report.pdf' },
};
const citedDocument: Anthropic.DocumentBlockParam = { ...textDocument, citations: { enabled: true } };

/** The SDK as a developer builds it: `baseURL` is Tollgate's `/api` (the SDK adds `/v1/messages`). */
function sdk(env: TestEnv, key: string): Anthropic {
  return new Anthropic({ apiKey: key, authToken: null, baseURL: `${env.baseUrl}/api`, maxRetries: 0 });
}

/** The 400 a call is refused with, as the SDK throws it. */
async function refusal(call: Promise<unknown>): Promise<{ code: string; param: string; message: string }> {
  const error = await call.then(
    () => assert.fail('the call was accepted'),
    (thrown) => thrown,
  );
  assert.ok(error instanceof Anthropic.BadRequestError, String(error));
  return (error.error as any).error;
}

async function assertLedgerVerifies(env: TestEnv): Promise<void> {
  const report = await env.admin('GET', '/api/admin/ledger/verify');
  assert.equal(report.body.ok, true, report.text);
}

describeEachDatabase(
  'documents (PDFs and texts) in Anthropic Messages calls',
  (env) => {
    before(async () => {
      for (const [id, provider] of [
        ['acme/claude', 'anthropic'],
        ['acme/gpt', 'docs'],
      ] as const)
        await putModel(env, id, {
          provider,
          upstreamModel: 'reader',
          pricing: PRICING,
          contextLength: CONTEXT,
          maxOutputTokens: 1000,
        });
      for (const [id, inputModalities] of [
        ['acme/or-reader', ['text', 'file']],
        ['acme/or-text', ['text']],
      ] as const)
        await putModel(env, id, {
          provider: 'openrouter',
          upstreamModel: 'reader',
          pricing: PRICING,
          contextLength: CONTEXT,
          maxOutputTokens: 1000,
          inputModalities,
        });
      await putModel(env, 'acme/claude-unbounded', {
        provider: 'anthropic',
        upstreamModel: 'reader',
        pricing: PRICING,
        maxOutputTokens: 1000,
      });
    });

    it('a base64 PDF, a text document, a URL document and a document in a tool result reach Anthropic as sent, charged what it reports', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const messages: Anthropic.MessageParam[] = [
        {
          role: 'user',
          content: [pdfDocument, textDocument, urlDocument, { type: 'text', text: 'What colour is the grass?' }],
        },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'fetch', input: {} }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: [pdfDocument] }] },
      ];
      const tools: Anthropic.Tool[] = [{ name: 'fetch', input_schema: { type: 'object', properties: {} } }];
      const message = await sdk(env, user.key).messages.create({
        model: 'acme/claude',
        max_tokens: 200,
        messages,
        tools,
      });
      assert.deepEqual(message.content, [{ type: 'text', text: DOCUMENT_ANSWER }]);
      const sent = upstream.bodies.at(-1);
      assert.deepEqual(sent.messages, messages);
      assert.equal(sent.max_tokens, 200);
      assert.equal((await settled(env, user)).balance, start - CHARGE);
      const [record] = await usageOf(env, user);
      assert.deepEqual(
        [record!.status, Number(record!.cost), record!.prompt_tokens, record!.completion_tokens],
        ['ok', CHARGE, DOCUMENT_USAGE.input, DOCUMENT_USAGE.output],
      );
      await assertLedgerVerifies(env);
    });

    it("a call with a PDF holds the model's whole context as input while it is upstream; its max_tokens goes up unlowered", async () => {
      for (const document of [pdfDocument, urlDocument, citedDocument]) {
        const user = await fundedUser(env, 10);
        const start = (await wallet(env, user)).balance;
        const gate = upstream.gate();
        const call = sdk(env, user.key).messages.create({
          model: 'acme/claude',
          max_tokens: 200,
          messages: [{ role: 'user', content: [document, { type: 'text', text: 'Summarize.' }] }],
        });
        await gate.arrived;
        // Input at the context (50,000 tokens at 10) and the output cap (200 at 20).
        assert.deepEqual(await holdsOf(env, user), [CONTEXT * 10 + 200 * 20], document.source.type);
        gate.release();
        await call;
        assert.equal(upstream.bodies.at(-1).max_tokens, 200);
        assert.equal((await settled(env, user)).balance, start - CHARGE);
      }
      await assertLedgerVerifies(env);
    });

    it('a text document without citations is held as its counted text, title and context included', async () => {
      const user = await fundedUser(env, 10);
      const gate = upstream.gate();
      const call = sdk(env, user.key).messages.create({
        model: 'acme/claude',
        max_tokens: 200,
        messages: [{ role: 'user', content: [textDocument, { type: 'text', text: 'Summarize.' }] }],
      });
      await gate.arrived;
      const [hold] = await holdsOf(env, user);
      // The gateway's own count, which the hold is planned from: count_tokens on the OpenAI-compatible model (on
      // acme/claude it would be Anthropic's).
      const counted = await sdk(env, user.key).messages.countTokens({
        model: 'acme/gpt',
        messages: [{ role: 'user', content: [textDocument, { type: 'text', text: 'Summarize.' }] }],
      });
      const bare = await sdk(env, user.key).messages.countTokens({
        model: 'acme/gpt',
        messages: [{ role: 'user', content: [{ type: 'text', text: 'Summarize.' }] }],
      });
      // The title, context and text are counted (a dozen tokens and more), and held with the tokenizer's margin.
      assert.ok(counted.input_tokens > bare.input_tokens + 15, `${counted.input_tokens} vs ${bare.input_tokens}`);
      assert.ok(hold! >= counted.input_tokens * 10 + 200 * 20 && hold! < CONTEXT * 10, String(hold));
      gate.release();
      await call;
      await settled(env, user);
    });

    it("count_tokens answers Anthropic's count on an Anthropic model and the gateway's estimate on another, never the whole context a call holds for a PDF", async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const count = async (model: string, ...blocks: Anthropic.ContentBlockParam[]) =>
        (
          await sdk(env, user.key).messages.countTokens({
            model,
            messages: [{ role: 'user', content: [...blocks, { type: 'text', text: 'Summarize.' }] }],
          })
        ).input_tokens;
      for (const document of [pdfDocument, urlDocument, citedDocument])
        assert.equal(await count('acme/claude', document), DOCUMENT_COUNT, document.source.type);
      // The gateway's estimate: a one-page PDF (base64, or by URL, which is not fetched) at PDF_PAGE_TOKENS, a
      // document with citations as its text; the title and context are counted as text.
      const bare = await count('acme/gpt');
      const title = (await count('acme/gpt', pdfDocument)) - bare - PDF_PAGE_TOKENS;
      assert.ok(title >= 0 && title < 10, String(title));
      assert.equal(await count('acme/gpt', urlDocument), bare + PDF_PAGE_TOKENS);
      assert.equal(await count('acme/gpt', citedDocument), await count('acme/gpt', textDocument));
      assert.ok((await count('acme/gpt', citedDocument)) < bare + 100);
      assert.equal((await wallet(env, user)).balance, start);
      assert.deepEqual(await holdsOf(env, user), []);
    });

    it('cited text comes back as Anthropic sends it (streamed and not), and the cited answer replayed is accepted on the next turn', async () => {
      const user = await fundedUser(env, 10);
      const first: Anthropic.MessageParam = {
        role: 'user',
        content: [citedDocument, { type: 'text', text: 'What colour is the grass?' }],
      };
      const expected = {
        type: 'char_location',
        cited_text: DOCUMENT_ANSWER,
        document_index: 0,
        document_title: 'Colours',
        start_char_index: 0,
        end_char_index: DOCUMENT_ANSWER.length,
      };
      const client = sdk(env, user.key);
      const message = await client.messages.create({ model: 'acme/claude', max_tokens: 200, messages: [first] });
      assert.deepEqual(message.content, [{ type: 'text', text: DOCUMENT_ANSWER, citations: [expected] }]);
      assert.deepEqual(upstream.bodies.at(-1).messages[0].content[0].citations, { enabled: true });
      const streamed = await client.messages
        .stream({ model: 'acme/claude', max_tokens: 200, messages: [first] })
        .finalMessage();
      assert.deepEqual(streamed.content, [{ type: 'text', text: DOCUMENT_ANSWER, citations: [expected] }]);
      const replayed: Anthropic.MessageParam[] = [
        first,
        { role: 'assistant', content: message.content as Anthropic.TextBlockParam[] },
        { role: 'user', content: 'And the sky?' },
      ];
      await client.messages.create({ model: 'acme/claude', max_tokens: 200, messages: replayed });
      assert.deepEqual(upstream.bodies.at(-1).messages[1].content[0].citations, [expected]);
      await settled(env, user);
    });

    it('a document by file_id is refused by its path before anything is held or sent', async () => {
      const user = await fundedUser(env, 10);
      const sent = upstream.bodies.length;
      const body = await refusal(
        sdk(env, user.key).messages.create({
          model: 'acme/claude',
          max_tokens: 200,
          messages: [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'Read this.' },
                { type: 'document', source: { type: 'file', file_id: 'file_1' } },
              ],
            },
          ],
        }),
      );
      assert.equal(body.code, 'UNSUPPORTED_PARAMETER');
      assert.equal(body.param, 'messages[0].content[1].source');
      assert.match(body.message, /Files API/);
      assert.equal(upstream.bodies.length, sent);
      assert.deepEqual(await holdsOf(env, user), []);
    });

    it('a PDF for a model with no context length in the catalogue is refused: nothing bounds what it costs', async () => {
      const user = await fundedUser(env, 10);
      const body = await refusal(
        sdk(env, user.key).messages.create({
          model: 'acme/claude-unbounded',
          max_tokens: 200,
          messages: [{ role: 'user', content: [pdfDocument, { type: 'text', text: 'Summarize.' }] }],
        }),
      );
      assert.equal(body.code, 'UNSUPPORTED_PARAMETER');
      assert.match(body.message, /context length/);
      assert.deepEqual(await holdsOf(env, user), []);
    });

    it("an OpenAI-compatible model gets a PDF as chat's file part and a text document as text; a URL PDF and citations are refused by path", async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const gate = upstream.gate();
      const call = sdk(env, user.key).messages.create({
        model: 'acme/gpt',
        max_tokens: 200,
        messages: [{ role: 'user', content: [pdfDocument, textDocument, { type: 'text', text: 'Summarize.' }] }],
      });
      await gate.arrived;
      assert.deepEqual(await holdsOf(env, user), [CONTEXT * 10 + 200 * 20]);
      gate.release();
      const message = await call;
      assert.deepEqual(message.content, [{ type: 'text', text: DOCUMENT_ANSWER }]);
      assert.deepEqual(upstream.bodies.at(-1).messages, [
        {
          role: 'user',
          content: [
            { type: 'file', file: { filename: 'Facts', file_data: `data:application/pdf;base64,${PDF}` } },
            { type: 'text', text: 'Colours\n\nA note about colours.\n\nThe grass is green. The sky is blue.' },
            { type: 'text', text: 'Summarize.' },
          ],
        },
      ]);
      assert.equal((await settled(env, user)).balance, start - CHARGE);
      const sent = upstream.bodies.length;
      for (const [document, param] of [
        [urlDocument, 'messages[0].content[1].source'],
        [citedDocument, 'messages[0].content[1].citations'],
      ] as const) {
        const body = await refusal(
          sdk(env, user.key).messages.create({
            model: 'acme/gpt',
            max_tokens: 200,
            messages: [{ role: 'user', content: [{ type: 'text', text: 'Summarize.' }, document] }],
          }),
        );
        assert.equal(body.code, 'UNSUPPORTED_PARAMETER');
        assert.equal(body.param, param);
        assert.match(body.message, /acme\/gpt/);
      }
      assert.equal(upstream.bodies.length, sent);
      assert.equal((await settled(env, user)).balance, start - CHARGE);
      await assertLedgerVerifies(env);
    });

    it('an OpenRouter model gets a PDF only when it reads files itself; for one that does not (a per-page parsing fee) it is refused by path', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const content: Anthropic.ContentBlockParam[] = [{ type: 'text', text: 'Summarize.' }, pdfDocument];
      const sent = upstream.bodies.length;
      const body = await refusal(
        sdk(env, user.key).messages.create({
          model: 'acme/or-text',
          max_tokens: 200,
          messages: [{ role: 'user', content }],
        }),
      );
      assert.equal(body.code, 'UNSUPPORTED_PARAMETER');
      assert.equal(body.param, 'messages[0].content[1]');
      assert.match(body.message, /per-page fee/);
      assert.equal(upstream.bodies.length, sent);
      assert.deepEqual(await holdsOf(env, user), []);
      await sdk(env, user.key).messages.create({
        model: 'acme/or-reader',
        max_tokens: 200,
        messages: [{ role: 'user', content }],
      });
      const file = upstream.bodies.at(-1).messages[0].content[1];
      assert.deepEqual(file, {
        type: 'file',
        file: { filename: 'Facts', file_data: `data:application/pdf;base64,${PDF}` },
      });
      assert.equal((await settled(env, user)).balance, start - CHARGE);
    });
  },
  {
    config: {
      ANTHROPIC_BASE_URL: upstream.url,
      OPENROUTER_BASE_URL: `${upstream.url}/v1`,
      OPENROUTER_API_KEY: 'sk-or-test',
      providers: [{ name: 'docs', baseUrl: `${upstream.url}/v1` }],
    },
  },
);
