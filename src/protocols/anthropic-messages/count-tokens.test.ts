import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import Anthropic from '@anthropic-ai/sdk';
import { describeEachDatabase, type TestEnv } from '../../testing/harness.ts';
import { fundedUser, holdsOf, putModel, wallet, type FundedUser } from '../../gateway/testing.ts';
import {
  COUNT_FAILURES,
  COUNT_REFUSAL,
  DOCUMENT_COUNT,
  objectStreamPdf,
  startDocumentUpstream,
  tinyPdf,
} from './testing/document-upstream.ts';
import { PDF_PAGE_TOKENS } from '../../gateway/document-estimate.ts';

const upstream = await startDocumentUpstream();
after(() => upstream.close());

/** The service's JSON log lines (the warn line of a failed count is read from them). */
const logLines: string[] = [];
const logStream = new PassThrough();
logStream.on('data', (chunk) => logLines.push(...String(chunk).split('\n').filter(Boolean)));

/** The gateway's Anthropic key, which must reach Anthropic's count_tokens and never a log line. */
const ANTHROPIC_KEY = 'sk-ant-count-tokens-secret';
/** The context of every model below: what a call with a PDF holds, and what a count of one must not answer. */
const CONTEXT = 50_000;
const PDF = tinyPdf('The grass is green.');

const pdfBlock = (data: string): Anthropic.DocumentBlockParam => ({
  type: 'document',
  source: { type: 'base64', media_type: 'application/pdf', data },
  title: 'Facts',
});
const question = (...blocks: Anthropic.ContentBlockParam[]): Anthropic.MessageParam[] => [
  { role: 'user', content: [...blocks, { type: 'text', text: 'What colour is the grass?' }] },
];

function sdk(env: TestEnv, key: string): Anthropic {
  return new Anthropic({ apiKey: key, authToken: null, baseURL: `${env.baseUrl}/api`, maxRetries: 0 });
}

/** What a count must leave as it was: the wallet, the holds and the ledger. */
async function books(env: TestEnv, user: FundedUser) {
  const transactions = await env.db
    .selectFrom('ledger_transactions')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return { wallet: await wallet(env, user), holds: await holdsOf(env, user), ledger: Number(transactions.n) };
}

/** The warn lines of failed counts logged since `from`. */
function countWarnings(from: number): any[] {
  return logLines
    .slice(from)
    .map((line) => JSON.parse(line))
    .filter((entry) => entry.level === 40 && String(entry.msg).startsWith('count_tokens'));
}

