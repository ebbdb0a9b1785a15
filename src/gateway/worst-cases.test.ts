import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { countTextTokens } from '../providers/tokens.ts';
import { fundedUser, holdsOf, mp3File, putModel, wallet, wavFile, type FundedUser } from './testing.ts';

/** The default mock: reports 11 prompt tokens and 4 completion tokens ("alpha beta gamma delta"). */
const mock = await startMockUpstream();
/** A vision upstream that reports what five high-detail images really cost on gpt-4o-mini: 127,510 prompt tokens. */
const vision = await startMockUpstream({ promptTokens: 127_510 });
after(() => Promise.all([mock.close(), vision.close()]));

const chat = (env: TestEnv, user: FundedUser, body: Record<string, unknown>) =>
  env.request('POST', '/api/v1/chat/completions', { token: user.key, body });
const hi = [{ role: 'user', content: 'hi' }];

async function transcribe(env: TestEnv, user: FundedUser, model: string, audio: Uint8Array<ArrayBuffer>, name: string) {
  const form = new FormData();
  form.append('model', model);
  form.append('file', new Blob([audio]), name);
  const response = await fetch(`${env.baseUrl}/api/v1/audio/transcriptions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${user.key}` },
    body: form,
  });
  return { status: response.status, body: (await response.json()) as any };
}

