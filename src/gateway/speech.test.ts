import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import OpenAI from 'openai';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { MOCK_SPEECH_USAGE, startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { countTextTokens } from '../providers/tokens.ts';
import { fundedUser, holdsOf, putModel, readSseFrames, settled, usageOf, type FundedUser } from './testing.ts';

const mock = await startMockUpstream();
after(() => mock.close());

/**
 * A token-priced speech model as OpenAI prices gpt-4o-mini-tts: 0.6 credits per 1M text input tokens, 12 per
 * 1M audio output tokens, plus 0.001 a request; its output cap 2,000 tokens. In micro-credits: 0.6 an input
 * token, 12 an output token, 1,000 a request.
 */
const TOKEN_PRICING = { prompt: 0.6, audioOutput: 12, request: 0.001 };
/** The charge of `input` + `output` tokens, in micro-credits, worked out by hand from the prices above. */
const charge = (input: number, output: number) => 1_000 + Math.ceil((input * 6) / 10 + output * 12);

const client = (env: TestEnv, user: FundedUser) =>
  new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });

/** The ledger's own check, through the operator API. */
async function assertLedgerVerifies(env: TestEnv): Promise<void> {
  const verify = await env.admin('GET', '/api/admin/ledger/verify');
  assert.equal(verify.status, 200, verify.text);
  assert.equal(verify.body.ok, true, verify.text);
}

/** The speech events of an event-stream answer, and the audio their deltas carry. */
async function speechEventsOf(response: Response) {
  const events = (await readSseFrames(response)).map((frame) => frame.data);
  const audio = Buffer.concat(
    events.filter((e) => e.type === 'speech.audio.delta').map((e) => Buffer.from(e.audio, 'base64')),
  );
  return { events, audio };
}

const post = (env: TestEnv, user: FundedUser, body: Record<string, unknown>, signal?: AbortSignal) =>
  fetch(`${env.baseUrl}/api/v1/audio/speech`, {
    method: 'POST',
    headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });

