import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser } from '../../gateway/testing.ts';

/**
 * `x-api-key` is read on the Messages routes only (README, Anthropic Messages). Anthropic's clients send it on
 * every call (the SDK's `models.list()` too): a 401 that says a credential is required, when one was sent,
 * leaves the developer looking for a fault in the key.
 */
describeEachDatabase('a credential sent in x-api-key to a route that does not read it', (env) => {
  it('is a 401 that says to send it as Authorization: Bearer, with the challenge', async () => {
    const user = await fundedUser(env, 0);
    for (const path of ['/api/v1/models', '/api/wallet/balance']) {
      const answer = await env.request('GET', path, { headers: { 'x-api-key': user.key } });
      assert.equal(answer.status, 401, `${path}: ${answer.text}`);
      assert.equal(answer.body.error.code, 'UNAUTHENTICATED');
      assert.equal(
        answer.body.error.message,
        'This route does not read x-api-key (only the Anthropic Messages routes do): send the credential as "Authorization: Bearer <token>".',
        path,
      );
      assert.equal(answer.headers.get('www-authenticate'), 'Bearer realm="tollgate", error="invalid_request"', path);
      // Sent as Bearer, the same key is let in.
      const bearer = await env.request('GET', path, { token: user.key });
      assert.notEqual(bearer.status, 401, `${path}: ${bearer.text}`);
    }
  });
});
