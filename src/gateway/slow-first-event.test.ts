import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, settled, usageOf, wallet, type FundedUser } from './testing.ts';

/**
 * A streamed call whose upstream is slow to begin (a reasoning model thinking before its first token) has its
 * stream opened after `STREAM_OPEN_AFTER_MS` (200 ms here), with `: keep-alive` comments until the first event:
 * a client waiting for the response's headers (Node's `fetch` gives up after 300 s, a proxy often after 60 s) gets
 * them while the upstream is still silent. The stand-in upstream is the mock behind a gate that holds its answers
 * (status, headers and body) until the test opens it, so "before the first event" is a fact, not a timing.
 */

const mock = await startMockUpstream();

/** A real HTTP upstream that forwards every request to the mock and holds each answer while its gate is shut. */
async function startGatedUpstream(target: string) {
  let gate: Promise<void> = Promise.resolve();
  let passed = 0;
  let leftWhileHeld = 0;
  const server = createServer((req, res) => {
    const upstream = request(`${target}${req.url}`, { method: req.method, headers: req.headers });
    req.pipe(upstream);
    upstream.on('error', () => res.destroy());
    upstream.on('response', async (answer: IncomingMessage) => {
      const gone = new Promise<boolean>((resolve) => res.once('close', () => resolve(true)));
      const left = await Promise.race([gate.then(() => false), gone]);
      if (left) {
        leftWhileHeld++;
        upstream.destroy();
        return;
      }
      passed++;
      res.writeHead(answer.statusCode!, { 'content-type': answer.headers['content-type'] ?? 'application/json' });
      answer.pipe(res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    /** Shuts the gate; the function returned opens it. */
    shut(): () => void {
      let open!: () => void;
      gate = new Promise<void>((resolve) => (open = resolve));
      return open;
    },
    /** Answers that went through the gate so far. */
    passed: () => passed,
    /** Calls whose client (Tollgate) left while their answer waited at the gate. */
    leftWhileHeld: () => leftWhileHeld,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

const gated = await startGatedUpstream(mock.url);
after(() => Promise.all([mock.close(), gated.close()]));

const CREDIT = 1_000_000;
/** One credit per completion token, nothing else: the mock's answer ("alpha beta gamma delta") costs 4. */
const perToken = { prompt: 0, completion: 1_000_000 };
const REPLY = 'alpha beta gamma delta';
const OPEN_AFTER_MS = 200;
const hi = [{ role: 'user' as const, content: 'hi' }];

function openai(env: TestEnv, user: FundedUser): OpenAI {
  return new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0, timeout: 20_000 });
}

function anthropic(env: TestEnv, user: FundedUser): Anthropic {
  return new Anthropic({
    apiKey: user.key,
    authToken: null,
    baseURL: `${env.baseUrl}/api`,
    maxRetries: 0,
    timeout: 20_000,
  });
}

/** `call`'s result, which must come while the gated upstream still holds its answer (within 10 s, far past 200 ms). */
async function whileTheUpstreamIsSilent<T>(call: Promise<T>, what: string): Promise<T> {
  const passed = gated.passed();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: no response head while the upstream had not begun (10 s)`)),
      10_000,
    );
  });
  try {
    const result = await Promise.race([call, late]);
    assert.equal(gated.passed(), passed, `${what}: no upstream answer had gone through when the client had its stream`);
    return result;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Starts `call` with the upstream's gate shut, checks that its stream object comes while the upstream is still
 * silent, then opens the gate and hands the stream to `read`.
 */
async function readOpenedEarly<T>(what: string, call: () => Promise<T>, read: (stream: T) => Promise<unknown>) {
  const open = gated.shut();
  try {
    const stream = await whileTheUpstreamIsSilent(call(), what);
    open();
    await read(stream);
  } finally {
    open();
  }
}

/** A Messages call streamed through the Anthropic SDK. */
const streamedMessage = (client: Anthropic, model: string) =>
  client.messages.create({ model, max_tokens: 100, messages: hi, stream: true });

/** The text of a chat stream; `each` sees every chunk. */
async function chatText(
  stream: AsyncIterable<OpenAI.ChatCompletionChunk>,
  each: (chunk: OpenAI.ChatCompletionChunk) => unknown = () => {},
) {
  let text = '';
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    each(chunk);
  }
  return text;
}

/** The text of a Messages stream; `each` sees every event. */
async function messagesText(
  stream: AsyncIterable<Anthropic.RawMessageStreamEvent>,
  each: (event: Anthropic.RawMessageStreamEvent) => unknown = () => {},
) {
  let text = '';
  for await (const event of stream) {
    if (event.type === 'content_block_delta' && event.delta.type === 'text_delta') text += event.delta.text;
    each(event);
  }
  return text;
}

/** The three protocols' streamed calls as raw requests, with the text that ends a whole answer. */
const rawCalls = (model: string, claude: string) => [
  {
    path: '/api/v1/chat/completions',
    body: { model, messages: hi, stream: true },
    end: 'data: [DONE]',
  },
  {
    path: '/api/v1/responses',
    body: { model, input: 'hi', stream: true, store: false },
    end: 'event: response.completed',
  },
  {
    path: '/api/v1/messages',
    body: { model: claude, max_tokens: 100, messages: hi, stream: true },
    end: 'event: message_stop',
  },
];

/** The wallet down by `calls` answers of 4 credits, each its one `ok` record, nothing held. */
async function assertChargedOncePerCall(env: TestEnv, user: FundedUser, calls: number) {
  assert.deepEqual(await settled(env, user), {
    balance: (1000 - 4 * calls) * CREDIT,
    reserved: 0,
    available: (1000 - 4 * calls) * CREDIT,
  });
  const records = await usageOf(env, user, calls);
  assert.deepEqual(
    records.map((r) => [r.status, Number(r.cost)]),
    Array.from({ length: calls }, () => ['ok', 4 * CREDIT]),
  );
}

/** Nothing charged and nothing held; each of the `calls` records an upstream error at no cost. */
async function assertReleased(env: TestEnv, user: FundedUser, calls: number, status = 'upstream_error') {
  assert.deepEqual(await settled(env, user), { balance: 1000 * CREDIT, reserved: 0, available: 1000 * CREDIT });
  const records = await usageOf(env, user, calls);
  assert.deepEqual(
    records.map((r) => [r.status, Number(r.cost)]),
    Array.from({ length: calls }, () => [status, 0]),
  );
}

describeEachDatabase(
  'a stream whose upstream is slow to begin',
  (env) => {
    before(async () => {
      const model = (provider: string, upstreamModel: string, fallbacks: string[] = []) => ({
        provider,
        upstreamModel,
        pricing: perToken,
        maxOutputTokens: 100,
        fallbacks,
      });
      await putModel(env, 'acme/slow', model('gated', 'default-model'));
      await putModel(env, 'acme/slow-fails', model('gated', 'status-502'));
      await putModel(env, 'acme/slow-fails-then-ok', model('gated', 'status-502', ['acme/slow']));
      await putModel(env, 'acme/claude-slow', model('anthropic', 'claude-x'));
      await putModel(env, 'acme/claude-slow-fails', model('anthropic', 'status-502'));
      await putModel(env, 'acme/claude-slow-fails-then-ok', model('anthropic', 'status-502', ['acme/claude-slow']));
      await putModel(env, 'acme/fast', model('mock', 'default-model'));
      await putModel(env, 'acme/fast-fails', model('mock', 'status-502'));
    });

    it('raw SSE (chat, Responses, Messages): status 200 and a `: keep-alive` comment come while the upstream is silent, then the whole answer, charged once', async () => {
      const user = await fundedUser(env, 1000);
      for (const call of rawCalls('acme/slow', 'acme/claude-slow')) {
        const open = gated.shut();
        try {
          const response = await whileTheUpstreamIsSilent(
            fetch(`${env.baseUrl}${call.path}`, {
              method: 'POST',
              headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
              body: JSON.stringify(call.body),
            }),
            call.path,
          );
          assert.equal(response.status, 200, call.path);
          assert.match(response.headers.get('content-type')!, /^text\/event-stream/, call.path);
          const reader = response.body!.getReader();
          const decoder = new TextDecoder();
          const first = decoder.decode((await reader.read()).value);
          assert.equal(first, ': keep-alive\n\n', `${call.path}: a comment before any event`);
          open();
          let rest = '';
          for (let step = await reader.read(); !step.done; step = await reader.read())
            rest += decoder.decode(step.value);
          assert.ok(rest.includes(call.end), `${call.path}: the whole answer followed:\n${rest}`);
          assert.ok(!rest.includes('event: error'), `${call.path}: no error:\n${rest}`);
        } finally {
          open();
        }
      }
      await assertChargedOncePerCall(env, user, 3);
    });

    it('a stream whose upstream begins before STREAM_OPEN_AFTER_MS writes no comment: its first bytes are its first event', async () => {
      const user = await fundedUser(env, 1000);
      const response = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'acme/fast', messages: hi, stream: true }),
      });
      assert.equal(response.status, 200);
      const body = await response.text();
      assert.ok(body.startsWith('data: {'), body);
      assert.ok(!body.includes(': keep-alive'), body);
    });

    it('the openai SDK (chat and Responses streams) and @anthropic-ai/sdk (Messages stream) get their stream object while the upstream is silent, then the whole answer, charged once', async () => {
      const user = await fundedUser(env, 1000);
      const client = openai(env, user);
      await readOpenedEarly(
        'chat',
        () =>
          client.chat.completions.create({
            model: 'acme/slow',
            messages: hi,
            stream: true,
            stream_options: { include_usage: true },
          }),
        async (chat) => {
          let usage: OpenAI.CompletionUsage | null | undefined;
          assert.equal(await chatText(chat, (chunk) => (usage = chunk.usage ?? usage)), REPLY);
          assert.equal(usage?.completion_tokens, 4);
        },
      );
      await readOpenedEarly(
        'responses',
        () => client.responses.create({ model: 'acme/slow', input: 'hi', stream: true, store: false }),
        async (responses) => {
          let text = '';
          let completed: OpenAI.Responses.Response | undefined;
          for await (const event of responses) {
            if (event.type === 'response.output_text.delta') text += event.delta;
            if (event.type === 'response.completed') completed = event.response;
          }
          assert.equal(text, REPLY);
          assert.equal(completed?.status, 'completed');
          assert.equal(completed?.usage?.output_tokens, 4);
        },
      );
      await readOpenedEarly(
        'messages',
        () => streamedMessage(anthropic(env, user), 'acme/claude-slow'),
        async (messages) => {
          let stopped = false;
          assert.equal(await messagesText(messages, (event) => (stopped ||= event.type === 'message_stop')), REPLY);
          assert.ok(stopped);
        },
      );
      await assertChargedOncePerCall(env, user, 3);
    });

    it('an upstream failure after the stream opened reaches each SDK as an error from the SSE error frame (UPSTREAM_ERROR), and the hold is released', async () => {
      const user = await fundedUser(env, 1000);
      const client = openai(env, user);
      const drain = async (stream: AsyncIterable<unknown>) => {
        for await (const _ of stream);
      };
      await readOpenedEarly(
        'chat',
        () => client.chat.completions.create({ model: 'acme/slow-fails', messages: hi, stream: true }),
        (chat) =>
          assert.rejects(drain(chat), (error: any) => {
            assert.ok(error instanceof OpenAI.APIError, String(error));
            assert.equal(error.code, 'UPSTREAM_ERROR');
            assert.equal(error.error.type, 'upstream_error');
            assert.match(error.message, /mock status 502/);
            return true;
          }),
      );
      await readOpenedEarly(
        'responses',
        () => client.responses.create({ model: 'acme/slow-fails', input: 'hi', stream: true, store: false }),
        async (responses) => {
          const seen: string[] = [];
          await assert.rejects(
            (async () => {
              for await (const event of responses) seen.push(event.type);
            })(),
            (error: any) => {
              assert.ok(error instanceof OpenAI.APIError, String(error));
              assert.equal(error.code, 'UPSTREAM_ERROR');
              assert.match(error.message, /mock status 502/);
              return true;
            },
          );
          assert.deepEqual(seen, ['response.created', 'response.in_progress', 'response.failed']);
        },
      );
      await readOpenedEarly(
        'messages',
        () => streamedMessage(anthropic(env, user), 'acme/claude-slow-fails'),
        (messages) =>
          assert.rejects(drain(messages), (error: any) => {
            assert.ok(error instanceof Anthropic.APIError, String(error));
            assert.equal(error.error.type, 'error');
            assert.equal(error.error.error.type, 'api_error');
            assert.equal(error.error.error.code, 'UPSTREAM_ERROR');
            assert.match(error.error.error.message, /mock status 502/);
            return true;
          }),
      );
      await assertReleased(env, user, 3);
    });

    it('a model that fails after the stream opened, with only comments written, still hands over to its fallback: the answer is whole and charged once', async () => {
      const user = await fundedUser(env, 1000);
      await readOpenedEarly(
        'chat',
        () =>
          openai(env, user).chat.completions.create({ model: 'acme/slow-fails-then-ok', messages: hi, stream: true }),
        async (chat) => assert.equal(await chatText(chat), REPLY),
      );
      await readOpenedEarly(
        'messages',
        () => streamedMessage(anthropic(env, user), 'acme/claude-slow-fails-then-ok'),
        async (messages) => assert.equal(await messagesText(messages), REPLY),
      );
      await assertChargedOncePerCall(env, user, 2);
    });

    it('a failure before STREAM_OPEN_AFTER_MS is still the JSON error with its status (502), in each SDK', async () => {
      const user = await fundedUser(env, 1000);
      const client = openai(env, user);
      const openaiJson502 = (error: any) => {
        assert.ok(error instanceof OpenAI.APIError, String(error));
        assert.equal(error.status, 502);
        assert.equal(error.code, 'UPSTREAM_ERROR');
        return true;
      };
      await assert.rejects(
        client.chat.completions.create({ model: 'acme/fast-fails', messages: hi, stream: true }),
        openaiJson502,
      );
      await assert.rejects(
        client.responses.create({ model: 'acme/fast-fails', input: 'hi', stream: true, store: false }),
        openaiJson502,
      );
      await assert.rejects(
        anthropic(env, user).messages.create({ model: 'acme/fast-fails', max_tokens: 100, messages: hi, stream: true }),
        (error: any) => {
          assert.ok(error instanceof Anthropic.APIError, String(error));
          assert.equal(error.status, 502);
          assert.equal(error.error.error.code, 'UPSTREAM_ERROR');
          return true;
        },
      );
      await assertReleased(env, user, 3);
    });

    it('a client that leaves while only comments were written releases the hold and closes the upstream call', async () => {
      const user = await fundedUser(env, 1000);
      const before = gated.leftWhileHeld();
      const open = gated.shut();
      try {
        const controller = new AbortController();
        const response = await whileTheUpstreamIsSilent(
          fetch(`${env.baseUrl}/api/v1/chat/completions`, {
            method: 'POST',
            headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
            body: JSON.stringify({ model: 'acme/slow', messages: hi, stream: true }),
            signal: controller.signal,
          }),
          'chat',
        );
        assert.equal(response.status, 200);
        const reader = response.body!.getReader();
        assert.equal(new TextDecoder().decode((await reader.read()).value), ': keep-alive\n\n');
        controller.abort();
        for (let i = 0; i < 500 && gated.leftWhileHeld() === before; i++)
          await new Promise((resolve) => setTimeout(resolve, 10));
        assert.equal(gated.leftWhileHeld(), before + 1, 'the upstream call was closed');
      } finally {
        open();
      }
      await assertReleased(env, user, 1, 'client_aborted');
    });

    it('after all of it the ledger verifies', async () => {
      const report = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(report.status, 200);
      assert.equal(report.body.ok, true, report.text);
    });
  },
  {
    config: {
      STREAM_OPEN_AFTER_MS: OPEN_AFTER_MS,
      ANTHROPIC_BASE_URL: gated.url,
      providers: [
        { name: 'gated', baseUrl: `${gated.url}/v1` },
        { name: 'mock', baseUrl: `${mock.url}/v1` },
      ],
    },
  },
);
