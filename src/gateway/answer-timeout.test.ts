import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, settled, usageOf, wallet, type FundedUser } from './testing.ts';

/**
 * A model's `answerTimeoutMs`: a provider that accepts the call and never answers (the mock's `hang`) hands over
 * to the next fallback at the model's own deadline, not after `UPSTREAM_TIMEOUT_MS` (left at its 10-minute
 * default here, as an operator runs it). The clients give up after 20 s: on a gateway that waited the global
 * deadline every call below hangs until then and fails.
 */

const mock = await startMockUpstream();
/** A provider whose answers begin 1 s after the call: slower than the hanging models' deadline. */
const slow = await startMockUpstream({ latencyMs: 1000 });
after(() => Promise.all([mock.close(), slow.close()]));

const CREDIT = 1_000_000;
/** The answering models: one credit per completion token, nothing else (the mock produces 4). */
const perToken = { prompt: 0, completion: 1_000_000 };
/** The hanging models: dearer, so that a charge on their account, or on their price, would show. */
const dear = { prompt: 2_000_000, completion: 2_000_000 };
/** What a hanging model's answer may take to begin. */
const FAST_MS = 300;
const REPLY = 'alpha beta gamma delta';
/** The clients' own limit: far past FAST_MS, far before UPSTREAM_TIMEOUT_MS. */
const CLIENT_TIMEOUT_MS = 20_000;

function openai(env: TestEnv, user: FundedUser): OpenAI {
  return new OpenAI({
    apiKey: user.key,
    baseURL: `${env.baseUrl}/api/v1`,
    maxRetries: 0,
    timeout: CLIENT_TIMEOUT_MS,
  });
}

function anthropic(env: TestEnv, user: FundedUser): Anthropic {
  return new Anthropic({
    apiKey: user.key,
    authToken: null,
    baseURL: `${env.baseUrl}/api`,
    maxRetries: 0,
    timeout: CLIENT_TIMEOUT_MS,
  });
}

const hi = [{ role: 'user' as const, content: 'hi' }];

/** The upstream models the mocks were asked for since `from`, once every one of those requests ended. */
async function triedSince(from: { mock: number; slow: number }): Promise<{ model: string; aborted: boolean }[]> {
  await mock.settled(mock.requests.length);
  await slow.settled(slow.requests.length);
  return [...mock.requests.slice(from.mock), ...slow.requests.slice(from.slow)].map((r) => ({
    model: r.body.model,
    aborted: r.aborted,
  }));
}

const requestCounts = () => ({ mock: mock.requests.length, slow: slow.requests.length });

/** The user paid the fallback's answer (4 tokens at 1 credit) once per call, and each call's record names it. */
async function assertChargedTheFallbackOnly(env: TestEnv, user: FundedUser, calls: number, model: string) {
  assert.deepEqual(await settled(env, user), {
    balance: (1000 - 4 * calls) * CREDIT,
    reserved: 0,
    available: (1000 - 4 * calls) * CREDIT,
  });
  const records = await usageOf(env, user, calls);
  assert.deepEqual(
    records.map((r) => [r.model, r.status, Number(r.completion_tokens), Number(r.cost)]),
    Array.from({ length: calls }, () => [model, 'ok', 4, 4 * CREDIT]),
  );
}