describeEachDatabase(
  'worst cases that bound the truth (issue 12, holes 3 to 5)',
  (env) => {
    before(async () => {
      // 10 credits per 1M tokens is 10 micro-credits a token. No image budget given: gpt-4o-mini's family default.
      await putModel(env, 'acme/vision-mini', {
        provider: 'vision',
        upstreamModel: 'gpt-4o-mini',
        pricing: { prompt: 10, completion: 10 },
        maxOutputTokens: 100,
        inputModalities: ['text', 'image'],
      });
      await putModel(env, 'acme/text', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { prompt: 1000, completion: 1000 },
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/router', {
        provider: 'openrouter',
        upstreamModel: 'default-model',
        pricing: { prompt: 1, completion: 1 },
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/painter', {
        provider: 'mock',
        upstreamModel: 'painter-1',
        pricing: { request: 0.01, image: 0.04 },
        outputModalities: ['image'],
        imagePrices: { 'hd/1024x1792': 0.12, 'standard/*': 0.04, 'auto/auto': 0.04 },
      });
      await putModel(env, 'acme/listen', {
        provider: 'mock',
        upstreamModel: 'whisper-1',
        pricing: { request: 0.001, second: 0.01 },
        inputModalities: ['audio'],
      });
      await putModel(env, 'acme/listen-garbage', {
        provider: 'mock',
        upstreamModel: 'garbage-usage',
        pricing: { request: 0.001, second: 0.01, prompt: 1, completion: 1 },
        inputModalities: ['audio'],
      });
      await putModel(env, 'acme/listen-short', {
        provider: 'mock',
        upstreamModel: 'whisper-1',
        pricing: { request: 0.001, second: 0.01 },
        maxPredictSeconds: 5,
        inputModalities: ['audio'],
      });
      await putModel(env, 'acme/live', {
        provider: 'mock',
        upstreamModel: 'realtime-1',
        pricing: { request: 0.05 },
        outputModalities: ['audio'],
      });
      await putModel(env, 'acme/voice', {
        provider: 'mock',
        upstreamModel: 'tts-1',
        pricing: { prompt: 1000, request: 0.001 },
        outputModalities: ['audio'],
      });
    });

    it("hole 3: five high-detail images are held at the model's image budget and charged their real cost (not 0.094 credits for 1.27)", async () => {
      const user = await fundedUser(env, 5);
      const image = { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA', detail: 'high' } };
      const response = await chat(env, user, {
        model: 'acme/vision-mini',
        messages: [
          {
            role: 'user',
            content: [{ type: 'text', text: 'what is in these photos?' }, image, image, image, image, image],
          },
        ],
      });
      assert.equal(response.status, 200, response.text);
      // The hold covers five images at gpt-4o-mini's worst case (48,169 tokens each), so the capture is not cut short.
      const [held] = await holdsOf(env, user);
      assert.ok(held! >= 5 * 48_169 * 10, `held ${held}`);
      // Charged what the upstream reported: 127,510 prompt + 4 completion tokens at 10 micro-credits each.
      const after = await wallet(env, user);
      assert.deepEqual(after, { balance: 5_000_000 - 1_275_140, reserved: 0, available: 5_000_000 - 1_275_140 });
      const model = (await env.admin('GET', '/api/admin/models')).body.data.find(
        (m: any) => m.id === 'acme/vision-mini',
      );
      assert.equal(model.imageTokens, 48_169);
    });

    it('a model without an image budget refuses image parts with 400 IMAGE_INPUT_UNSUPPORTED, and holds nothing', async () => {
      const user = await fundedUser(env, 5);
      const sent = mock.requests.length;
      const response = await chat(env, user, {
        model: 'acme/text',
        messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }] }],
      });
      assert.equal(response.status, 400);
      assert.equal(response.body.error.code, 'IMAGE_INPUT_UNSUPPORTED');
      assert.match(response.body.error.message, /acme\/text/);
      assert.equal(mock.requests.length, sent);
      assert.deepEqual(await holdsOf(env, user), []);
    });

    it('more image parts than MAX_IMAGES_PER_REQUEST is a 400 TOO_MANY_IMAGES', async () => {
      const user = await fundedUser(env, 50);
      const image = { type: 'image_url', image_url: { url: 'https://example.com/a.png' } };
      const response = await chat(env, user, {
        model: 'acme/vision-mini',
        messages: [{ role: 'user', content: Array(7).fill(image) }],
      });
      assert.equal(response.status, 400);
      assert.equal(response.body.error.code, 'TOO_MANY_IMAGES');
      assert.equal(response.body.error.maxImages, 6);
    });

    it('hole 4: cost-changing pass-through fields (service_tier priority, web search, audio output, OpenRouter plugins/models, unknown fields) are refused by name, before any hold', async () => {
      const user = await fundedUser(env, 5);
      const refused: Array<[string, Record<string, unknown>, string]> = [
        ['acme/text', { service_tier: 'priority' }, 'service_tier'],
        ['acme/text', { web_search_options: { search_context_size: 'high' } }, 'web_search_options'],
        ['acme/text', { modalities: ['text', 'audio'], audio: { voice: 'alloy', format: 'wav' } }, 'modalities'],
        ['acme/text', { audio: { voice: 'alloy', format: 'wav' } }, 'audio'],
        ['acme/router', { plugins: [{ id: 'web' }] }, 'plugins'],
        ['acme/router', { models: ['openai/gpt-4o', 'anthropic/claude-opus-4'] }, 'models'],
        ['acme/router', { provider: { order: ['expensive'] } }, 'provider'],
        ['acme/text', { some_new_upstream_option: true }, 'some_new_upstream_option'],
      ];
      const sent = mock.requests.length;
      for (const [model, fields, param] of refused) {
        const response = await chat(env, user, { model, messages: hi, ...fields });
        assert.equal(response.status, 400, `${param}: ${response.text}`);
        assert.equal(response.body.error.code, 'UNSUPPORTED_PARAMETER');
        assert.equal(response.body.error.param, param);
        assert.match(response.body.error.message, new RegExp(`"${param}"`));
      }
      assert.equal(mock.requests.length, sent);
      assert.deepEqual(await holdsOf(env, user), []);
    });

    it('content parts whose cost the request does not show (a file by file_id, an unknown part type, inline file data on a model without a context length) are refused', async () => {
      const user = await fundedUser(env, 5);
      for (const part of [
        { type: 'file', file: { file_id: 'file-abc123' } },
        { type: 'video_url', video_url: { url: 'https://example.com/a.mp4' } },
      ]) {
        const response = await chat(env, user, {
          model: 'acme/text',
          messages: [{ role: 'user', content: [{ type: 'text', text: 'summarize' }, part] }],
        });
        assert.equal(response.status, 400, response.text);
        assert.equal(response.body.error.code, 'UNSUPPORTED_PARAMETER');
        assert.equal(response.body.error.param, 'messages');
      }
      const inline = await chat(env, user, {
        model: 'acme/text',
        messages: [
          {
            role: 'user',
            content: [
              { type: 'file', file: { filename: 'a.pdf', file_data: 'data:application/pdf;base64,JVBERi0xLjQK' } },
            ],
          },
        ],
      });
      // Inline data is a document held at the model's whole context: this model states none, so none bounds it.
      assert.equal(inline.status, 400, inline.text);
      assert.equal(inline.body.error.code, 'UNSUPPORTED_PARAMETER');
      assert.equal(inline.body.error.param, 'messages[0].content[0]');
      assert.deepEqual(await holdsOf(env, user), []);
    });

    it('fields whose cost the catalogue price covers pass: service_tier flex, text modalities, OpenRouter sampling and transforms', async () => {
      const user = await fundedUser(env, 5);
      const direct = await chat(env, user, {
        model: 'acme/text',
        messages: hi,
        service_tier: 'flex',
        modalities: ['text'],
        seed: 1,
      });
      assert.equal(direct.status, 200, direct.text);
      assert.equal(mock.requests.at(-1)!.body.service_tier, 'flex');
      const routed = await chat(env, user, {
        model: 'acme/router',
        messages: hi,
        top_k: 5,
        transforms: ['middle-out'],
      });
      assert.equal(routed.status, 200, routed.text);
      assert.deepEqual(mock.requests.at(-1)!.body.transforms, ['middle-out']);
    });

    it('hole 4: legacy functions are counted into the hold like tools', async () => {
      const user = await fundedUser(env, 5);
      const functions = [
        {
          name: 'lookup_order',
          description: 'Looks an order up by its number and returns its status, items and shipping address.',
          parameters: {
            type: 'object',
            properties: { number: { type: 'string', description: 'The order number, as printed on the receipt' } },
          },
        },
      ];
      assert.equal((await chat(env, user, { model: 'acme/text', messages: hi, max_tokens: 10 })).status, 200);
      assert.equal(
        (await chat(env, user, { model: 'acme/text', messages: hi, max_tokens: 10, functions })).status,
        200,
      );
      assert.deepEqual(mock.requests.at(-1)!.body.functions, functions);
      const [without, withFunctions] = await holdsOf(env, user);
      assert.ok(
        withFunctions! - without! >= countTextTokens(JSON.stringify(functions)) * 1000,
        `${withFunctions} vs ${without}`,
      );
    });

    it('hole 4: a predicted output is held as output tokens (rejected predictions are billed)', async () => {
      const user = await fundedUser(env, 5);
      const content = 'export function add(a: number, b: number): number {\n  return a + b;\n}\n'.repeat(20);
      assert.equal((await chat(env, user, { model: 'acme/text', messages: hi, max_tokens: 10 })).status, 200);
      assert.equal(
        (
          await chat(env, user, {
            model: 'acme/text',
            messages: hi,
            max_tokens: 10,
            prediction: { type: 'content', content },
          })
        ).status,
        200,
      );
      const [without, withPrediction] = await holdsOf(env, user);
      assert.equal(withPrediction! - without!, countTextTokens(content) * 1000);
    });

    it('hole 4: image quality and size are priced from the catalogue, and one it has no price for is refused', async () => {
      const user = await fundedUser(env, 5);
      const hd = await env.request('POST', '/api/v1/images/generations', {
        token: user.key,
        body: { model: 'acme/painter', prompt: 'a lighthouse', n: 2, quality: 'hd', size: '1024x1792' },
      });
      assert.equal(hd.status, 200, hd.text);
      // 0.01 per request + 2 × 0.12 for hd at 1024×1792 (the flat price is 0.04).
      assert.equal((await wallet(env, user)).balance, 5_000_000 - 10_000 - 240_000);
      const unpriced = await env.request('POST', '/api/v1/images/generations', {
        token: user.key,
        body: { model: 'acme/painter', prompt: 'a lighthouse', quality: 'hd', size: '1024x1024' },
      });
      assert.equal(unpriced.status, 400);
      assert.equal(unpriced.body.error.code, 'UNSUPPORTED_PARAMETER');
      assert.equal(unpriced.body.error.param, 'size');
      const partials = await env.request('POST', '/api/v1/images/generations', {
        token: user.key,
        body: { model: 'acme/painter', prompt: 'a lighthouse', partial_images: 3 },
      });
      assert.equal(partials.status, 400);
      assert.equal(partials.body.error.param, 'partial_images');
      assert.equal((await holdsOf(env, user)).length, 1);
    });

    it('hole 4: a transcription is held on the duration in its WAV or MP3 header, not a flat hour', async () => {
      const user = await fundedUser(env, 1);
      // 20 s of WAV: held 0.001 + (20 + 1) s × 0.01, although an hour (36 credits) is more than the wallet has.
      const wav = await transcribe(env, user, 'acme/listen', wavFile(20), 'clip.wav');
      assert.equal(wav.status, 200, JSON.stringify(wav.body));
      // 100 MP3 frames (2.6 s): held 0.001 + (3 + 1) s × 0.01; the upstream's 7 s are capped at that hold.
      const mp3 = await transcribe(env, user, 'acme/listen', mp3File(100), 'clip.mp3');
      assert.equal(mp3.status, 200, JSON.stringify(mp3.body));
      assert.deepEqual(await holdsOf(env, user), [211_000, 41_000]);
      assert.equal((await wallet(env, user)).balance, 1_000_000 - 71_000 - 41_000);
    });

    it('hole 6: a transcription whose upstream reports a negative duration and unusable token counts is charged on the header duration and estimated tokens, and its hold closes', async () => {
      const user = await fundedUser(env, 1);
      const answer = await transcribe(env, user, 'acme/listen-garbage', wavFile(20), 'clip.wav');
      assert.equal(answer.status, 200, JSON.stringify(answer.body));
      const holds = await env.db
        .selectFrom('holds')
        .select(['status', 'captured'])
        .where('user_id', '=', user.session.userId)
        .execute();
      assert.equal(holds.length, 1);
      assert.equal(holds[0]!.status, 'settled');
      // 0.001 per request + 20 s (the WAV header's) × 0.01; the tokens it could not read are estimated, never
      // free: 20 s × 50 audio tokens and the transcript's own, each at 1 micro-credit.
      const charged = 201_000 + 20 * 50 + countTextTokens(answer.body.text);
      assert.equal(Number(holds[0]!.captured), charged);
      assert.equal((await wallet(env, user)).balance, 1_000_000 - charged);
    });

    it('a transcription past the cap is a 400 AUDIO_TOO_LONG, and one whose duration cannot be read a 400 AUDIO_DURATION_UNREADABLE', async () => {
      const user = await fundedUser(env, 10);
      const long = await transcribe(env, user, 'acme/listen-short', wavFile(10), 'long.wav');
      assert.equal(long.status, 400);
      assert.equal(long.body.error.code, 'AUDIO_TOO_LONG');
      assert.equal(long.body.error.maxSeconds, 5);
      const unreadable = await transcribe(env, user, 'acme/listen', new Uint8Array(4096).fill(7), 'noise.bin');
      assert.equal(unreadable.status, 400);
      assert.equal(unreadable.body.error.code, 'AUDIO_DURATION_UNREADABLE');
      assert.deepEqual(await holdsOf(env, user), []);
    });

    it('speech instructions are billed as input text, with the input', async () => {
      const user = await fundedUser(env, 1);
      const instructions = 'Speak slowly, like a calm lighthouse keeper reading the weather at night.';
      const response = await fetch(`${env.baseUrl}/api/v1/audio/speech`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'acme/voice', input: 'hello world', instructions, voice: 'alloy' }),
      });
      assert.equal(response.status, 200);
      await response.arrayBuffer();
      assert.equal(
        (await wallet(env, user)).balance,
        1_000_000 - 1000 - 1000 * (countTextTokens('hello world') + countTextTokens(instructions)),
      );
    });

    it('hole 5: realtime sessions are off unless the operator enables them (404), and nothing is minted upstream', async () => {
      const user = await fundedUser(env, 10);
      const sent = mock.requests.length;
      const response = await env.request('POST', '/api/v1/realtime/sessions', {
        token: user.key,
        body: { model: 'acme/live' },
      });
      assert.equal(response.status, 404);
      assert.equal(response.body.error.code, 'NOT_FOUND');
      assert.match(response.body.error.message, /REALTIME_ENABLED/);
      assert.equal(mock.requests.length, sent);
      assert.equal((await wallet(env, user)).balance, 10_000_000);
    });
  },
  {
    config: {
      providers: [
        { name: 'mock', baseUrl: `${mock.url}/v1` },
        { name: 'vision', baseUrl: `${vision.url}/v1` },
      ],
      OPENROUTER_BASE_URL: `${mock.url}/v1`,
      MAX_IMAGES_PER_REQUEST: 6,
    },
  },
);

