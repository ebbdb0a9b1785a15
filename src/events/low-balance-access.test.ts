import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { fundedUser } from '../gateway/testing.ts';
import { authorizeForTest } from '../oauth/testing.ts';

describeEachDatabase('who may use /api/user/low-balance-alert', (env) => {
  it("an app's token or an API key gets a 403 that names the low-balance alert and the dashboard session, not webhooks", async () => {
    const app = await authorizeForTest(env);
    const { key } = await fundedUser(env, 0, ['ai:chat', 'billing:read']);
    for (const [what, token] of [
      ["an app's access token", app.accessToken],
      ['an API key', key],
    ]) {
      for (const [method, body] of [
        ['GET', undefined],
        ['PUT', { threshold: 5 }],
      ] as const) {
        const answer = await env.request(method, '/api/user/low-balance-alert', { token, body });
        assert.equal(answer.status, 403, `${what} ${method}: ${answer.text}`);
        assert.equal(answer.body.error.code, 'PERMISSION_DENIED');
        assert.equal(
          answer.body.error.message,
          'The low-balance alert can only be read or set from the dashboard (a signed-in session); no app scope or API key permission grants it.',
          `${what} ${method}`,
        );
      }
    }
    // The dashboard session is the credential that may.
    const session = await env.createUser();
    assert.equal((await env.dashboard(session, 'GET', '/api/user/low-balance-alert')).status, 200);
  });
});