describeEachDatabase(
  "a model's answerTimeoutMs",
  (env) => {
    before(async () => {
      await putModel(env, 'acme/ok', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: perToken,
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/hangs', {
        provider: 'mock',
        upstreamModel: 'hang',
        pricing: dear,
        maxOutputTokens: 100,
        answerTimeoutMs: FAST_MS,
        fallbacks: ['acme/ok'],
      });
      await putModel(env, 'acme/claude-ok', {
        provider: 'anthropic',
        upstreamModel: 'claude-x',
        pricing: perToken,
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/claude-hangs', {
        provider: 'anthropic',
        upstreamModel: 'hang',
        pricing: dear,
        maxOutputTokens: 100,
        answerTimeoutMs: FAST_MS,
        fallbacks: ['acme/claude-ok'],
      });
      await putModel(env, 'acme/hangs-alone', {
        provider: 'mock',
        upstreamModel: 'hang',
        pricing: dear,
        maxOutputTokens: 100,
        answerTimeoutMs: FAST_MS,
      });
      await putModel(env, 'acme/claude-hangs-alone', {
        provider: 'anthropic',
        upstreamModel: 'hang',
        pricing: dear,
        maxOutputTokens: 100,
        answerTimeoutMs: FAST_MS,
      });
      // Two hanging models in a row: the fallback's own deadline ends the last attempt.
      await putModel(env, 'acme/hangs-twice', {
        provider: 'mock',
        upstreamModel: 'hang',
        pricing: dear,
        maxOutputTokens: 100,
        answerTimeoutMs: FAST_MS,
        fallbacks: ['acme/hangs-alone'],
      });
      await putModel(env, 'acme/slow-ok', {
        provider: 'slow',
        upstreamModel: 'default-model',
        pricing: perToken,
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/hangs-then-slow', {
        provider: 'mock',
        upstreamModel: 'hang',
        pricing: dear,
        maxOutputTokens: 100,
        answerTimeoutMs: FAST_MS,
        fallbacks: ['acme/slow-ok'],
      });
    });

    it('chat completions (OpenAI SDK), streamed or not: a hung model hands over to its fallback at its answerTimeoutMs, the call is charged only the fallback', async () => {
      const user = await fundedUser(env, 1000);
      const client = openai(env, user);
      const from = requestCounts();
      const completion = await client.chat.completions.create({ model: 'acme/hangs', messages: hi });
      assert.equal(completion.choices[0].message.content, REPLY);
      assert.equal(completion.model, 'acme/ok');
      const stream = await client.chat.completions.create({ model: 'acme/hangs', messages: hi, stream: true });
      let text = '';
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? '';
        assert.equal(chunk.model, 'acme/ok');
      }
      assert.equal(text, REPLY);
      // The hung provider's connection was given up (closed), then the fallback answered; twice.
      assert.deepEqual(await triedSince(from), [
        { model: 'hang', aborted: true },
        { model: 'default-model', aborted: false },
        { model: 'hang', aborted: true },
        { model: 'default-model', aborted: false },
      ]);
      await assertChargedTheFallbackOnly(env, user, 2, 'acme/ok');
    });

    it('Anthropic Messages (Anthropic SDK), streamed or not: a hung model hands over to its fallback at its answerTimeoutMs, the call is charged only the fallback', async () => {
      const user = await fundedUser(env, 1000);
      const client = anthropic(env, user);
      const from = requestCounts();
      const message = await client.messages.create({ model: 'acme/claude-hangs', max_tokens: 100, messages: hi });
      assert.deepEqual(
        message.content.map((block) => (block.type === 'text' ? block.text : block.type)),
        [REPLY],
      );
      assert.equal(message.model, 'acme/claude-ok');
      const stream = client.messages.stream({ model: 'acme/claude-hangs', max_tokens: 100, messages: hi });
      const final = await stream.finalMessage();
      assert.deepEqual(
        final.content.map((block) => (block.type === 'text' ? block.text : block.type)),
        [REPLY],
      );
      assert.equal(final.model, 'acme/claude-ok');
      assert.deepEqual(await triedSince(from), [
        { model: 'hang', aborted: true },
        { model: 'claude-x', aborted: false },
        { model: 'hang', aborted: true },
        { model: 'claude-x', aborted: false },
      ]);
      await assertChargedTheFallbackOnly(env, user, 2, 'acme/claude-ok');
    });

    it("each attempt has its own model's deadline: a fallback with none set gets UPSTREAM_TIMEOUT_MS, and answers after the hung model's deadline", async () => {
      const user = await fundedUser(env, 1000);
      const client = openai(env, user);
      const from = requestCounts();
      for (const stream of [false, true]) {
        if (stream) {
          let text = '';
          for await (const chunk of await client.chat.completions.create({
            model: 'acme/hangs-then-slow',
            messages: hi,
            stream: true,
          }))
            text += chunk.choices[0]?.delta?.content ?? '';
          assert.equal(text, REPLY);
        } else {
          const completion = await client.chat.completions.create({ model: 'acme/hangs-then-slow', messages: hi });
          assert.equal(completion.choices[0].message.content, REPLY);
        }
      }
      assert.deepEqual(await triedSince(from), [
        { model: 'hang', aborted: true },
        { model: 'hang', aborted: true },
        { model: 'default-model', aborted: false },
        { model: 'default-model', aborted: false },
      ]);
      await assertChargedTheFallbackOnly(env, user, 2, 'acme/slow-ok');
    });

    it('with no fallback left: 504 UPSTREAM_ERROR in the envelope at the deadline of the last model, on chat and Messages, streamed or not; nothing charged', async () => {
      const user = await fundedUser(env, 1000);
      const from = requestCounts();
      const chat = openai(env, user);
      for (const model of ['acme/hangs-alone', 'acme/hangs-twice'])
        for (const stream of [false, true])
          await assert.rejects(chat.chat.completions.create({ model, messages: hi, stream }), (error: any) => {
            assert.ok(error instanceof OpenAI.APIError, String(error));
            assert.equal(error.status, 504, `${model} stream=${stream}: ${error.message}`);
            assert.deepEqual(error.error, {
              code: 'UPSTREAM_ERROR',
              type: 'upstream_error',
              message: `The upstream provider did not answer within ${FAST_MS} ms.`,
            });
            return true;
          });
      const messages = anthropic(env, user);
      for (const stream of [false, true])
        await assert.rejects(
          messages.messages.create({ model: 'acme/claude-hangs-alone', max_tokens: 100, messages: hi, stream }),
          (error: any) => {
            assert.ok(error instanceof Anthropic.APIError, String(error));
            assert.equal(error.status, 504, `stream=${stream}: ${error.message}`);
            assert.equal(error.error.type, 'error');
            assert.equal(error.error.error.code, 'UPSTREAM_ERROR');
            assert.equal(error.error.error.message, `The upstream provider did not answer within ${FAST_MS} ms.`);
            return true;
          },
        );
      const tried = await triedSince(from);
      assert.deepEqual(
        tried.map((t) => t.model),
        Array(2 + 4 + 2).fill('hang'),
      );
      assert.ok(
        tried.every((t) => t.aborted),
        'every hung connection was closed',
      );
      assert.deepEqual(await wallet(env, user), { balance: 1000 * CREDIT, reserved: 0, available: 1000 * CREDIT });
      // Six calls: four chat, two Messages.
      const records = await usageOf(env, user, 6);
      assert.deepEqual(
        records.map((r) => [r.status, Number(r.cost)]),
        Array(6).fill(['upstream_error', 0]),
      );
    });

    it('a client that leaves while a model with a long answerTimeoutMs hangs still aborts at once: no fallback tried, nothing charged', async () => {
      await putModel(env, 'acme/hangs-long', {
        provider: 'mock',
        upstreamModel: 'hang',
        pricing: dear,
        maxOutputTokens: 100,
        answerTimeoutMs: 60_000,
        fallbacks: ['acme/ok'],
      });
      const user = await fundedUser(env, 1000);
      const from = requestCounts();
      const controller = new AbortController();
      const call = fetch(`${env.baseUrl}/api/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'acme/hangs-long', messages: hi }),
        signal: controller.signal,
      });
      // Leave once the hung provider has the call (or the call ended without reaching it: asserted below).
      let ended = false;
      void call.then(
        () => (ended = true),
        () => (ended = true),
      );
      while (mock.requests.length === from.mock && !ended) await new Promise((resolve) => setTimeout(resolve, 10));
      controller.abort();
      await assert.rejects(call, { name: 'AbortError' });
      const [record] = await usageOf(env, user);
      assert.equal(record.status, 'client_aborted');
      assert.deepEqual(await triedSince(from), [{ model: 'hang', aborted: true }]);
      assert.deepEqual(await settled(env, user), { balance: 1000 * CREDIT, reserved: 0, available: 1000 * CREDIT });
    });

    it('after all of it the ledger verifies', async () => {
      const report = await env.admin('GET', '/api/admin/ledger/verify');
      assert.equal(report.status, 200);
      assert.equal(report.body.ok, true, report.text);
    });
  },
  {
    config: {
      ANTHROPIC_BASE_URL: mock.url,
      providers: [
        { name: 'mock', baseUrl: `${mock.url}/v1` },
        { name: 'slow', baseUrl: `${slow.url}/v1` },
      ],
    },
  },
);
