import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, readSseFrames, settled, usageOf, wallet, type FundedUser } from './testing.ts';

const mock = await startMockUpstream();
after(() => mock.close());

const CREDIT = 1_000_000;
/** One credit per completion token and nothing else: a charge in credits is the number of tokens produced. */
const perToken = { prompt: 0, completion: 1_000_000 };
/** One credit per token, input or output. */
const perTokenAndPrompt = { prompt: 1_000_000, completion: 1_000_000 };

function post(env: { baseUrl: string }, user: FundedUser, body: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(`${env.baseUrl}/api/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
    signal,
  });
}

const hi = [{ role: 'user', content: 'hi' }];

/** The longest silence an upstream stream may keep here (long enough for a test to read and hang up first). */
const IDLE_TIMEOUT_MS = 1000;

describeEachDatabase(
  'each failure mode leaves the ledger exact',
  (env) => {
    before(async () => {
      for (const [id, upstreamModel] of [
        ['acme/ok', 'default-model'],
        ['acme/fail', 'status-500'],
        ['acme/hang', 'hang'],
        ['acme/stall', 'stall-3'],
        ['acme/cut', 'cut-2'],
        ['acme/error-frame', 'error-frame-2'],
        ['acme/bad-request', 'status-400'],
      ]) {
        await putModel(env, id, { provider: 'mock', upstreamModel, pricing: perToken, maxOutputTokens: 100 });
      }
      // Priced on the prompt too: a stream that fails before any output must not charge the prompt either.
      for (const [id, provider] of [
        ['acme/fails-before-output', 'mock'],
        ['acme/claude-overloaded', 'anthropic'],
      ])
        await putModel(env, id, {
          provider,
          upstreamModel: 'error-frame-0',
          pricing: perTokenAndPrompt,
          maxOutputTokens: 100,
        });
      await putModel(env, 'acme/claude-overloaded-mid-stream', {
        provider: 'anthropic',
        upstreamModel: 'error-frame-2',
        pricing: perToken,
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/claude-stall', {
        provider: 'anthropic',
        upstreamModel: 'stall-3',
        pricing: perToken,
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/flaky', {
        provider: 'mock',
        upstreamModel: 'status-503',
        pricing: perToken,
        maxOutputTokens: 100,
        fallbacks: ['acme/fail', 'acme/ok'],
      });
      await putModel(env, 'acme/slow-then-ok', {
        provider: 'mock',
        upstreamModel: 'hang',
        pricing: perToken,
        maxOutputTokens: 100,
        fallbacks: ['acme/ok'],
      });
      await putModel(env, 'acme/rejects', {
        provider: 'mock',
        upstreamModel: 'status-400',
        pricing: perToken,
        maxOutputTokens: 100,
        fallbacks: ['acme/ok'],
      });
    });

    it('upstream 500 before output: 502 UPSTREAM_ERROR, nothing charged, the hold released (streamed or not)', async () => {
      const user = await fundedUser(env, 1000);
      for (const stream of [false, true]) {
        const response = await post(env, user, { model: 'acme/fail', stream, messages: hi });
        assert.equal(response.status, 502);
        const body = await response.json();
        assert.equal(body.error.code, 'UPSTREAM_ERROR');
        assert.equal(body.error.type, 'upstream_error');
      }
      assert.deepEqual(await wallet(env, user), { balance: 1000 * CREDIT, reserved: 0, available: 1000 * CREDIT });
      const records = await usageOf(env, user, 2);
      assert.deepEqual(
        records.map((r) => [r.status, Number(r.cost)]),
        [
          ['upstream_error', 0],
          ['upstream_error', 0],
        ],
      );
    });

    it('an upstream that does not answer in UPSTREAM_TIMEOUT_MS: 504, nothing charged', async () => {
      const user = await fundedUser(env, 1000);
      const response = await post(env, user, { model: 'acme/hang', stream: true, messages: hi });
      assert.equal(response.status, 504);
      assert.equal((await response.json()).error.code, 'UPSTREAM_ERROR');
      assert.equal((await wallet(env, user)).balance, 1000 * CREDIT);
    });

    it('a client that disconnects mid-stream aborts the upstream call and is charged for the tokens produced', async () => {
      const user = await fundedUser(env, 1000);
      const requestsBefore = mock.requests.length;
      const controller = new AbortController();
      const response = await post(env, user, { model: 'acme/stall', stream: true, messages: hi }, controller.signal);
      assert.equal(response.status, 200);
      // Read until the three words the upstream produced have arrived, then hang up.
      const reader = response.body!.getReader();
      let text = '';
      while ((text.match(/"content":"[^"]+"/g) ?? []).length < 3)
        text += new TextDecoder().decode((await reader.read()).value);
      controller.abort();
      await mock.settled(requestsBefore + 1);
      assert.equal(mock.requests.at(-1)!.aborted, true, 'the upstream connection was closed');
      const after = await settled(env, user);
      assert.equal(after.balance, (1000 - 3) * CREDIT); // "alpha beta gamma": 3 tokens at 1 credit
      const [record] = await usageOf(env, user);
      assert.equal(record.status, 'client_aborted');
      assert.equal(Number(record.completion_tokens), 3);
    });

    it('a stream cut by the upstream after output: an SSE error frame with the envelope, charged for what was produced', async () => {
      const user = await fundedUser(env, 1000);
      for (const model of ['acme/cut', 'acme/error-frame']) {
        const response = await post(env, user, { model, stream: true, messages: hi });
        assert.equal(response.status, 200);
        const frames = await readSseFrames(response);
        const last = frames.at(-1)!;
        assert.equal(last.event, 'error');
        assert.equal(last.data.error.code, 'UPSTREAM_ERROR');
        assert.equal(last.data.error.type, 'upstream_error');
        // What broke, said once: the provider's message, then when.
        assert.match(
          last.data.error.message,
          model === 'acme/error-frame'
            ? /^The upstream stream failed: mock failure mid-stream, after output began\.$/
            : /^The upstream stream broke, after output began\.$/,
        );
        assert.equal(frames.map((f) => f.data?.choices?.[0]?.delta?.content ?? '').join(''), 'alpha beta');
      }
      assert.equal((await settled(env, user)).balance, (1000 - 2 - 2) * CREDIT);
      const records = await usageOf(env, user, 2);
      assert.deepEqual(
        records.map((r) => [r.status, Number(r.completion_tokens), Number(r.cost)]),
        [
          ['upstream_error', 2, 2 * CREDIT],
          ['upstream_error', 2, 2 * CREDIT],
        ],
      );
    });

    it("a stream the upstream fails before any output (its start sent, then an error: Anthropic's overloaded_error) charges nothing, prompt included", async () => {
      const user = await fundedUser(env, 1000);
      const chat = await post(env, user, { model: 'acme/fails-before-output', stream: true, messages: hi });
      assert.equal(chat.status, 200);
      assert.equal((await readSseFrames(chat)).at(-1)!.event, 'error');
      const messages = await fetch(`${env.baseUrl}/api/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': user.key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({ model: 'acme/claude-overloaded', max_tokens: 50, stream: true, messages: hi }),
      });
      assert.equal(messages.status, 200);
      assert.equal((await readSseFrames(messages)).at(-1)!.event, 'error');
      assert.deepEqual(await settled(env, user), { balance: 1000 * CREDIT, reserved: 0, available: 1000 * CREDIT });
      const records = await usageOf(env, user, 2);
      assert.deepEqual(
        records.map((r) => [r.status, Number(r.completion_tokens), Number(r.cost)]),
        [
          ['upstream_error', 0, 0],
          ['upstream_error', 0, 0],
        ],
      );
    });

    // Claude Code retries a stream whose error frame says overloaded_error; an api_error it shows the user.
    it("Anthropic overloaded mid-stream: a Messages client's error frame says overloaded_error (code UPSTREAM_ERROR), a chat client's stays upstream_error, each charged for what was produced", async () => {
      const user = await fundedUser(env, 1000);
      const messages = await fetch(`${env.baseUrl}/api/v1/messages`, {
        method: 'POST',
        headers: { 'x-api-key': user.key, 'content-type': 'application/json', 'anthropic-version': '2023-06-01' },
        body: JSON.stringify({
          model: 'acme/claude-overloaded-mid-stream',
          max_tokens: 50,
          stream: true,
          messages: hi,
        }),
      });
      assert.equal(messages.status, 200);
      const last = (await readSseFrames(messages)).at(-1)!;
      assert.equal(last.event, 'error');
      assert.equal(last.data.error.type, 'overloaded_error');
      assert.equal(last.data.error.code, 'UPSTREAM_ERROR');
      assert.match(last.data.error.message, /mock failure mid-stream, after output began\.$/);

      const chat = await post(env, user, { model: 'acme/claude-overloaded-mid-stream', stream: true, messages: hi });
      const chatLast = (await readSseFrames(chat)).at(-1)!;
      assert.equal(chatLast.data.error.type, 'upstream_error');
      assert.equal(chatLast.data.error.code, 'UPSTREAM_ERROR');

      assert.equal((await settled(env, user)).balance, (1000 - 2 - 2) * CREDIT);
      const records = await usageOf(env, user, 2);
      assert.deepEqual(
        records.map((r) => [r.status, Number(r.completion_tokens)]),
        [
          ['upstream_error', 2],
          ['upstream_error', 2],
        ],
      );
    });

    it('an upstream stream silent past UPSTREAM_IDLE_TIMEOUT_MS after output: an SSE error frame, charged for what was produced', async () => {
      // Without the setting, undici's own default (300 s of silence) ended such a stream, whatever the config said.
      const user = await fundedUser(env, 1000);
      for (const model of ['acme/stall', 'acme/claude-stall']) {
        const started = performance.now();
        const response = await post(env, user, { model, stream: true, messages: hi }, AbortSignal.timeout(20_000));
        assert.equal(response.status, 200);
        const frames = await readSseFrames(response);
        const last = frames.at(-1)!;
        assert.equal(last.event, 'error', model);
        assert.match(
          last.data.error.message,
          /^The upstream stream went silent for longer than UPSTREAM_IDLE_TIMEOUT_MS, after output/,
        );
        assert.ok(performance.now() - started >= IDLE_TIMEOUT_MS, 'not before the idle timeout');
      }
      assert.equal((await settled(env, user)).balance, (1000 - 3 - 3) * CREDIT);
      const records = await usageOf(env, user, 2);
      assert.deepEqual(
        records.map((r) => [r.status, Number(r.completion_tokens)]),
        [
          ['upstream_error', 3],
          ['upstream_error', 3],
        ],
      );
    });

    it('fallbacks are tried in order on a 5xx before output, and the call is billed on the model that answered', async () => {
      const user = await fundedUser(env, 1000);
      const before = mock.requests.length;
      const response = await post(env, user, { model: 'acme/flaky', stream: true, messages: hi });
      assert.equal(response.status, 200);
      const frames = await readSseFrames(response);
      assert.equal(frames.at(-1)!.data, '[DONE]');
      assert.deepEqual(
        mock.requests.slice(before).map((r) => r.body.model),
        ['status-503', 'status-500', 'default-model'],
      );
      assert.ok(frames.slice(0, -1).every((f) => f.data.model === 'acme/ok'));
      assert.equal((await settled(env, user)).balance, (1000 - 4) * CREDIT);
      const [record] = await usageOf(env, user);
      assert.equal(record.model, 'acme/ok');
    });

    it("a fallback is tried on a timeout, but not on a 4xx (the client's mistake is answered 400, nothing charged)", async () => {
      const user = await fundedUser(env, 1000);
      const slow = await post(env, user, { model: 'acme/slow-then-ok', messages: hi });
      assert.equal(slow.status, 200);
      assert.equal((await slow.json()).choices[0].message.content, 'alpha beta gamma delta');
      const before = mock.requests.length;
      const rejected = await post(env, user, { model: 'acme/rejects', messages: hi });
      assert.equal(rejected.status, 400);
      assert.equal((await rejected.json()).error.code, 'INVALID_REQUEST');
      assert.equal(mock.requests.length, before + 1);
      assert.equal((await wallet(env, user)).balance, (1000 - 4) * CREDIT);
    });

    it('after all of it the ledger verifies', async () => {
      const report = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(report.status, 200);
      assert.equal(report.body.ok, true, report.text);
    });
  },
  {
    config: {
      UPSTREAM_TIMEOUT_MS: 150,
      UPSTREAM_IDLE_TIMEOUT_MS: IDLE_TIMEOUT_MS,
      ANTHROPIC_BASE_URL: mock.url,
      providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }],
    },
  },
);
