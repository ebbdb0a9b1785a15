import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { describeEachDatabase, type TestEnv } from '../../testing/harness.ts';
import { fundedUser, holdsOf, putModel, settled, wallet, type FundedUser } from '../../gateway/testing.ts';
import {
  DOCUMENT_ANSWER,
  DOCUMENT_USAGE,
  startDocumentUpstream,
  tinyPdf,
} from '../anthropic-messages/testing/document-upstream.ts';

const upstream = await startDocumentUpstream();
after(() => upstream.close());

/** Credits per 1M tokens, i.e. micro-credits per token: every hold and charge below is exact. */
const PRICING = { prompt: 10, completion: 20 };
/** The context of the models below: what a call with a PDF holds as input. */
const CONTEXT = 50_000;
/** What every call is charged: the usage the upstream reports. */
const CHARGE = DOCUMENT_USAGE.input * 10 + DOCUMENT_USAGE.output * 20;

const PDF = tinyPdf('The grass is green.');
const filePart: OpenAI.Responses.ResponseInputFile = {
  type: 'input_file',
  filename: 'facts.pdf',
  file_data: `data:application/pdf;base64,${PDF}`,
};

/** A user message asking about `part`. */
const input = (part: unknown): OpenAI.Responses.ResponseInput => [
  { role: 'user', content: [{ type: 'input_text', text: 'Summarize.' }, part as OpenAI.Responses.ResponseInputFile] },
];

function sdk(env: TestEnv, user: FundedUser): OpenAI {
  return new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
}

describeEachDatabase(
  "Responses' input_file and input_audio parts",
  (env) => {
    before(async () => {
      for (const [id, provider, extra] of [
        ['acme/claude', 'anthropic', { contextLength: CONTEXT }],
        ['acme/gpt', 'docs', { contextLength: CONTEXT }],
        ['acme/gpt-unbounded', 'docs', {}],
        ['acme/or-text', 'openrouter', { contextLength: CONTEXT, inputModalities: ['text'] }],
      ] as const)
        await putModel(env, id, {
          provider,
          upstreamModel: 'reader',
          pricing: PRICING,
          maxOutputTokens: 1000,
          ...extra,
        });
    });

    it("an input_file PDF holds the model's whole context (context x input price + cap x output price), reaches an OpenAI-compatible model as chat's file part and a Claude model as a document block, charged what the upstream reports (it was refused)", async () => {
      for (const model of ['acme/gpt', 'acme/claude']) {
        const user = await fundedUser(env, 10);
        const start = (await wallet(env, user)).balance;
        const gate = upstream.gate();
        const call = sdk(env, user).responses.create({ model, max_output_tokens: 200, input: input(filePart) });
        await gate.arrived;
        assert.deepEqual(await holdsOf(env, user), [CONTEXT * 10 + 200 * 20], model);
        gate.release();
        const response = await call;
        assert.equal(response.output_text, DOCUMENT_ANSWER);
        const sent = upstream.bodies.at(-1);
        assert.equal(sent.max_tokens, 200, model);
        const file =
          model === 'acme/gpt'
            ? { type: 'file', file: { filename: 'facts.pdf', file_data: filePart.file_data } }
            : {
                type: 'document',
                source: { type: 'base64', media_type: 'application/pdf', data: PDF },
                title: 'facts.pdf',
              };
        assert.deepEqual(sent.messages, [{ role: 'user', content: [{ type: 'text', text: 'Summarize.' }, file] }]);
        assert.equal((await settled(env, user)).balance, start - CHARGE, model);
      }
    });

    it('refused by path before anything is held or sent: a PDF on a model without a context length or on an OpenRouter model that does not read files, a file by file_id, an audio part', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const sent = upstream.bodies.length;
      const audio = { type: 'input_audio', input_audio: { data: 'UklGRgAAAABXQVZF', format: 'wav' } };
      for (const [model, part, message] of [
        ['acme/gpt-unbounded', filePart, /states no context length/],
        ['acme/or-text', filePart, /per-page fee/],
        ['acme/gpt', { type: 'input_file', file_id: 'file-abc' }, /file_id refers to an upload of any length/],
        ['acme/claude', audio, /audio input is not supported.*transcribe/],
      ] as const) {
        const error = await sdk(env, user)
          .responses.create({ model, max_output_tokens: 200, input: input(part) })
          .then(
            () => assert.fail(`${model} accepted it`),
            (thrown) => thrown,
          );
        assert.ok(error instanceof OpenAI.BadRequestError, String(error));
        const body = error.error as any;
        assert.equal(body.code, 'UNSUPPORTED_PARAMETER', model);
        assert.equal(body.param, 'input[0].content[1]', model);
        assert.match(body.message, message);
      }
      assert.equal(upstream.bodies.length, sent);
      assert.deepEqual(await holdsOf(env, user), []);
      assert.equal((await wallet(env, user)).balance, start);
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
