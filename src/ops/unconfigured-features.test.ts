import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { selectedDatabases, TestEnv } from '../testing/harness.ts';
import { fundedUser, putModel } from '../gateway/testing.ts';

// A deployment without Replicate or Stripe refuses their routes with a 503: the operator's choice (or a setting
// still to make), not a fault of Tollgate's, so the log says which setting, once a request, as a warning with no
// stack; before, each refusal was an `error` line carrying a stack trace.
for (const database of selectedDatabases()) {
  describe(`a deployment without Replicate or Stripe [${database}]`, () => {
    const logLines: string[] = [];
    const logStream = new PassThrough();
    logStream.on('data', (chunk) => logLines.push(...String(chunk).split('\n').filter(Boolean)));
    const env = new TestEnv(database, { logDestination: logStream });
    before(() => env.start());
    after(() => env.stop());

    it('answers 503 on their routes and logs one warning naming the missing setting, with no stack and no error line', async () => {
      await putModel(env, 'acme/painter', {
        provider: 'replicate',
        upstreamModel: 'acme/painter',
        pricing: { request: 0.01 },
        outputModalities: ['image'],
      });
      const user = await fundedUser(env, 1);
      const refusals: Array<[string, () => Promise<{ status: number; text: string }>]> = [
        [
          'REPLICATE_API_TOKEN',
          () =>
            env.request('POST', '/api/v1/predictions', {
              token: user.key,
              body: { version: 'acme/painter', input: { prompt: 'hi' } },
            }),
        ],
        ['REPLICATE_WEBHOOK_SECRET', () => env.request('POST', '/api/webhooks/replicate', { body: { id: 'p1' } })],
        ['STRIPE_WEBHOOK_SECRET', () => env.request('POST', '/api/webhooks/stripe', { body: { id: 'evt_1' } })],
      ];
      for (const [setting, refused] of refusals) {
        const logged = logLines.length;
        const response = await refused();
        assert.equal(response.status, 503, `${setting}: ${response.text}`);
        assert.match(response.text, new RegExp(setting));
        // The response is sent before its log line is written out: wait for the line.
        for (let i = 0; i < 50 && !logLines.slice(logged).some((line) => line.includes(setting)); i++)
          await new Promise((resolve) => setTimeout(resolve, 10));
        const entries = logLines.slice(logged).map((line) => JSON.parse(line));
        const warnings = entries.filter((entry) => entry.msg === `request refused (503): ${setting} is not set`);
        assert.equal(warnings.length, 1, JSON.stringify(entries));
        assert.equal(warnings[0].level, 40);
        assert.equal(warnings[0].setting, setting);
        assert.equal(warnings[0].err, undefined);
        assert.deepEqual(
          entries.filter((entry) => entry.level >= 50),
          [],
        );
      }
    });
  });
}
