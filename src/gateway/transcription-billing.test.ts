import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { describeEachDatabase } from '../testing/harness.ts';
import { fundedUser, holdsOf, putModel, usageOf, wallet, wavFile } from './testing.ts';

/**
 * Transcriptions on a token-priced model (gpt-4o-transcribe's kind: audio in, text out), through the official
 * `openai` client, against a real HTTP stand-in that answers as OpenAI does: JSON with `usage.type: "tokens"`
 * and `input_token_details`, or a `stream: true` answer whose `transcript.text.done` event carries the usage.
 */

/** What the stand-in answers next, and the multipart bodies it received. */
let next: { type: string; body: string } = { type: 'application/json', body: '{}' };
const received: string[] = [];
const upstream = createServer((request, response) => {
  const chunks: Buffer[] = [];
  request.on('data', (chunk) => chunks.push(chunk));
  request.on('end', () => {
    const form = Buffer.concat(chunks).toString('latin1');
    received.push(form);
    // As OpenAI does: `response_format: text` answers the bare transcript, with no usage.
    if (/name="response_format"\r\n\r\ntext\r\n/.test(form))
      return void response.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end('hello there\n');
    response.writeHead(200, { 'content-type': next.type }).end(next.body);
  });
});
await new Promise<void>((resolve) => upstream.listen(0, '127.0.0.1', resolve));
after(() => new Promise((resolve) => upstream.close(resolve)));

/** OpenAI's token usage of a transcription: 500 audio and 10 text tokens in, 45 out. */
const TOKEN_USAGE = {
  type: 'tokens',
  input_tokens: 510,
  input_token_details: { text_tokens: 10, audio_tokens: 500 },
  output_tokens: 45,
  total_tokens: 555,
};
/** At 100 (text in), 300 (audio in) and 400 (out) credits per 1M tokens: 10 × 100 + 500 × 300 + 45 × 400. */
const TOKEN_COST = 1_000 + 150_000 + 18_000;

