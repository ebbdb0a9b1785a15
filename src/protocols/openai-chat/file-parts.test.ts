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
import { countTextTokens } from '../../providers/tokens.ts';

const upstream = await startDocumentUpstream();
after(() => upstream.close());

/** Credits per 1M tokens, i.e. micro-credits per token: every hold and charge below is exact. */
const PRICING = { prompt: 10, completion: 20 };
/** The context of the models below: what a call with a PDF holds as input. */
const CONTEXT = 50_000;
/** The context of `acme/gpt-small`, which a long PDF's base64 text counts more tokens than. */
const SMALL_CONTEXT = 1_000;
/** What every call is charged: the usage the upstream reports. */
const CHARGE = DOCUMENT_USAGE.input * 10 + DOCUMENT_USAGE.output * 20;

/** A real one-page PDF, as chat's inline file data. */
const FILE_DATA = `data:application/pdf;base64,${tinyPdf('The grass is green.')}`;
/** A real PDF whose base64 text counts well over {@link SMALL_CONTEXT} tokens. */
const LONG_FILE_DATA = `data:application/pdf;base64,${tinyPdf('The grass is green and the sky is blue. '.repeat(200))}`;

const pdfPart = { type: 'file' as const, file: { filename: 'facts.pdf', file_data: FILE_DATA } };
const audioPart = { type: 'input_audio' as const, input_audio: { data: 'UklGRgAAAABXQVZF', format: 'wav' as const } };

/** A user turn asking about `part`. */
const turn = (part: OpenAI.ChatCompletionContentPart): OpenAI.ChatCompletionMessageParam[] => [
  { role: 'user', content: [{ type: 'text', text: 'Summarize.' }, part] },
];

function sdk(env: TestEnv, user: FundedUser): OpenAI {
  return new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
}

/** The 400 a call is refused with, as the SDK throws it. */
async function refusal(call: Promise<unknown>): Promise<{ code: string; param: string; message: string }> {
  const error = await call.then(
    () => assert.fail('the call was accepted'),
    (thrown) => thrown,
  );
  assert.ok(error instanceof OpenAI.BadRequestError, String(error));
  return error.error as any;
}