describeEachDatabase(
  'realtime sessions, when enabled (issue 12, hole 5)',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/live', {
        provider: 'mock',
        upstreamModel: 'realtime-1',
        pricing: { request: 0.05, second: 0.001 },
        outputModalities: ['audio'],
      });
    });

    it('hole 5: each session holds and is charged its worst case, with the duration and token caps set on the upstream session', async () => {
      const user = await fundedUser(env, 10);
      const response = await env.request('POST', '/api/v1/realtime/sessions', {
        token: user.key,
        body: { model: 'acme/live', voice: 'verse' },
      });
      assert.equal(response.status, 200, response.text);
      const sent = mock.requests.at(-1)!.body;
      assert.equal(sent.max_response_output_tokens, 500);
      assert.deepEqual(sent.client_secret, { expires_after: { anchor: 'created_at', seconds: 60 } });
      assert.equal(sent.voice, 'verse');
      // 0.05 per session + 60 s × 0.001.
      assert.equal((await wallet(env, user)).balance, 10_000_000 - 50_000 - 60_000);
      const lifted = await env.request('POST', '/api/v1/realtime/sessions', {
        token: user.key,
        body: { model: 'acme/live', max_response_output_tokens: 'inf' },
      });
      assert.equal(lifted.status, 400);
      assert.equal(lifted.body.error.param, 'max_response_output_tokens');
    });
  },
  {
    config: {
      providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }],
      REALTIME_ENABLED: true,
      REALTIME_MAX_SESSION_SECONDS: 60,
      REALTIME_MAX_RESPONSE_OUTPUT_TOKENS: 500,
    },
  },
);
