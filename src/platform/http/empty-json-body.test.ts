import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser } from '../../gateway/testing.ts';

/** Clients that label every request JSON (fetch wrappers, the replicate client) send an empty body so labelled. */
const EMPTY_JSON = { headers: { 'content-type': 'application/json' }, raw: '' };

describeEachDatabase('an empty body labelled application/json', (env) => {
  it('is no body for a route that takes none: a DELETE and an action POST answer as with no body at all', async () => {
    const session = await env.createUser();
    const dashboard = { cookie: session.cookie, 'x-csrf-token': session.csrfToken };
    const created = await env.dashboard(session, 'POST', '/api/user/api-keys', { name: 'k', permissions: ['ai:chat'] });
    assert.equal(created.status, 200, created.text);
    const revoked = await env.request('DELETE', `/api/user/api-keys/${created.body.apiKey.id}`, {
      ...EMPTY_JSON,
      headers: { ...EMPTY_JSON.headers, ...dashboard },
    });
    assert.equal(revoked.status, 200, revoked.text);
    const signedOut = await env.request('POST', '/api/auth/signout', {
      ...EMPTY_JSON,
      headers: { ...EMPTY_JSON.headers, ...dashboard },
    });
    assert.equal(signedOut.status, 200, signedOut.text);
    assert.equal((await env.dashboard(session, 'GET', '/api/user/api-keys')).status, 401, 'the session ended');
  });

  it('is still refused where a body is required, with the same clear 400; a body that is not JSON too', async () => {
    const user = await fundedUser(env, 1);
    const empty = await env.request('POST', '/api/v1/chat/completions', { token: user.key, ...EMPTY_JSON });
    assert.equal(empty.status, 400);
    assert.equal(empty.body.error.code, 'INVALID_REQUEST');
    assert.equal(empty.body.error.message, 'The JSON body is empty.');
    const garbled = await env.request('POST', '/api/v1/chat/completions', {
      token: user.key,
      headers: EMPTY_JSON.headers,
      raw: '{"model":',
    });
    assert.equal(garbled.status, 400);
    assert.equal(garbled.body.error.message, 'The body is not valid JSON.');
    // Fastify's poisoning checks stay: a __proto__ key is refused, not merged.
    const poisoned = await env.request('POST', '/api/v1/chat/completions', {
      token: user.key,
      headers: EMPTY_JSON.headers,
      raw: '{"model":"tollgate/echo","messages":[{"role":"user","content":"hi"}],"__proto__":{"x":1}}',
    });
    assert.equal(poisoned.status, 400, poisoned.text);
  });
});