describeEachDatabase(
  'Messages count_tokens: Anthropic counts for its models, the gateway estimates for the others',
  (env) => {
    before(async () => {
      const model = (provider: string, upstreamModel: string, extra: Record<string, unknown> = {}) => ({
        provider,
        upstreamModel,
        pricing: { prompt: 10, completion: 20 },
        contextLength: CONTEXT,
        maxOutputTokens: 1000,
        ...extra,
      });
      await putModel(env, 'acme/claude', model('anthropic', 'claude-reader-v2'));
      await putModel(env, 'acme/claude-down', model('anthropic', COUNT_FAILURES.fails));
      await putModel(env, 'acme/claude-unknown', model('anthropic', COUNT_FAILURES.unknown));
      await putModel(env, 'acme/claude-slow', model('anthropic', COUNT_FAILURES.hangs, { answerTimeoutMs: 300 }));
      await putModel(env, 'acme/claude-refused', model('anthropic', COUNT_FAILURES.refuses));
      await putModel(env, 'acme/gpt', model('docs', 'reader'));
    });

    it("on an Anthropic model, the count is Anthropic's, of the body as the pass-through sends it (upstream model id, the fields count_tokens takes, the gateway's key, no anthropic-beta); nothing held or charged", async () => {
      const user = await fundedUser(env, 10);
      const start = await books(env, user);
      const sent = upstream.bodies.length;
      const params = {
        model: 'acme/claude',
        system: 'You read documents.',
        messages: question(pdfBlock(PDF)),
        tools: [{ name: 'lookup', description: 'Looks a word up.', input_schema: { type: 'object' as const } }],
        thinking: { type: 'enabled' as const, budget_tokens: 1024 },
      };
      // Fields only a generation reads, which Anthropic's count_tokens refuses as extra inputs, are left out.
      const withGenerationFields = { ...params, max_tokens: 2000, temperature: 1, metadata: { user_id: 'u1' } };
      const counted = await sdk(env, user.key).messages.countTokens(withGenerationFields as typeof params, {
        headers: { 'anthropic-beta': 'token-counting-2024-11-01' },
      });
      assert.equal(counted.input_tokens, DOCUMENT_COUNT);
      assert.equal(upstream.bodies.length, sent + 1);
      assert.deepEqual(upstream.bodies.at(-1), { ...params, model: 'claude-reader-v2' });
      const headers = upstream.countHeaders.at(-1)!;
      assert.equal(headers['x-api-key'], ANTHROPIC_KEY);
      assert.equal(headers['anthropic-version'], '2023-06-01');
      assert.equal(headers['anthropic-beta'], undefined);
      assert.deepEqual(await books(env, user), start);
    });

    it("when Anthropic's count fails (500, an unknown model's 404, no answer in the model's deadline), the gateway's own count answers, with one warn line naming the model and not the key; nothing held or charged", async () => {
      const user = await fundedUser(env, 10);
      const start = await books(env, user);
      const messages = question(pdfBlock(PDF));
      const local = (await sdk(env, user.key).messages.countTokens({ model: 'acme/gpt', messages })).input_tokens;
      for (const [model, status] of [
        ['acme/claude-down', 500],
        ['acme/claude-unknown', 404],
        ['acme/claude-slow', 504],
      ] as const) {
        const from = logLines.length;
        const sent = upstream.bodies.length;
        const counted = await sdk(env, user.key).messages.countTokens({ model, messages });
        assert.equal(counted.input_tokens, local, model);
        assert.equal(upstream.bodies.length, sent + 1, `${model} was asked upstream first`);
        await new Promise((resolve) => setImmediate(resolve));
        const warnings = countWarnings(from);
        assert.equal(warnings.length, 1, model);
        assert.equal(warnings[0].model, model);
        assert.equal(warnings[0].status, status);
        const line = JSON.stringify(warnings[0]);
        assert.ok(!line.includes(ANTHROPIC_KEY) && !line.includes(PDF.slice(0, 40)), line);
      }
      assert.deepEqual(await books(env, user), start);
    });

    it("a 400 from Anthropic's count (the body is invalid) is the client's 400 with Anthropic's message, as the Messages call would answer", async () => {
      const user = await fundedUser(env, 10);
      const error = await sdk(env, user.key)
        .messages.countTokens({ model: 'acme/claude-refused', messages: question(pdfBlock(PDF)) })
        .then(
          () => assert.fail('the count was answered'),
          (thrown) => thrown,
        );
      assert.ok(error instanceof Anthropic.BadRequestError, String(error));
      assert.equal((error.error as any).error.code, 'INVALID_REQUEST');
      assert.ok((error.error as any).error.message.includes(COUNT_REFUSAL), (error.error as any).error.message);
    });

    it("on an OpenAI-compatible model, a PDF counts an estimate of its pages (page objects read, compressed or not), not the model's context; nothing held or charged", async () => {
      const user = await fundedUser(env, 10);
      const start = await books(env, user);
      const count = async (...blocks: Anthropic.ContentBlockParam[]) =>
        (await sdk(env, user.key).messages.countTokens({ model: 'acme/gpt', messages: question(...blocks) }))
          .input_tokens;
      const bare = await count();
      // The PDF's title is counted as text too: a few tokens beside the page estimate.
      const onePage = (await count(pdfBlock(PDF))) - bare;
      assert.ok(onePage >= PDF_PAGE_TOKENS && onePage < PDF_PAGE_TOKENS + 20, String(onePage));
      assert.ok(onePage + bare < CONTEXT);
      assert.equal((await count(pdfBlock(objectStreamPdf(3)))) - bare, onePage + 2 * PDF_PAGE_TOKENS);
      assert.equal((await count(pdfBlock(PDF), pdfBlock(objectStreamPdf(2)))) - bare, 2 * onePage + PDF_PAGE_TOKENS);
      assert.deepEqual(await books(env, user), start);
    });
  },
  {
    config: {
      ANTHROPIC_BASE_URL: upstream.url,
      ANTHROPIC_API_KEY: ANTHROPIC_KEY,
      providers: [{ name: 'docs', baseUrl: `${upstream.url}/v1` }],
    },
    logDestination: logStream,
  },
);
