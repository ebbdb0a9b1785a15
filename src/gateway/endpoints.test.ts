import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { Agent, getGlobalDispatcher, setGlobalDispatcher } from 'undici';
import OpenAI from 'openai';
import { describeEachDatabase } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, usageOf, wallet, wavFile } from './testing.ts';

const mock = await startMockUpstream();
after(() => mock.close());

describeEachDatabase(
  'embeddings, images, audio and realtime sessions',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/embed', {
        provider: 'mock',
        upstreamModel: 'embed-1',
        pricing: { prompt: 1000 },
        outputModalities: ['embedding'],
      });
      await putModel(env, 'acme/draw', {
        provider: 'mock',
        upstreamModel: 'draw-1',
        pricing: { request: 0.01, image: 0.5 },
        imagePrices: { '*/256x256': 0.5 },
        outputModalities: ['image'],
      });
      // Token-priced, as OpenAI bills gpt-image-1: no per-image price; output image tokens at `completion`.
      await putModel(env, 'acme/gpt-image', {
        provider: 'mock',
        upstreamModel: 'gpt-image-1',
        pricing: { request: 0.001, prompt: 5, completion: 40 },
        outputModalities: ['image'],
      });
      await putModel(env, 'acme/quiet-painter', {
        provider: 'mock',
        upstreamModel: 'painter-2',
        pricing: { completion: 40 },
        maxOutputTokens: 1000,
        outputModalities: ['image'],
      });
      await putModel(env, 'acme/voice', {
        provider: 'mock',
        upstreamModel: 'tts-1',
        pricing: { prompt: 1000, request: 0.001 },
        outputModalities: ['audio'],
      });
      await putModel(env, 'acme/listen', {
        provider: 'mock',
        upstreamModel: 'whisper-1',
        pricing: { request: 0.001, second: 0.01 },
        maxPredictSeconds: 600,
        inputModalities: ['audio'],
      });
      await putModel(env, 'acme/live', {
        provider: 'mock',
        upstreamModel: 'realtime-1',
        pricing: { request: 0.05 },
        outputModalities: ['audio'],
      });
    });

    it('embeddings are billed on the prompt tokens the upstream reports and need ai:embeddings', async () => {
      const user = await fundedUser(env, 10);
      const response = await env.request('POST', '/api/v1/embeddings', {
        token: user.key,
        body: { model: 'acme/embed', input: ['a', 'b'], dimensions: 3 },
      });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.model, 'acme/embed');
      assert.equal(response.body.data.length, 2);
      assert.equal(mock.requests.at(-1)!.body.dimensions, 3);
      assert.equal((await wallet(env, user)).balance, 10_000_000 - 11 * 1000);
      const chatOnly = await fundedUser(env, 10, ['ai:chat']);
      assert.equal(
        (
          await env.request('POST', '/api/v1/embeddings', {
            token: chatOnly.key,
            body: { model: 'acme/embed', input: 'a' },
          })
        ).status,
        403,
      );
    });

    it("an embeddings answer's usage is what was billed: the tokens charged and cost in credits, never the upstream's own cost or garbage", async () => {
      const user = await fundedUser(env, 10);
      // OpenRouter reports its own cost, in USD: the caller must see the credits it was charged instead.
      const routed = await env.request('POST', '/api/v1/embeddings', {
        token: user.key,
        body: {
          model: 'acme/embed',
          input: 'a',
          mock_usage: { prompt_tokens: 7, total_tokens: 7, cost: 0.5, cost_details: { upstream_inference_cost: 0.5 } },
        },
      });
      assert.equal(routed.status, 200, routed.text);
      assert.deepEqual(routed.body.usage, { prompt_tokens: 7, total_tokens: 7, cost: 0.007 });
      assert.equal((await wallet(env, user)).balance, 10_000_000 - 7 * 1000);
      // An unusable count is replaced by the gateway's own, in the answer as in the charge.
      const garbage = await env.request('POST', '/api/v1/embeddings', {
        token: user.key,
        body: { model: 'acme/embed', input: 'a', mock_usage: { prompt_tokens: -5, total_tokens: 'many' } },
      });
      assert.equal(garbage.status, 200, garbage.text);
      const charged = 10_000_000 - 7 * 1000 - (await wallet(env, user)).balance;
      const counted = charged / 1000; // micro-credits at 1000 credits per 1M tokens: 1000 a token
      assert.ok(Number.isInteger(counted) && counted > 0, String(charged));
      assert.deepEqual(garbage.body.usage, {
        prompt_tokens: counted,
        total_tokens: counted,
        cost: charged / 1_000_000,
      });
      const echo = await env.request('POST', '/api/v1/embeddings', {
        token: user.key,
        body: { model: 'tollgate/echo', input: 'hello world' },
      });
      assert.equal(echo.status, 200, echo.text);
      assert.equal(echo.body.usage.cost, (echo.body.usage.prompt_tokens * 1) / 1_000_000);
    });

    it("vectors asked for as base64 (the official SDK's default) come back as base64 even from an upstream that sends numbers", async () => {
      const user = await fundedUser(env, 10);
      const decode = (text: string) => {
        const bytes = Buffer.from(text, 'base64');
        return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readFloatLE(i * 4));
      };
      const floats32 = [0.1, 0.2, 0.3].map(Math.fround);
      for (const ignores of [false, true]) {
        const response = await env.request('POST', '/api/v1/embeddings', {
          token: user.key,
          body: {
            model: 'acme/embed',
            input: ['a', 'b'],
            encoding_format: 'base64',
            mock_ignore_encoding_format: ignores,
          },
        });
        assert.equal(response.status, 200, response.text);
        for (const item of response.body.data) {
          assert.equal(typeof item.embedding, 'string', `upstream ignores the format: ${ignores}`);
          assert.deepEqual(decode(item.embedding), floats32);
        }
      }
      // Asked for floats (or nothing), floats come back untouched.
      const floats = await env.request('POST', '/api/v1/embeddings', {
        token: user.key,
        body: { model: 'acme/embed', input: 'a', encoding_format: 'float' },
      });
      assert.deepEqual(floats.body.data[0].embedding, [0.1, 0.2, 0.3]);
    });

    it('the echo model embeds too, deterministically, so embeddings work with no provider', async () => {
      const user = await fundedUser(env, 10);
      const one = await env.request('POST', '/api/v1/embeddings', {
        token: user.key,
        body: { model: 'tollgate/echo', input: 'same' },
      });
      const two = await env.request('POST', '/api/v1/embeddings', {
        token: user.key,
        body: { model: 'tollgate/echo', input: 'same' },
      });
      assert.equal(one.status, 200);
      assert.deepEqual(one.body.data[0].embedding, two.body.data[0].embedding);
    });

    it('images are charged request + image × the images returned', async () => {
      const user = await fundedUser(env, 10);
      const response = await env.request('POST', '/api/v1/images/generations', {
        token: user.key,
        body: { model: 'acme/draw', prompt: 'a cat', n: 2, size: '256x256' },
      });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.data.length, 2);
      assert.equal(mock.requests.at(-1)!.body.size, '256x256');
      assert.equal((await wallet(env, user)).balance, 10_000_000 - 10_000 - 2 * 500_000);
    });

    it('a token-priced image model (no per-image price) is charged the output tokens its upstream reports, at completion, with usage.cost in the answer', async () => {
      const user = await fundedUser(env, 10);
      const response = await env.request('POST', '/api/v1/images/generations', {
        token: user.key,
        body: { model: 'acme/gpt-image', prompt: 'a cat', n: 2 },
      });
      assert.equal(response.status, 200, response.text);
      // The mock reports what OpenAI does for two 1024×1024 images of quality auto: 4,160 output tokens each.
      assert.equal(response.body.usage.output_tokens, 8320);
      const cost = 1000 + 2 * 5 + 8320 * 40;
      assert.equal(response.body.usage.cost, cost / 1e6);
      assert.equal((await wallet(env, user)).balance, 10_000_000 - cost);
      const [record] = await usageOf(env, user);
      assert.deepEqual([Number(record!.cost), record!.prompt_tokens, record!.completion_tokens], [cost, 2, 8320]);
    });

    it('a token-priced image model takes any quality and size: its output tokens bound them', async () => {
      const user = await fundedUser(env, 10);
      const response = await env.request('POST', '/api/v1/images/generations', {
        token: user.key,
        body: { model: 'acme/gpt-image', prompt: 'a cat', quality: 'low', size: '1536x1024' },
      });
      assert.equal(response.status, 200, response.text);
      assert.equal(mock.requests.at(-1)!.body.size, '1536x1024');
      assert.equal((await wallet(env, user)).balance, 10_000_000 - (1000 + 2 * 5 + 272 * 40));
    });

    it('a token-priced image call is held for n images at the output bound (6,240 tokens unless the model sets maxOutputTokens): a wallet short of it gets the 402', async () => {
      const user = await fundedUser(env, 0.4);
      const response = await env.request('POST', '/api/v1/images/generations', {
        token: user.key,
        body: { model: 'acme/gpt-image', prompt: 'a cat', n: 2 },
      });
      assert.equal(response.status, 402, response.text);
      assert.equal(response.body.error.code, 'INSUFFICIENT_CREDITS');
      assert.ok(response.body.error.required > (2 * 6240 * 40) / 1e6, response.text);
      assert.equal((await wallet(env, user)).balance, 400_000);
    });

    it("a token-priced image model whose upstream reports no usage is charged each returned image at the model's output bound", async () => {
      const user = await fundedUser(env, 10);
      const response = await env.request('POST', '/api/v1/images/generations', {
        token: user.key,
        body: { model: 'acme/quiet-painter', prompt: 'a cat' },
      });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.usage.cost, 0.04);
      assert.equal((await wallet(env, user)).balance, 10_000_000 - 1000 * 40);
    });

    it('a model whose provider cannot do the task is a 400 and holds nothing', async () => {
      const user = await fundedUser(env, 10);
      const response = await env.request('POST', '/api/v1/images/generations', {
        token: user.key,
        body: { model: 'tollgate/echo', prompt: 'a cat' },
      });
      assert.equal(response.status, 400);
      assert.equal(response.body.error.code, 'INVALID_REQUEST');
      assert.equal((await wallet(env, user)).balance, 10_000_000);
    });

    it('speech relays the audio bytes with their content type, billed on the input tokens', async () => {
      const user = await fundedUser(env, 10);
      const response = await fetch(`${env.baseUrl}/api/v1/audio/speech`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'acme/voice', input: 'hello world', voice: 'alloy' }),
      });
      assert.equal(response.status, 200);
      assert.equal(response.headers.get('content-type'), 'audio/mpeg');
      assert.equal(Buffer.from(await response.arrayBuffer()).toString(), 'ID3-mock-audio-hello world');
      assert.equal((await wallet(env, user)).balance, 10_000_000 - 1000 - 2 * 1000);
    });

    /** A 10-second WAV to acme/listen as the multipart form a client sends, with `fields` beside it. */
    const transcribe = (key: string, fields: Record<string, string> = {}) => {
      const form = new FormData();
      form.append('model', 'acme/listen');
      for (const [name, value] of Object.entries(fields)) form.append(name, value);
      form.append('file', new Blob([wavFile(10)], { type: 'audio/wav' }), 'clip.wav');
      return fetch(`${env.baseUrl}/api/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: form,
      });
    };

    it('transcriptions accept multipart, replace the model and are billed on the reported duration', async () => {
      const user = await fundedUser(env, 10);
      const response = await transcribe(user.key, { language: 'en' });
      assert.equal(response.status, 200, await response.clone().text());
      assert.equal((await response.json()).text, 'alpha beta gamma delta');
      const sent = mock.requests.at(-1)!.body.multipart as string;
      assert.match(sent, /name="model"\r\n\r\nwhisper-1\r\n/);
      assert.match(sent, /name="language"\r\n\r\nen\r\n/);
      assert.match(sent, /filename="clip.wav"/);
      // 7 seconds reported × 0.01 + 0.001 per request.
      assert.equal((await wallet(env, user)).balance, 10_000_000 - 1000 - 70_000);
      const [record] = await usageOf(env, user);
      assert.equal(record.kind, 'transcriptions');
    });

    it("a translation (the openai SDK's audio.translations.create) reaches the upstream's /audio/translations, needs ai:audio and, reporting no duration, is charged the file's", async () => {
      const user = await fundedUser(env, 10);
      const openai = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      const answer = await openai.audio.translations.create({
        model: 'acme/listen',
        file: new File([wavFile(10)], 'clip.wav', { type: 'audio/wav' }),
        prompt: 'A greeting.',
      });
      assert.equal(answer.text, 'good morning');
      const sent = mock.requests.at(-1)!;
      assert.equal(sent.path, '/v1/audio/translations');
      assert.match(sent.body.multipart, /name="model"\r\n\r\nwhisper-1\r\n/);
      assert.match(sent.body.multipart, /name="prompt"\r\n\r\nA greeting.\r\n/);
      // The file's 10 seconds (read from its header) × 0.01 + 0.001 per request.
      assert.equal((await wallet(env, user)).balance, 10_000_000 - 1000 - 100_000);
      const [record] = await usageOf(env, user);
      assert.equal(record.kind, 'translations');
      const chatOnly = await fundedUser(env, 10, ['ai:chat']);
      const form = new FormData();
      form.append('model', 'acme/listen');
      form.append('file', new File([wavFile(1)], 'clip.wav', { type: 'audio/wav' }));
      const denied = await fetch(`${env.baseUrl}/api/v1/audio/translations`, {
        method: 'POST',
        headers: { authorization: `Bearer ${chatOnly.key}` },
        body: form,
      });
      assert.equal(denied.status, 403);
      assert.equal((await wallet(env, chatOnly)).balance, 10_000_000);
    });

    it("the openai SDK's array options (timestamp_granularities[], include[]) reach the upstream whole; a plain field once", async () => {
      const user = await fundedUser(env, 10);
      await new OpenAI({
        apiKey: user.key,
        baseURL: `${env.baseUrl}/api/v1`,
        maxRetries: 0,
      }).audio.transcriptions.create({
        model: 'acme/listen',
        file: new File([wavFile(10)], 'clip.wav', { type: 'audio/wav' }),
        response_format: 'verbose_json',
        timestamp_granularities: ['word', 'segment'],
        include: ['logprobs'],
      });
      const sent = mock.requests.at(-1)!.body.multipart as string;
      const values = (name: string) =>
        [...sent.matchAll(new RegExp(`name="${name.replace(/[[\]]/g, '\\$&')}"\r\n\r\n([^\r]*)\r\n`, 'g'))].map(
          (match) => match[1],
        );
      assert.deepEqual(values('timestamp_granularities[]'), ['word', 'segment']);
      assert.deepEqual(values('include[]'), ['logprobs']);
      assert.deepEqual(values('response_format'), ['verbose_json']);
      assert.deepEqual(values('model'), ['whisper-1']);
    });

    it("a transcription reaches the upstream when the npm undici made the global dispatcher (as in the served bundle), not Node's own", async () => {
      // Which undici owns the process-wide dispatcher depends on which one was used first: this file's `fetch` made
      // it Node's, while the served bundle calls upstreams first and so makes it the npm package's, whose
      // `request` refuses a FormData of Node's (every transcription was a 502).
      const previous = getGlobalDispatcher();
      setGlobalDispatcher(new Agent());
      try {
        const user = await fundedUser(env, 10);
        const response = await transcribe(user.key);
        assert.equal(response.status, 200, await response.clone().text());
        assert.equal((await response.json()).text, 'alpha beta gamma delta');
        const sent = mock.requests.at(-1)!;
        assert.match(String(sent.headers['content-type']), /^multipart\/form-data; boundary=/);
        assert.match(sent.body.multipart, /name="model"\r\n\r\nwhisper-1\r\n/);
        assert.match(sent.body.multipart, /filename="clip.wav"/);
        assert.equal((await wallet(env, user)).balance, 10_000_000 - 1000 - 70_000);
      } finally {
        setGlobalDispatcher(previous);
      }
    });

    it('multipart is accepted only by the transcription route', async () => {
      const user = await fundedUser(env, 10);
      const form = new FormData();
      form.append('model', 'tollgate/echo');
      const response = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}` },
        body: form,
      });
      assert.equal(response.status, 415);
    });

    it('a realtime session is minted upstream, needs ai:audio and is billed its request price (no per-second price set)', async () => {
      const user = await fundedUser(env, 10);
      const response = await env.request('POST', '/api/v1/realtime/sessions', {
        token: user.key,
        body: { model: 'acme/live', voice: 'verse' },
      });
      assert.equal(response.status, 200, response.text);
      assert.equal(response.body.client_secret.value, 'ek_mock_secret');
      assert.equal(response.body.model, 'acme/live');
      assert.equal(mock.requests.at(-1)!.body.model, 'realtime-1');
      assert.equal((await wallet(env, user)).balance, 10_000_000 - 50_000);
      const chatOnly = await fundedUser(env, 10, ['ai:chat']);
      assert.equal(
        (await env.request('POST', '/api/v1/realtime/sessions', { token: chatOnly.key, body: { model: 'acme/live' } }))
          .status,
        403,
      );
    });
  },
  { config: { providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }], REALTIME_ENABLED: true } },
);