describeEachDatabase(
  "chat's file and audio parts",
  (env) => {
    before(async () => {
      for (const [id, provider, contextLength] of [
        ['acme/claude', 'anthropic', CONTEXT],
        ['acme/gpt', 'docs', CONTEXT],
        ['acme/gpt-small', 'docs', SMALL_CONTEXT],
        ['acme/gpt-unbounded', 'docs', null],
      ] as const)
        await putModel(env, id, {
          provider,
          upstreamModel: 'reader',
          pricing: PRICING,
          maxOutputTokens: 1000,
          ...(contextLength ? { contextLength } : {}),
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
    });

    it("a PDF file part holds the model's whole context (context x input price + cap x output price), reaches an OpenAI-compatible model as sent and a Claude model as a document block, charged what the upstream reports", async () => {
      const messages = turn({ ...pdfPart, cache_control: { type: 'ephemeral' } } as any);
      for (const model of ['acme/gpt', 'acme/claude']) {
        const user = await fundedUser(env, 10);
        const start = (await wallet(env, user)).balance;
        const gate = upstream.gate();
        const call = sdk(env, user).chat.completions.create({ model, max_tokens: 200, messages });
        await gate.arrived;
        assert.deepEqual(await holdsOf(env, user), [CONTEXT * 10 + 200 * 20], model);
        gate.release();
        const completion = await call;
        assert.equal(completion.choices[0]!.message.content, DOCUMENT_ANSWER);
        assert.equal((await settled(env, user)).balance, start - CHARGE, model);
        const sent = upstream.bodies.at(-1);
        assert.equal(sent.max_tokens, 200, model);
        if (model === 'acme/gpt') assert.deepEqual(sent.messages, messages);
        else
          assert.deepEqual(sent.messages, [
            {
              role: 'user',
              content: [
                { type: 'text', text: 'Summarize.' },
                {
                  type: 'document',
                  source: { type: 'base64', media_type: 'application/pdf', data: FILE_DATA.split(',')[1] },
                  title: 'facts.pdf',
                  cache_control: { type: 'ephemeral' },
                },
              ],
            },
          ]);
      }
    });

    it('a PDF whose base64 text counts more tokens than the context goes through with its max_tokens intact (it was lowered to 1 token)', async () => {
      assert.ok(countTextTokens(LONG_FILE_DATA) > SMALL_CONTEXT, 'the base64 text outcounts the context');
      const user = await fundedUser(env, 10);
      const gate = upstream.gate();
      const call = sdk(env, user).chat.completions.create({
        model: 'acme/gpt-small',
        max_tokens: 200,
        messages: turn({ type: 'file', file: { filename: 'long.pdf', file_data: LONG_FILE_DATA } }),
      });
      await gate.arrived;
      assert.deepEqual(await holdsOf(env, user), [SMALL_CONTEXT * 10 + 200 * 20]);
      gate.release();
      await call;
      assert.equal(upstream.bodies.at(-1).max_tokens, 200);
      await settled(env, user);
    });

    it('refused by path before anything is held or sent: a PDF on a model without a context length, a file part in a system message or an image in a tool result (no canonical message carries them, so nothing held for them), an audio part for a Claude model (which would not hear it); an OpenAI-compatible model still gets the audio', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const sent = upstream.bodies.length;
      const cases: Array<[string, OpenAI.ChatCompletionMessageParam[], string, RegExp]> = [
        ['acme/gpt-unbounded', turn(pdfPart), 'messages[0].content[1]', /states no context length/],
        [
          'acme/gpt',
          [{ role: 'system', content: [pdfPart] } as any, ...turn({ type: 'text', text: 'Hi.' })],
          'messages[0].content[0]',
          /user message only, not in a system message/,
        ],
        ['acme/claude', turn(audioPart), 'messages[0].content[1]', /take no audio input.*transcribe/],
        [
          'acme/gpt',
          [
            ...turn({ type: 'text', text: 'Look.' }),
            {
              role: 'assistant',
              tool_calls: [{ id: 'c1', type: 'function', function: { name: 'shot', arguments: '{}' } }],
            },
            {
              role: 'tool',
              tool_call_id: 'c1',
              content: [{ type: 'image_url', image_url: { url: 'https://a.example/a.png' } }],
            } as any,
          ],
          'messages[2].content[0]',
          /user message only, not in a tool message/,
        ],
      ];
      for (const [model, messages, param, message] of cases) {
        const body = await refusal(sdk(env, user).chat.completions.create({ model, max_tokens: 200, messages }));
        assert.equal(body.code, 'UNSUPPORTED_PARAMETER', model);
        assert.equal(body.param, param, model);
        assert.match(body.message, message);
      }
      assert.equal(upstream.bodies.length, sent);
      assert.deepEqual(await holdsOf(env, user), []);
      assert.equal((await wallet(env, user)).balance, start);
      const messages = turn(audioPart);
      await sdk(env, user).chat.completions.create({ model: 'acme/gpt', max_tokens: 200, messages });
      assert.deepEqual(upstream.bodies.at(-1).messages, messages);
      await settled(env, user);
    });

    it('an OpenRouter model gets a file part only when it reads files itself; for one that does not (a per-page parsing fee) it is refused by path', async () => {
      const user = await fundedUser(env, 10);
      const start = (await wallet(env, user)).balance;
      const sent = upstream.bodies.length;
      const messages = turn(pdfPart);
      const body = await refusal(
        sdk(env, user).chat.completions.create({ model: 'acme/or-text', max_tokens: 200, messages }),
      );
      assert.equal(body.code, 'UNSUPPORTED_PARAMETER');
      assert.equal(body.param, 'messages[0].content[1]');
      assert.match(body.message, /per-page fee/);
      assert.equal(upstream.bodies.length, sent);
      assert.deepEqual(await holdsOf(env, user), []);
      await sdk(env, user).chat.completions.create({ model: 'acme/or-reader', max_tokens: 200, messages });
      assert.deepEqual(upstream.bodies.at(-1).messages, messages);
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
