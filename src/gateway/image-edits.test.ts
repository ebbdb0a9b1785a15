import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { countTextTokens } from '../providers/tokens.ts';
import { worstPromptTokens } from './chat-plan.ts';
import { fundedUser, holdsOf, putModel, usageOf, wallet, type FundedUser } from './testing.ts';

/**
 * `POST /api/v1/images/edits` through the official `openai` client's `images.edit`, against a real HTTP stand-in
 * that reads the multipart form as OpenAI does. Prices of acme/editor: 0.01 a request, 0.02 a low-quality
 * 1024² image, 100 micro-credits a prompt token, and 1,000 tokens for each input image (source or mask).
 */

const mock = await startMockUpstream();
after(() => mock.close());

const LIMIT = 8192;
const REQUEST = 10_000;
const LOW_IMAGE = 20_000;
const PROMPT_PRICE = 100;
const IMAGE_TOKENS = 1_000;
const PROMPT = 'make the sky purple';

/** What an edit of `inputs` input images (sources and mask) returning `images` is charged. */
const editCost = (inputs: number, images: number, prompt = PROMPT) =>
  REQUEST + images * LOW_IMAGE + (countTextTokens(prompt) + inputs * IMAGE_TOKENS) * PROMPT_PRICE;

/** A small "PNG" (its signature, then `label`): the stand-in forwards bytes, it never decodes them. */
const png = (label: string, bytes = 0) =>
  new File(
    [Buffer.concat([Buffer.from('\x89PNG\r\n\x1a\n', 'latin1'), Buffer.from(label), Buffer.alloc(bytes)])],
    `${label}.png`,
    {
      type: 'image/png',
    },
  );