describeEachDatabase(
  'speech on token-priced models: the audio output is billed as reported',
  (env) => {
    before(async () => {
      for (const [id, upstreamModel] of [
        ['acme/tts-tokens', 'gpt-4o-mini-tts'],
        ['acme/tts-cut', 'cut-2'],
        ['acme/tts-cut-early', 'cut-0'],
        ['acme/tts-stall', 'stall-2'],
        ['acme/tts-silent', 'no-usage'],
        ['acme/tts-error', 'error-frame-2'],
      ])
        await putModel(env, id!, {
          provider: 'mock',
          upstreamModel,
          pricing: TOKEN_PRICING,
          maxOutputTokens: 2_000,
          outputModalities: ['audio'],
        });
      await putModel(env, 'acme/tts-chars', {
        provider: 'mock',
        upstreamModel: 'tts-1',
        pricing: { prompt: 1000, request: 0.001 },
        outputModalities: ['audio'],
      });
      await putModel(env, 'acme/tts-down', {
        provider: 'mock',
        upstreamModel: 'status-503',
        pricing: TOKEN_PRICING,
        maxOutputTokens: 2_000,
        outputModalities: ['audio'],
        fallbacks: ['acme/tts-chars'],
      });
      await putModel(env, 'acme/tts-refused', {
        provider: 'mock',
        upstreamModel: 'status-400',
        pricing: TOKEN_PRICING,
        outputModalities: ['audio'],
      });
    });

    it('the official client gets the audio bytes, and the call is charged its reported input and audio output tokens exactly', async () => {
      const user = await fundedUser(env, 1);
      const speech = await client(env, user).audio.speech.create({
        model: 'acme/tts-tokens',
        input: 'hello world',
        voice: 'alloy',
      });
      assert.equal(speech.headers.get('content-type'), 'audio/mpeg');
      assert.equal(Buffer.from(await speech.arrayBuffer()).toString(), 'ID3-mock-audio-hello world');
      // Upstream, the call was asked as an event stream: only its done event reports the usage.
      assert.equal(mock.requests.at(-1)!.body.stream_format, 'sse');
      // 11 input + 420 audio output tokens: 1,000 + 6.6 + 5,040, rounded up once.
      assert.equal(charge(MOCK_SPEECH_USAGE.input_tokens, MOCK_SPEECH_USAGE.output_tokens), 6_047);
      assert.deepEqual(await settled(env, user), { balance: 1_000_000 - 6_047, reserved: 0, available: 993_953 });
      // The hold bounded the worst case: the input with the tokenizer margin (19 tokens) and 2,000 output tokens.
      assert.deepEqual(await holdsOf(env, user), [1_000 + Math.ceil(19 * 0.6 + 2_000 * 12)]);
      const [record] = await usageOf(env, user);
      assert.equal(record!.kind, 'speech');
      assert.equal(record!.status, 'ok');
      assert.equal(Number(record!.prompt_tokens), 11);
      assert.equal(Number(record!.completion_tokens), 420);
      await assertLedgerVerifies(env);
    });

    it('with stream_format "sse", the official client gets the upstream events as sent, and the same exact charge', async () => {
      const user = await fundedUser(env, 1);
      const speech = await client(env, user).audio.speech.create({
        model: 'acme/tts-tokens',
        input: 'hello world',
        voice: 'alloy',
        stream_format: 'sse',
      });
      assert.match(speech.headers.get('content-type') ?? '', /^text\/event-stream/);
      const { events, audio } = await speechEventsOf(speech);
      assert.equal(audio.toString(), 'ID3-mock-audio-hello world');
      assert.deepEqual(events.at(-1), { type: 'speech.audio.done', usage: MOCK_SPEECH_USAGE });
      assert.deepEqual(await settled(env, user), { balance: 993_953, reserved: 0, available: 993_953 });
      await assertLedgerVerifies(env);
    });

    it('the charge follows the usage the provider reports, and is never above the hold', async () => {
      const user = await fundedUser(env, 1);
      const reported = await post(env, user, {
        model: 'acme/tts-tokens',
        input: 'hello world',
        mock_usage: { input_tokens: 30, output_tokens: 1_500, total_tokens: 1_530 },
      });
      assert.equal(reported.status, 200);
      await reported.arrayBuffer();
      assert.equal((await settled(env, user)).balance, 1_000_000 - charge(30, 1_500));
      // More audio than the model's cap: charged the hold, the rest recorded as not collected.
      const beyond = await post(env, user, {
        model: 'acme/tts-tokens',
        input: 'hello world',
        mock_usage: { input_tokens: 11, output_tokens: 10_000 },
      });
      await beyond.arrayBuffer();
      const [, held] = await holdsOf(env, user);
      assert.equal((await settled(env, user)).balance, 1_000_000 - charge(30, 1_500) - held!);
      // Garbage counts are estimated, never charged as nothing: the input as counted, the output from the audio.
      const garbage = await post(env, user, {
        model: 'acme/tts-tokens',
        input: 'hello world',
        response_format: 'pcm',
        mock_usage: { input_tokens: -4, output_tokens: 'lots' },
      });
      assert.equal(garbage.headers.get('content-type'), 'audio/pcm');
      await garbage.arrayBuffer();
      const estimated = charge(countTextTokens('hello world'), 1); // 26 bytes of PCM: under a second, 1 token
      assert.equal((await settled(env, user)).balance, 1_000_000 - charge(30, 1_500) - held! - estimated);
      await assertLedgerVerifies(env);
    });

    it('a stream the client leaves is charged for the audio it produced, and its hold closes', async () => {
      const user = await fundedUser(env, 1);
      const controller = new AbortController();
      const sent = mock.requests.length;
      const response = await post(
        env,
        user,
        { model: 'acme/tts-stall', input: 'hello world', response_format: 'wav' },
        controller.signal,
      );
      const reader = response.body!.getReader();
      let bytes = 0;
      while (bytes < 'ID3-mock-audio-hello'.length) bytes += (await reader.read()).value!.length;
      controller.abort();
      await mock.settled(sent + 1);
      const after = await settled(env, user);
      // 20 bytes of 24 kHz 16-bit audio, under a second: 1 audio token, and the input as counted.
      assert.equal(after.balance, 1_000_000 - charge(countTextTokens('hello world'), 1));
      const [record] = await usageOf(env, user);
      assert.equal(record!.status, 'client_aborted');
      assert.equal(mock.requests.at(-1)!.aborted, true);
      await assertLedgerVerifies(env);
    });

    it('a stream the upstream cuts, or that ends without usage, is charged an estimate of what it produced, never nothing', async () => {
      const user = await fundedUser(env, 1);
      const cut = await post(env, user, { model: 'acme/tts-cut', input: 'hello world' });
      assert.equal(cut.status, 200);
      await assert.rejects(cut.arrayBuffer());
      // 20 bytes of compressed audio, estimated at 32 kbit/s: 0.005 s, 1 audio token.
      const afterCut = await settled(env, user);
      assert.equal(afterCut.balance, 1_000_000 - charge(countTextTokens('hello world'), 1));
      assert.equal((await usageOf(env, user))[0]!.status, 'upstream_error');

      const events = await post(env, user, { model: 'acme/tts-error', input: 'hello world', stream_format: 'sse' });
      const { events: frames } = await speechEventsOf(events);
      assert.equal(frames.at(-1).type, 'error');
      assert.equal(frames.at(-1).error.code, 'UPSTREAM_ERROR');
      const afterError = await settled(env, user);
      assert.equal(afterError.balance, afterCut.balance - charge(countTextTokens('hello world'), 1));

      const silent = await post(env, user, { model: 'acme/tts-silent', input: 'hello world' });
      assert.equal(Buffer.from(await silent.arrayBuffer()).toString(), 'ID3-mock-audio-hello world');
      assert.equal((await settled(env, user)).balance, afterError.balance - charge(countTextTokens('hello world'), 1));
      await assertLedgerVerifies(env);
    });

    it('a per-character model is still asked for plain audio and charged its input tokens', async () => {
      const user = await fundedUser(env, 1);
      const speech = await client(env, user).audio.speech.create({
        model: 'acme/tts-chars',
        input: 'hello world',
        voice: 'alloy',
      });
      assert.equal(Buffer.from(await speech.arrayBuffer()).toString(), 'ID3-mock-audio-hello world');
      assert.equal(mock.requests.at(-1)!.body.stream_format, undefined);
      assert.deepEqual(await settled(env, user), {
        balance: 1_000_000 - 1_000 - 1_000 * countTextTokens('hello world'),
        reserved: 0,
        available: 1_000_000 - 1_000 - 1_000 * countTextTokens('hello world'),
      });
    });

    it('a token-priced model that fails before any audio falls back to a per-character one, held for the dearer of the two and charged what answered', async () => {
      const user = await fundedUser(env, 1);
      const speech = await client(env, user).audio.speech.create({
        model: 'acme/tts-down',
        input: 'hello world',
        voice: 'alloy',
      });
      assert.equal(Buffer.from(await speech.arrayBuffer()).toString(), 'ID3-mock-audio-hello world');
      assert.deepEqual(await holdsOf(env, user), [1_000 + Math.ceil(19 * 0.6 + 2_000 * 12)]);
      const perCharacter = 1_000 + 1_000 * countTextTokens('hello world');
      assert.equal((await settled(env, user)).balance, 1_000_000 - perCharacter);
    });

    it('an upstream refusal or a stream broken before any audio releases the hold: nothing is charged, and without maxOutputTokens the hold assumed 4,096 audio tokens', async () => {
      const user = await fundedUser(env, 1);
      const refused = await post(env, user, { model: 'acme/tts-refused', input: 'hello world' });
      assert.equal(refused.status, 400);
      assert.equal((await refused.json()).error.code, 'INVALID_REQUEST');
      assert.deepEqual(await holdsOf(env, user), [1_000 + Math.ceil(19 * 0.6 + 4_096 * 12)]);
      // A stream that breaks before its first audio is a failure before output too (a 502, the hold released).
      const broken = await post(env, user, { model: 'acme/tts-cut-early', input: 'hello world' });
      assert.equal(broken.status, 502);
      assert.equal((await broken.json()).error.code, 'UPSTREAM_ERROR');
      assert.deepEqual(await settled(env, user), { balance: 1_000_000, reserved: 0, available: 1_000_000 });
      await assertLedgerVerifies(env);
    });
  },
  { config: { providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }] } },
);

