import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../../testing/harness.ts';
import { authorizeForTest } from '../../oauth/testing.ts';

/**
 * A URL the router cannot take apart (a percent-encoding that is not UTF-8, a path segment longer than any id)
 * is refused before any route is chosen. It must still be a 400 in the envelope of the route family the path
 * belongs to (contract §7.1 and decisions.md: `{ success: false, error }` under /api/user/api-keys,
 * `{ error: { code, message, type } }` elsewhere), with the usual security headers, not Fastify's own body that
 * echoes the whole path back.
 */
describeEachDatabase('a URL the router cannot read', (env) => {
  it('is a 400 in the route family envelope: bad percent-encoding and an over-long id, keys and API routes', async () => {
    const { accessToken } = await authorizeForTest(env);
    const longId = `key_${'k'.repeat(3000)}`;
    const keys = [
      await env.request('DELETE', '/api/user/api-keys/%FF', { token: accessToken }),
      await env.request('DELETE', '/api/user/api-keys/%C3%28', { token: accessToken }),
      await env.request('DELETE', `/api/user/api-keys/${longId}`, { token: accessToken }),
    ];
    for (const answer of keys) {
      assert.equal(answer.status, 400, answer.text);
      assert.deepEqual(Object.keys(answer.body).sort(), ['error', 'success'], answer.text);
      assert.equal(answer.body.success, false);
      assert.equal(typeof answer.body.error, 'string');
      assert.ok(!answer.text.includes('k'.repeat(200)), 'the path is not echoed back');
      assert.equal(answer.headers.get('x-content-type-options'), 'nosniff');
      assert.ok(answer.headers.get('x-request-id'));
    }
    assert.match(keys[0]!.body.error, /percent-encoded/);
    assert.match(keys[2]!.body.error, /longer than/);

    const api = [
      await env.request('GET', '/api/v1/predictions/%FF', { token: accessToken }),
      await env.request('GET', `/api/v1/predictions/pred_${'p'.repeat(3000)}`, { token: accessToken }),
    ];
    for (const answer of api) {
      assert.equal(answer.status, 400, answer.text);
      assert.equal(answer.body.error.code, 'INVALID_REQUEST', answer.text);
      assert.equal(answer.body.error.type, 'invalid_request_error');
      assert.equal(typeof answer.body.error.message, 'string');
      assert.equal(answer.headers.get('x-content-type-options'), 'nosniff');
    }
  });

  it('leaves well-formed URLs to their routes: an unknown key is still 404 "API key not found."', async () => {
    const { accessToken } = await authorizeForTest(env);
    const answer = await env.request('DELETE', `/api/user/api-keys/key_${'k'.repeat(90)}`, { token: accessToken });
    assert.equal(answer.status, 404, answer.text);
    assert.deepEqual(answer.body, { success: false, error: 'API key not found.' });
  });
});