describeEachDatabase(
  'image edits (images.edit)',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/editor', {
        provider: 'mock',
        upstreamModel: 'dall-e-2',
        pricing: { request: 0.01, prompt: PROMPT_PRICE },
        imagePrices: { 'low/1024x1024': 0.02 },
        imageTokens: IMAGE_TOKENS,
        inputModalities: ['text', 'image'],
        outputModalities: ['image'],
      });
      // Token-priced, as OpenAI bills gpt-image-1: no per-image price; output image tokens at `completion`.
      await putModel(env, 'acme/gpt-image', {
        provider: 'mock',
        upstreamModel: 'gpt-image-1',
        pricing: { request: 0.01, prompt: PROMPT_PRICE, completion: 40 },
        imageTokens: IMAGE_TOKENS,
        inputModalities: ['text', 'image'],
        outputModalities: ['image'],
      });
      await putModel(env, 'acme/blind-painter', {
        provider: 'mock',
        upstreamModel: 'painter-1',
        pricing: { request: 0.01, image: 0.02 },
        imageTokens: null,
        outputModalities: ['image'],
      });
    });

    const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
    const low = { quality: 'low', size: '1024x1024' } as const;

    it('one image through images.edit is forwarded as sent (model replaced) and charged request + the image + prompt and input image tokens, ledger balanced', async () => {
      const user = await fundedUser(env, 10);
      const answer = await sdk(user.key).images.edit({
        model: 'acme/editor',
        image: png('photo'),
        prompt: PROMPT,
        ...low,
      });
      assert.equal(answer.data?.length, 1);
      assert.equal(Buffer.from(answer.data![0]!.b64_json!, 'base64').toString(), 'mock-edited-png');
      const edit = mock.requests.at(-1)!.edit!;
      assert.deepEqual(edit.fields, { model: 'dall-e-2', prompt: PROMPT, quality: 'low', size: '1024x1024' });
      assert.deepEqual(
        edit.files.map((file) => [file.field, file.filename, file.type]),
        [['image', 'photo.png', 'image/png']],
      );
      assert.deepEqual(edit.files[0]!.bytes, Buffer.from(await png('photo').arrayBuffer()));
      await assertCharged(env, user, editCost(1, 1), countTextTokens(PROMPT) + IMAGE_TOKENS);
      // Held: request + the image + the prompt with its margin + the input image's budget.
      assert.deepEqual(await holdsOf(env, user), [
        REQUEST + LOW_IMAGE + (worstPromptTokens(countTextTokens(PROMPT)) + IMAGE_TOKENS) * PROMPT_PRICE,
      ]);
    });

    it('several images and a mask reach the upstream as image[] and mask, each input image charged its budget, n images charged', async () => {
      const user = await fundedUser(env, 10);
      const answer = await sdk(user.key).images.edit({
        model: 'acme/editor',
        image: [png('one'), png('two'), png('three')],
        mask: png('mask'),
        prompt: PROMPT,
        n: 2,
        response_format: 'b64_json',
        ...low,
      });
      assert.equal(answer.data?.length, 2);
      const edit = mock.requests.at(-1)!.edit!;
      assert.deepEqual(edit.files.map((file) => [file.field, file.filename]).sort(), [
        ['image[]', 'one.png'],
        ['image[]', 'three.png'],
        ['image[]', 'two.png'],
        ['mask', 'mask.png'],
      ]);
      assert.equal(edit.fields.n, '2');
      assert.equal(edit.fields.response_format, 'b64_json');
      await assertCharged(env, user, editCost(4, 2), countTextTokens(PROMPT) + 4 * IMAGE_TOKENS);
    });

    it('an edit on a token-priced model is held for its output bound and charged the input and output tokens the upstream reports', async () => {
      const user = await fundedUser(env, 10);
      const answer = await sdk(user.key).images.edit({
        model: 'acme/gpt-image',
        image: [png('one'), png('two')],
        prompt: PROMPT,
        quality: 'medium',
        size: '1024x1536',
      });
      // The mock reports the prompt's 4 words and 323 tokens per input image, and 1,056 output tokens.
      const input = 4 + 2 * 323;
      const cost = REQUEST + input * PROMPT_PRICE + 1056 * 40;
      assert.equal((answer.usage as { cost?: number }).cost, cost / 1e6);
      await assertCharged(env, user, cost, input);
      assert.deepEqual(await holdsOf(env, user), [
        REQUEST + (worstPromptTokens(countTextTokens(PROMPT)) + 2 * IMAGE_TOKENS) * PROMPT_PRICE + 6240 * 40,
      ]);
    });

    it('an upstream that returns more images than asked is charged only the images asked for', async () => {
      const user = await fundedUser(env, 10);
      const prompt = 'mock-returns-3 a purple sky';
      const answer = await sdk(user.key).images.edit({ model: 'acme/editor', image: png('photo'), prompt, ...low });
      assert.equal(answer.data?.length, 3);
      await assertCharged(env, user, editCost(1, 1, prompt), countTextTokens(prompt) + IMAGE_TOKENS);
    });

    /** Posts `form` to the edits route as a client would, answering the status and the error. */
    const post = async (key: string, form: FormData) => {
      const response = await fetch(`${env.baseUrl}/api/v1/images/edits`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: form,
      });
      return { status: response.status, error: ((await response.json()) as any).error };
    };
    /** A form of `images` source images (named image[] when more than one) and `fields` (null: left out). */
    const editForm = (images: number, fields: Record<string, string | null> = {}) => {
      const form = new FormData();
      for (const [name, value] of Object.entries({ model: 'acme/editor', prompt: PROMPT, ...low, ...fields }))
        if (value !== null) form.append(name, value);
      for (let i = 0; i < images; i++) form.append(images > 1 ? 'image[]' : 'image', png(`image-${i}`));
      return form;
    };

    it('a field longer than 1 MiB (a prompt) is a 413 naming it, not cut short and sent; nothing held', async () => {
      const user = await fundedUser(env, 10);
      const refused = await post(user.key, editForm(1, { prompt: 'x'.repeat(1024 * 1024 + 1) }));
      assert.equal(refused.status, 413);
      assert.equal(refused.error.code, 'PAYLOAD_TOO_LARGE');
      assert.equal(refused.error.param, 'prompt');
      assert.equal((await wallet(env, user)).reserved, 0);
      assert.equal((await wallet(env, user)).balance, 10_000_000);
    });

    it('refusals are clear 4xx with nothing held or charged: no image, too many, a field off the allow-list, an unpriced quality, a model without image input or without image support', async () => {
      const user = await fundedUser(env, 10);
      const before = mock.requests.length;
      const cases: Array<[string, FormData, number, string, string | undefined]> = [
        ['no image', editForm(0), 400, 'INVALID_REQUEST', 'image'],
        ['17 images (OpenAI takes 16)', editForm(17), 400, 'TOO_MANY_IMAGES', 'image'],
        ['19 images (the parser stops at the 18th file)', editForm(19), 400, 'TOO_MANY_IMAGES', 'image'],
        [
          'input_fidelity (raises input image tokens)',
          editForm(1, { input_fidelity: 'high' }),
          400,
          'UNSUPPORTED_PARAMETER',
          'input_fidelity',
        ],
        ['partial_images', editForm(1, { partial_images: '2' }), 400, 'UNSUPPORTED_PARAMETER', 'partial_images'],
        ['an unpriced quality', editForm(1, { quality: 'high' }), 400, 'UNSUPPORTED_PARAMETER', 'size'],
        ['n past 10', editForm(1, { n: '11' }), 400, 'INVALID_REQUEST', 'n'],
        ['no prompt', editForm(1, { prompt: '' }), 400, 'INVALID_REQUEST', 'prompt'],
        [
          'a model without imageTokens',
          editForm(1, { model: 'acme/blind-painter', quality: null, size: null }),
          400,
          'IMAGE_INPUT_UNSUPPORTED',
          'image',
        ],
        [
          'a model whose provider cannot edit images',
          editForm(1, { model: 'tollgate/echo' }),
          400,
          'INVALID_REQUEST',
          undefined,
        ],
      ];
      for (const [name, form, status, code, param] of cases) {
        const answer = await post(user.key, form);
        assert.equal(answer.status, status, `${name}: ${JSON.stringify(answer.error)}`);
        assert.equal(answer.error.code, code, name);
        assert.equal(answer.error.param, param, name);
        assert.ok(answer.error.message.length > 20, name);
      }
      // Through the SDK too: its error carries the code and the parameter named.
      await assert.rejects(
        sdk(user.key).images.edit({
          model: 'acme/editor',
          image: png('photo'),
          prompt: PROMPT,
          input_fidelity: 'high',
          ...low,
        }),
        (error: any) =>
          error.status === 400 && error.code === 'UNSUPPORTED_PARAMETER' && error.param === 'input_fidelity',
      );
      const chatOnly = await fundedUser(env, 10, ['ai:chat']);
      const forbidden = await post(chatOnly.key, editForm(1));
      assert.equal(forbidden.status, 403);
      assert.equal(forbidden.error.code, 'PERMISSION_DENIED');
      for (const payer of [user, chatOnly]) {
        assert.deepEqual(await holdsOf(env, payer), []);
        assert.deepEqual(await wallet(env, payer), { balance: 10_000_000, reserved: 0, available: 10_000_000 });
      }
      assert.equal(mock.requests.length, before, 'nothing reached the upstream');
    });

    it('a multipart body over BODY_LIMIT_UPLOAD_BYTES is a 413 PAYLOAD_TOO_LARGE naming the limit, one file or several together; nothing held', async () => {
      const user = await fundedUser(env, 10);
      await assert.rejects(
        sdk(user.key).images.edit({ model: 'acme/editor', image: png('huge', LIMIT), prompt: PROMPT, ...low }),
        (error: any) =>
          error.status === 413 &&
          error.code === 'PAYLOAD_TOO_LARGE' &&
          new RegExp(`larger than the ${LIMIT} bytes .*BODY_LIMIT_UPLOAD_BYTES`).test(error.message),
      );
      await assert.rejects(
        sdk(user.key).images.edit({
          model: 'acme/editor',
          image: [png('half', LIMIT / 2), png('other-half', LIMIT / 2)],
          prompt: PROMPT,
          ...low,
        }),
        (error: any) => error.status === 413 && error.code === 'PAYLOAD_TOO_LARGE' && /together/.test(error.message),
      );
      assert.deepEqual(await holdsOf(env, user), []);
      assert.equal((await wallet(env, user)).balance, 10_000_000);
    });
  },
  { config: { providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }], BODY_LIMIT_UPLOAD_BYTES: LIMIT } },
);

/** The wallet is down by `cost`, the one usage record says it (with `promptTokens`), and the ledger verifies. */
async function assertCharged(env: TestEnv, user: FundedUser, cost: number, promptTokens: number): Promise<void> {
  assert.deepEqual(await wallet(env, user), {
    balance: 10_000_000 - cost,
    reserved: 0,
    available: 10_000_000 - cost,
  });
  const records = await usageOf(env, user);
  assert.deepEqual(
    records.map((record) => [record.kind, record.status, Number(record.cost), record.prompt_tokens]),
    [['images', 'ok', cost, promptTokens]],
  );
  const report = await env.admin('GET', '/api/admin/ledger/verify');
  assert.equal(report.body.ok, true, report.text);
}
