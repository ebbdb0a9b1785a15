import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describeEachDatabase } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, wallet } from './testing.ts';

/** The operator's provider key: the mock refuses any other, and its `echo-key-*` models repeat the one they get. */
const OPERATOR_KEY = 'sk-operator-secret-4f1c9a0b7e';
const mock = await startMockUpstream({ apiKey: OPERATOR_KEY });
after(() => mock.close());

const logLines: string[] = [];
const logStream = new PassThrough();
logStream.on('data', (chunk) => logLines.push(...String(chunk).split('\n').filter(Boolean)));

describeEachDatabase(
  "an upstream that repeats the operator's provider key",
  (env) => {
    before(async () => {
      for (const [id, provider, upstreamModel] of [
        ['acme/echo-400', 'mock', 'echo-key-400'],
        ['acme/echo-401', 'mock', 'echo-key-401'],
        ['claude/echo-400', 'anthropic', 'echo-key-400'],
      ] as const)
        await putModel(env, id, { provider, upstreamModel, pricing: { prompt: 1, completion: 1 } });
    });

    it("relays the provider's refusal to the caller with the key replaced by [redacted], and charges nothing", async () => {
      const user = await fundedUser(env, 1);
      const chat = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/echo-400', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(chat.status, 400, chat.text);
      assert.match(chat.body.error.message, /Incorrect API key provided: \[redacted\]/);
      assert.ok(!chat.text.includes(OPERATOR_KEY), chat.text);

      const messages = await env.request('POST', '/api/v1/messages', {
        token: user.key,
        body: { model: 'claude/echo-400', max_tokens: 16, messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(messages.status, 400, messages.text);
      assert.match(messages.body.error.message, /Incorrect API key provided: \[redacted\]/);
      assert.ok(!messages.text.includes(OPERATOR_KEY), messages.text);
      assert.equal((await wallet(env, user)).balance, 1_000_000);
    });

    it('writes no log line with the key, at any level, when the provider refuses it (401)', async () => {
      const user = await fundedUser(env, 1);
      const from = logLines.length;
      const chat = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/echo-401', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(chat.status, 502, chat.text);
      assert.ok(!chat.text.includes(OPERATOR_KEY), chat.text);
      const written = logLines.slice(from).join('\n');
      assert.match(written, /\[redacted\]/, 'the refusal is logged, without the key');
      assert.ok(!written.includes(OPERATOR_KEY), written);
    });
  },
  {
    logDestination: logStream,
    config: {
      providers: [{ name: 'mock', baseUrl: `${mock.url}/v1`, apiKey: OPERATOR_KEY }],
      ANTHROPIC_BASE_URL: mock.url,
      ANTHROPIC_API_KEY: OPERATOR_KEY,
    },
  },
);