/**
 * A client that leaves while a per-character speech call is settled (the upstream has answered; the hold is being
 * turned into a charge). The settle is held back by a transaction of the test on the user's wallet, the client
 * goes, then the transaction ends.
 */
const leftDuringSettle = { arrived: () => {}, respond: () => {}, headOnly: false };
const slowUpstream = createServer((request, response) => {
  request.resume();
  request.on('end', () => {
    leftDuringSettle.respond = () => {
      response.writeHead(200, { 'content-type': 'audio/mpeg' });
      response.end(Buffer.alloc(1024, 1));
    };
    if (leftDuringSettle.headOnly) {
      // The headers go at once; the audio never comes.
      response.writeHead(200, { 'content-type': 'audio/mpeg' });
      response.flushHeaders();
    }
    leftDuringSettle.arrived();
  });
});
await new Promise<void>((resolve) => slowUpstream.listen(0, '127.0.0.1', resolve));
after(() => slowUpstream.close());
const logLines: string[] = [];
const logStream = new PassThrough();
logStream.on('data', (chunk) => logLines.push(...String(chunk).split('\n').filter(Boolean)));

describeEachDatabase(
  'a speech client that leaves while its call is settled',
  (env) => {
    it('is charged as the call settled, and is no 500 (no error logged): there is nobody left to answer', async () => {
      await putModel(env, 'acme/tts-slow-settle', {
        provider: 'slow',
        upstreamModel: 'tts-1',
        pricing: { prompt: 1000, request: 0.001 },
        outputModalities: ['audio'],
      });
      const user = await fundedUser(env, 1);
      logLines.length = 0;
      const client = new AbortController();
      const arrived = new Promise<void>((resolve) => (leftDuringSettle.arrived = resolve));
      const answer = post(env, user, { model: 'acme/tts-slow-settle', input: 'hello world' }, client.signal).catch(
        (error) => error,
      );
      await arrived;
      // The hold is placed; now the wallet is held by the test, so the settle waits on it.
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let locked!: () => void;
      const isLocked = new Promise<void>((resolve) => (locked = resolve));
      const holding = env.db.transaction().execute(async (trx) => {
        await trx
          .updateTable('wallets')
          .set({ updated_at: Date.now() })
          .where('user_id', '=', user.session.userId)
          .execute();
        locked();
        await released;
      });
      await isLocked;
      leftDuringSettle.respond();
      await new Promise((resolve) => setTimeout(resolve, 200));
      client.abort();
      assert.equal((await answer).name, 'AbortError');
      await new Promise((resolve) => setTimeout(resolve, 200));
      release();
      await holding;
      const perCharacter = 1_000 + 1_000 * countTextTokens('hello world');
      assert.equal((await settled(env, user)).balance, 1_000_000 - perCharacter);
      await new Promise((resolve) => setTimeout(resolve, 200));
      const errors = logLines.map((line) => JSON.parse(line)).filter((entry) => entry.level >= 50);
      assert.deepEqual(
        errors.map((entry) => entry.err?.message ?? entry.msg),
        [],
      );
      await assertLedgerVerifies(env);
    });

    it('leaving after the answer was handed over but before its first audio byte is no 500 either', async () => {
      const user = await fundedUser(env, 1);
      logLines.length = 0;
      leftDuringSettle.headOnly = true;
      const client = new AbortController();
      const arrived = new Promise<void>((resolve) => (leftDuringSettle.arrived = resolve));
      const answer = post(env, user, { model: 'acme/tts-slow-settle', input: 'hello world' }, client.signal).catch(
        (error) => error,
      );
      await arrived;
      const perCharacter = 1_000 + 1_000 * countTextTokens('hello world');
      // Settled: the route has handed the audio body to the server, which waits for its first byte.
      assert.equal((await settled(env, user)).balance, 1_000_000 - perCharacter);
      await new Promise((resolve) => setTimeout(resolve, 100));
      client.abort();
      assert.equal((await answer).name, 'AbortError');
      await new Promise((resolve) => setTimeout(resolve, 300));
      leftDuringSettle.headOnly = false;
      const errors = logLines.map((line) => JSON.parse(line)).filter((entry) => entry.level >= 50);
      assert.deepEqual(
        errors.map((entry) => entry.err?.message ?? entry.msg),
        [],
      );
      await assertLedgerVerifies(env);
    });
  },
  {
    config: {
      providers: [{ name: 'slow', baseUrl: `http://127.0.0.1:${(slowUpstream.address() as AddressInfo).port}/v1` }],
    },
    logDestination: logStream,
  },
);
