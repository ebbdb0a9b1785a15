import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { describeEachDatabase } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, putModel, wallet } from './testing.ts';

const mock = await startMockUpstream();
after(() => mock.close());

const logLines: string[] = [];
const logStream = new PassThrough();
logStream.on('data', (chunk) => logLines.push(...String(chunk).split('\n').filter(Boolean)));

describeEachDatabase(
  "an upstream's refusal or failure, as the caller and the log read it",
  (env) => {
    before(async () => {
      for (const code of [404, 500])
        await putModel(env, `acme/status-${code}`, {
          provider: 'mock',
          upstreamModel: `status-${code}`,
          pricing: { prompt: 1, completion: 1 },
        });
    });

    it("a 4xx reaches the caller once prefixed, with the upstream's status and words, and charges nothing", async () => {
      const user = await fundedUser(env, 1);
      const chat = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/status-404', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(chat.status, 400, chat.text);
      assert.equal(chat.body.error.code, 'INVALID_REQUEST');
      assert.equal(chat.body.error.message, 'The upstream provider rejected the request (404): mock status 404.');
      assert.equal((await wallet(env, user)).balance, 1_000_000);
    });

    it("a 5xx's log line says the upstream's answer once", async () => {
      const user = await fundedUser(env, 1);
      const from = logLines.length;
      const chat = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        body: { model: 'acme/status-500', messages: [{ role: 'user', content: 'hi' }] },
      });
      assert.equal(chat.status, 502, chat.text);
      assert.equal(chat.body.error.message, 'The upstream provider answered 500: mock status 500.');
      const logged = logLines
        .slice(from)
        .map((line) => JSON.parse(line))
        .filter((line) => line.err);
      assert.equal(logged.length, 1, JSON.stringify(logged));
      assert.equal(logged[0].err.message, 'The upstream provider answered 500: mock status 500.');
    });
  },
  { logDestination: logStream, config: { providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }] } },
);