describeEachDatabase(
  'transcriptions billed on tokens',
  (env) => {
    before(() =>
      putModel(env, 'acme/transcribe', {
        provider: 'stand-in',
        upstreamModel: 'gpt-4o-transcribe',
        pricing: { prompt: 100, audioInput: 300, completion: 400 },
        maxOutputTokens: 100,
        inputModalities: ['audio'],
      }),
    );

    const clip = () => new File([wavFile(10)], 'clip.wav', { type: 'audio/wav' });
    const sdk = (key: string) => new OpenAI({ apiKey: key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });

    it('audio input tokens are charged at audioInput and text tokens at prompt, within a hold that covers them', async () => {
      const user = await fundedUser(env, 10);
      next = { type: 'application/json', body: JSON.stringify({ text: 'hello there', usage: TOKEN_USAGE }) };
      const answer = await sdk(user.key).audio.transcriptions.create({ model: 'acme/transcribe', file: clip() });
      assert.equal(answer.text, 'hello there');
      assert.deepEqual(await wallet(env, user), {
        balance: 10_000_000 - TOKEN_COST,
        reserved: 0,
        available: 10_000_000 - TOKEN_COST,
      });
      // 11 s held (10 s + 1) at 50 audio tokens a second, with the prompt margin, at the dearer input price.
      assert.deepEqual(await holdsOf(env, user), [Math.ceil(550 * 1.25 + 16) * 300 + 100 * 400]);
      const [record] = await usageOf(env, user);
      assert.deepEqual([record.prompt_tokens, record.completion_tokens], [510, 45]);
    });

    it('a streamed transcription is charged the usage of its transcript.text.done event', async () => {
      const user = await fundedUser(env, 10);
      const events = [
        { type: 'transcript.text.delta', delta: 'hello' },
        { type: 'transcript.text.delta', delta: ' there' },
        { type: 'transcript.text.done', text: 'hello there', usage: TOKEN_USAGE },
      ];
      next = { type: 'text/event-stream', body: events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('') };
      const stream = await sdk(user.key).audio.transcriptions.create({
        model: 'acme/transcribe',
        file: clip(),
        stream: true,
      });
      const seen: string[] = [];
      for await (const event of stream) seen.push(event.type);
      assert.deepEqual(seen, ['transcript.text.delta', 'transcript.text.delta', 'transcript.text.done']);
      assert.equal((await wallet(env, user)).balance, 10_000_000 - TOKEN_COST);
    });

    it('response_format text is asked upstream as json, so its usage is charged, and answered as text', async () => {
      const user = await fundedUser(env, 10);
      next = { type: 'application/json', body: JSON.stringify({ text: 'hello there', usage: TOKEN_USAGE }) };
      const text = await sdk(user.key).audio.transcriptions.create({
        model: 'acme/transcribe',
        file: clip(),
        response_format: 'text',
      });
      assert.equal(text.trim(), 'hello there');
      assert.equal((await wallet(env, user)).balance, 10_000_000 - TOKEN_COST);
      assert.ok(/name="response_format"\r\n\r\njson\r\n/.test(received.at(-1)!), 'json was asked upstream');
    });

    it('an answer that reports no usage is charged the estimate the hold assumed (50 audio tokens a second) and the counted transcript, never nothing', async () => {
      const user = await fundedUser(env, 10);
      next = { type: 'application/json', body: JSON.stringify({ text: 'hello there' }) };
      const answer = await sdk(user.key).audio.transcriptions.create({ model: 'acme/transcribe', file: clip() });
      assert.equal(answer.text, 'hello there');
      // 10 s × 50 audio tokens at 300, and "hello there" (2 tokens) at 400.
      assert.equal((await wallet(env, user)).balance, 10_000_000 - 500 * 300 - 2 * 400);
    });

    it("a duration usage (whisper-1's kind) on this token-priced model says no token count: charged that same estimate, never nothing", async () => {
      const user = await fundedUser(env, 10);
      next = {
        type: 'application/json',
        body: JSON.stringify({ text: 'hello there', usage: { type: 'duration', seconds: 10 } }),
      };
      await sdk(user.key).audio.transcriptions.create({ model: 'acme/transcribe', file: clip() });
      assert.equal((await wallet(env, user)).balance, 10_000_000 - 500 * 300 - 2 * 400);
      const [record] = await usageOf(env, user);
      assert.equal(Number(record!.cost), 500 * 300 + 2 * 400);
    });

    it('a token usage whose counts are missing or unusable is charged that same estimate for them, never nothing', async () => {
      for (const usage of [
        { type: 'tokens' },
        { type: 'tokens', input_tokens: 'many', output_tokens: null },
        { type: 'tokens', input_tokens: -5, output_tokens: Number.NaN },
      ]) {
        const user = await fundedUser(env, 10);
        next = { type: 'application/json', body: JSON.stringify({ text: 'hello there', usage }) };
        await sdk(user.key).audio.transcriptions.create({ model: 'acme/transcribe', file: clip() });
        assert.equal((await wallet(env, user)).balance, 10_000_000 - 500 * 300 - 2 * 400, JSON.stringify(usage));
      }
      // A count that is usable is still taken as reported, the other one estimated.
      const user = await fundedUser(env, 10);
      next = {
        type: 'application/json',
        body: JSON.stringify({
          text: 'hello there',
          usage: { type: 'tokens', input_tokens: 510, input_token_details: { text_tokens: 10 } },
        }),
      };
      await sdk(user.key).audio.transcriptions.create({ model: 'acme/transcribe', file: clip() });
      assert.equal((await wallet(env, user)).balance, 10_000_000 - 10 * 100 - 500 * 300 - 2 * 400);
    });

    it("a diarizing call's speaker references all reach the upstream, in order, and are held and estimated as input audio", async () => {
      const user = await fundedUser(env, 10);
      const reference = (seconds: number) =>
        `data:audio/wav;base64,${Buffer.from(wavFile(seconds)).toString('base64')}`;
      next = { type: 'application/json', body: JSON.stringify({ text: 'hello there' }) };
      await sdk(user.key).audio.transcriptions.create({
        model: 'acme/transcribe',
        file: clip(),
        known_speaker_names: ['agent', 'customer'],
        known_speaker_references: [reference(5), reference(3)],
      });
      const sent = received.at(-1)!;
      const values = (name: string) =>
        [...sent.matchAll(new RegExp(`name="${name.replace(/[[\]]/g, '\\$&')}"\r\n\r\n([^\r]*)\r\n`, 'g'))].map(
          (match) => match[1],
        );
      assert.deepEqual(values('known_speaker_names[]'), ['agent', 'customer']);
      assert.deepEqual(values('known_speaker_references[]'), [reference(5), reference(3)]);
      // Held: (10 s + 1 + 5 + 3) at 50 audio tokens a second, with the prompt margin, at the dearer input price.
      assert.deepEqual(await holdsOf(env, user), [Math.ceil(950 * 1.25 + 16) * 300 + 100 * 400]);
      // No usage reported: the file's and the references' 18 s × 50 audio tokens at 300, the transcript at 400.
      assert.equal((await wallet(env, user)).balance, 10_000_000 - 900 * 300 - 2 * 400);
    });

    it('a field longer than 1 MiB (a prompt, a speaker reference) is a 413 naming it, not cut short and sent; nothing held or sent', async () => {
      // Enough for the hold of a 1 MiB prompt, which the last call sends.
      const user = await fundedUser(env, 100);
      const sentBefore = received.length;
      const long = 'x'.repeat(1024 * 1024 + 1);
      for (const [name, value] of [
        ['prompt', long],
        ['known_speaker_references[]', `data:audio/wav;base64,${long}`],
      ]) {
        const form = new FormData();
        form.append('model', 'acme/transcribe');
        form.append('file', clip());
        form.append(name!, value!);
        const response = await fetch(`${env.baseUrl}/api/v1/audio/transcriptions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${user.key}` },
          body: form,
        });
        const body = (await response.json()) as any;
        assert.equal(response.status, 413, JSON.stringify(body));
        assert.equal(body.error.code, 'PAYLOAD_TOO_LARGE');
        assert.equal(body.error.param, name);
        assert.match(body.error.message, /longer than the 1048576 bytes/);
      }
      // Exactly the limit still goes through.
      next = { type: 'application/json', body: JSON.stringify({ text: 'hello there', usage: TOKEN_USAGE }) };
      const form = new FormData();
      form.append('model', 'acme/transcribe');
      form.append('file', clip());
      form.append('prompt', 'x'.repeat(1024 * 1024));
      const ok = await fetch(`${env.baseUrl}/api/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}` },
        body: form,
      });
      assert.equal(ok.status, 200, await ok.text());
      assert.equal(received.length, sentBefore + 1);
      assert.ok(received.at(-1)!.includes('x'.repeat(1024 * 1024)), 'the whole prompt was sent');
    });

    it('a speaker reference whose duration cannot be read is a 400 naming it; nothing held, nothing sent upstream', async () => {
      const user = await fundedUser(env, 10);
      const sentBefore = received.length;
      for (const bad of ['https://example.com/agent.wav', 'data:audio/wav;base64,AAAA', 'not audio']) {
        const form = new FormData();
        form.append('model', 'acme/transcribe');
        form.append('file', clip());
        form.append(
          'known_speaker_references[]',
          `data:audio/wav;base64,${Buffer.from(wavFile(2)).toString('base64')}`,
        );
        form.append('known_speaker_references[]', bad);
        const response = await fetch(`${env.baseUrl}/api/v1/audio/transcriptions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${user.key}` },
          body: form,
        });
        const body = (await response.json()) as any;
        assert.equal(response.status, 400, JSON.stringify(body));
        assert.equal(body.error.code, 'AUDIO_DURATION_UNREADABLE');
        assert.equal(body.error.param, 'known_speaker_references[1]');
      }
      assert.equal(received.length, sentBefore);
      assert.deepEqual(await holdsOf(env, user), []);
      assert.equal((await wallet(env, user)).balance, 10_000_000);
    });
  },
  {
    config: {
      providers: [{ name: 'stand-in', baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1` }],
    },
  },
);

describeEachDatabase(
  "a transcription upload beyond the route's limits",
  (env) => {
    before(() =>
      putModel(env, 'acme/transcribe', {
        provider: 'stand-in',
        upstreamModel: 'gpt-4o-transcribe',
        pricing: { prompt: 100, audioInput: 300, completion: 400 },
        inputModalities: ['audio'],
      }),
    );

    const post = (key: string, form: FormData) =>
      fetch(`${env.baseUrl}/api/v1/audio/transcriptions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}` },
        body: form,
      });

    it('a file over BODY_LIMIT_UPLOAD_BYTES is a 413 PAYLOAD_TOO_LARGE that names the limit, through the openai client; nothing held', async () => {
      const user = await fundedUser(env, 10);
      const client = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      await assert.rejects(
        client.audio.transcriptions.create({
          model: 'acme/transcribe',
          file: new File([wavFile(2)], 'big.wav', { type: 'audio/wav' }),
        }),
        (error: any) =>
          error.status === 413 &&
          error.code === 'PAYLOAD_TOO_LARGE' &&
          /larger than the 1024 bytes .*BODY_LIMIT_UPLOAD_BYTES/.test(error.message),
      );
      assert.deepEqual(await holdsOf(env, user), []);
    });

    it('a second file is a 400 INVALID_REQUEST asking for one "file"; nothing held', async () => {
      const user = await fundedUser(env, 10);
      const form = new FormData();
      form.append('model', 'acme/transcribe');
      form.append('file', new Blob([wavFile(0.01)]), 'a.wav');
      form.append('extra', new Blob([wavFile(0.01)]), 'b.wav');
      const response = await post(user.key, form);
      const body = (await response.json()) as any;
      assert.equal(response.status, 400, JSON.stringify(body));
      assert.equal(body.error.code, 'INVALID_REQUEST');
      assert.match(body.error.message, /one file/);
      assert.deepEqual(await holdsOf(env, user), []);
    });

    it('a malformed multipart body (no boundary, cut short, a boundary past 256 characters) is a 400 INVALID_REQUEST saying so, never a 500; nothing held', async () => {
      const user = await fundedUser(env, 10);
      const part = (boundary: string) =>
        `--${boundary}\r\nContent-Disposition: form-data; name="model"\r\n\r\nacme/transcribe\r\n--${boundary}\r\n` +
        `Content-Disposition: form-data; name="file"; filename="a.wav"\r\nContent-Type: audio/wav\r\n\r\nRIFF`;
      const long = 'b'.repeat(300);
      for (const [contentType, body] of [
        ['multipart/form-data', `${part('zz')}\r\n--zz--\r\n`],
        ['multipart/form-data; boundary=zz', part('zz')],
        [`multipart/form-data; boundary=${long}`, `${part(long)}\r\n--${long}--\r\n`],
      ]) {
        const response = await fetch(`${env.baseUrl}/api/v1/audio/transcriptions`, {
          method: 'POST',
          headers: { authorization: `Bearer ${user.key}`, 'content-type': contentType! },
          body,
        });
        const answer = (await response.json()) as any;
        assert.equal(response.status, 400, `${contentType!.slice(0, 40)}: ${JSON.stringify(answer)}`);
        assert.equal(answer.error.code, 'INVALID_REQUEST');
        assert.match(answer.error.message, /^The multipart body is malformed/);
      }
      assert.deepEqual(await holdsOf(env, user), []);
    });
  },
  {
    config: {
      BODY_LIMIT_UPLOAD_BYTES: 1024,
      providers: [{ name: 'stand-in', baseUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}/v1` }],
    },
  },
);
