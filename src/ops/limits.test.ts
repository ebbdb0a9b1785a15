import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { connect, type Socket } from 'node:net';
import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, readSseFrames } from '../gateway/testing.ts';

const mock = await startMockUpstream({ apiKey: 'sk-mock', chunkDelayMs: 500, reply: 'one two three four five six' });
after(() => mock.close());

/** A raw TCP connection to the server, to send a request as slowly as an attacker would. */
async function rawConnection(
  env: TestEnv,
): Promise<{ socket: Socket; received: () => string; closed: Promise<number> }> {
  const url = new URL(env.baseUrl);
  const socket = connect(Number(url.port), url.hostname);
  let text = '';
  socket.on('data', (chunk) => (text += chunk));
  socket.on('error', () => undefined);
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(Date.now())));
  await once(socket, 'connect');
  return { socket, received: () => text, closed };
}

/** Writes `bytes` one at a time, every `everyMs`, until the connection closes. */
function trickle(socket: Socket, everyMs: number, byte = 'x'): () => void {
  const timer = setInterval(() => socket.writable && socket.write(byte), everyMs);
  return () => clearInterval(timer);
}

/** When the connection closed, or null when it was still open after `ms`. */
const closedWithin = (closed: Promise<number>, ms: number) => Promise.race([closed, sleep(ms).then(() => null)]);

const TIMEOUTS = {
  HTTP_REQUEST_TIMEOUT_SECONDS: 2,
  HTTP_UPLOAD_TIMEOUT_SECONDS: 4,
  HTTP_HEADERS_TIMEOUT_SECONDS: 1,
  HTTP_KEEPALIVE_TIMEOUT_SECONDS: 1,
};

describeEachDatabase(
  'timeouts',
  (env) => {
    it('a body sent a byte at a time is cut by the request timeout with 408, though no gap between bytes is long', async () => {
      const { socket, received, closed } = await rawConnection(env);
      const started = Date.now();
      socket.write(
        'POST /api/auth/signin HTTP/1.1\r\nHost: tollgate\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{',
      );
      const stop = trickle(socket, 400, ' ');
      const end = await closedWithin(closed, 8000);
      stop();
      socket.destroy();
      assert.ok(end, 'the connection was still open after 8 s');
      // The request timeout (2 s) plus Node's check interval (0.5 s here), with room for a loaded machine.
      assert.ok(end - started < 3800, `cut after ${end - started} ms (the upload timeout is 4 s)`);
      assert.match(received(), /^HTTP\/1\.1 408/);
    });

    it('an upload (multipart) gets HTTP_UPLOAD_TIMEOUT_SECONDS instead, and is cut after it', async () => {
      const user = await fundedUser(env, 5);
      const { socket, received, closed } = await rawConnection(env);
      const started = Date.now();
      socket.write(
        `POST /api/v1/audio/transcriptions HTTP/1.1\r\nHost: tollgate\r\nAuthorization: Bearer ${user.key}\r\nContent-Type: multipart/form-data; boundary=b\r\nContent-Length: 100000\r\n\r\n--b\r\n`,
      );
      const stop = trickle(socket, 400);
      const end = await closedWithin(closed, 10_000);
      stop();
      socket.destroy();
      assert.ok(end, 'the connection was still open after 10 s');
      assert.ok(end - started > 3000, `cut after ${end - started} ms, before the upload timeout`);
      assert.ok(end - started < 8000, `cut after ${end - started} ms`);
      assert.match(received(), /^HTTP\/1\.1 408/);
    });

    it('headers sent a byte at a time are cut by the headers timeout', async () => {
      const { socket, received, closed } = await rawConnection(env);
      const started = Date.now();
      socket.write('GET /healthz HTTP/1.1\r\nHost: tollgate\r\nX-Slow: ');
      const stop = trickle(socket, 200, 'a');
      const end = await closedWithin(closed, 8000);
      stop();
      socket.destroy();
      assert.ok(end, 'the connection was still open after 8 s');
      assert.ok(end - started < 2500, `cut after ${end - started} ms`);
      assert.match(received(), /^HTTP\/1\.1 408/);
    });

    it('an idle keep-alive connection is closed after the keep-alive timeout', async () => {
      const { socket, received, closed } = await rawConnection(env);
      socket.write('GET /healthz HTTP/1.1\r\nHost: tollgate\r\nConnection: keep-alive\r\n\r\n');
      const end = await closedWithin(closed, 5000);
      socket.destroy();
      assert.match(received(), /^HTTP\/1\.1 200/);
      assert.ok(end, 'the idle connection was still open after 5 s');
    });

    it('a streamed answer that lasts longer than every timeout is not cut', async () => {
      await putModel(env, 'acme/slow', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { prompt: 1, completion: 1 },
        maxOutputTokens: 100,
      });
      const user = await fundedUser(env, 5);
      const started = Date.now();
      const response = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'acme/slow', stream: true, messages: [{ role: 'user', content: 'count' }] }),
      });
      assert.equal(response.status, 200);
      const frames = await readSseFrames(response);
      assert.ok(Date.now() - started > 2500, 'the stream outlasted the request timeout');
      assert.equal(frames.at(-1)!.data, '[DONE]');
      const text = frames
        .filter((frame) => frame.data !== '[DONE]')
        .map((frame) => frame.data.choices?.[0]?.delta?.content ?? '')
        .join('');
      assert.equal(text, 'one two three four five six');
    });
  },
  { config: { ...TIMEOUTS, providers: [{ name: 'mock', baseUrl: `${mock.url}/v1`, apiKey: 'sk-mock' }] } },
);

describeEachDatabase(
  'body limits and the cost of counting',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/paid', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { prompt: 1, completion: 1 },
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/tiny-context', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { prompt: 1, completion: 1 },
        contextLength: 1000,
        maxOutputTokens: 100,
      });
    });

    it('an AI call with a JSON body over BODY_LIMIT_API_BYTES is refused whole with 413 PAYLOAD_TOO_LARGE naming the limit', async () => {
      const user = await fundedUser(env, 5);
      const body = { model: 'acme/paid', messages: [{ role: 'user', content: 'x'.repeat(5 * 1024 * 1024) }] };
      const response = await env.request('POST', '/api/v1/chat/completions', { token: user.key, body });
      assert.equal(response.status, 413);
      assert.equal(response.body.error.code, 'PAYLOAD_TOO_LARGE');
      assert.equal(response.body.error.type, 'invalid_request_error');
      assert.equal(response.body.error.limit, 4 * 1024 * 1024);
      assert.match(response.body.error.message, /larger than the 4194304 bytes this route accepts/);
    });

    it('a dashboard or sign-in body over BODY_LIMIT_DEFAULT_BYTES is refused with 413', async () => {
      const response = await env.request('POST', '/api/auth/signin', {
        body: { email: 'a@example.com', password: 'x'.repeat(2 * 1024 * 1024) },
      });
      assert.equal(response.status, 413);
      assert.equal(response.body.error.code, 'PAYLOAD_TOO_LARGE');
      assert.equal(response.body.error.limit, 1024 * 1024);
    });

    it('a caller whose wallet is empty gets 402 from the length bound, before the prompt is counted', async () => {
      const user = await fundedUser(env, 0);
      const upstreamCalls = mock.requests.length;
      const response = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/paid', messages: [{ role: 'user', content: 'word '.repeat(600_000) }] },
      });
      assert.equal(response.status, 402);
      assert.equal(response.body.error.code, 'INSUFFICIENT_CREDITS');
      // "at least": the lower bound from the length (3,000,000 characters / 128 per token, 7 framing tokens),
      // not the counted worst case a hold would name ("up to").
      assert.match(response.body.error.message, /needs at least 0\.023445 credits and 0 are available/);
      assert.equal(response.body.error.required, 0.023445);
      // A prompt of a few Ki characters is not counted either: counting 2 Ki costs about a wallet read.
      const short = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/paid', messages: [{ role: 'user', content: 'word '.repeat(600) }] },
      });
      assert.equal(short.status, 402);
      assert.match(short.body.error.message, /needs at least .* credits and 0 are available/);
      assert.equal(mock.requests.length, upstreamCalls);
    });

    it('a prompt whose length alone proves it exceeds the model context is refused with 400 before counting', async () => {
      const user = await fundedUser(env, 5);
      const upstreamCalls = mock.requests.length;
      const response = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/tiny-context', messages: [{ role: 'user', content: 'a'.repeat(200_000) }] },
      });
      assert.equal(response.status, 400);
      assert.equal(response.body.error.code, 'INVALID_REQUEST');
      assert.match(
        response.body.error.message,
        /longer than the model's context: at least 1570 tokens, and the model takes 1000/,
      );
      assert.equal(mock.requests.length, upstreamCalls);
    });
  },
  { config: { providers: [{ name: 'mock', baseUrl: `${mock.url}/v1`, apiKey: 'sk-mock' }] } },
);

const logLines: string[] = [];
const logStream = new PassThrough();
logStream.on('data', (chunk) => logLines.push(...String(chunk).split('\n').filter(Boolean)));

describeEachDatabase(
  'TRUST_PROXY left off behind a proxy',
  (env) => {
    it('the first request carrying X-Forwarded-For logs one warning that the header is ignored', async () => {
      await env.request('GET', '/healthz');
      assert.ok(!logLines.some((line) => line.includes('TRUST_PROXY is off')));
      await env.request('GET', '/healthz', { headers: { 'x-forwarded-for': '198.51.100.9' } });
      await env.request('GET', '/healthz', { headers: { 'x-forwarded-for': '198.51.100.10' } });
      await new Promise((resolve) => setImmediate(resolve));
      const warnings = logLines
        .map((line) => JSON.parse(line))
        .filter((entry) => entry.level === 40 && String(entry.msg).includes('TRUST_PROXY is off'));
      assert.equal(warnings.length, 1);
      logLines.length = 0;
    });
  },
  { logDestination: logStream },
);
