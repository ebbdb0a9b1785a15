import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser, holdsOf, putModel, wallet } from '../../gateway/testing.ts';
import { MAX_JSON_NESTING } from './json-nesting.ts';

const JSON_HEADERS = { 'content-type': 'application/json' };

/** A JSON object nested `levels` deep: `{"a":{"a":…1…}}`. */
function nested(levels: number): string {
  return '{"a":'.repeat(levels - 1) + '{"a":1}' + '}'.repeat(levels - 1);
}

describeEachDatabase('a JSON body nested deeper than the server reads', (env) => {
  it('is a 400 INVALID_REQUEST before anything is done, in the route family’s envelope; one at the limit is taken', async () => {
    await putModel(env, 'acme/echo-nested', { provider: 'echo', upstreamModel: 'echo', pricing: { prompt: 1 } });
    const user = await fundedUser(env, 10, ['ai:chat']);
    const before = await wallet(env, user);
    // A stored Responses call re-serialises its tools: 20,000 levels overflowed JSON.stringify after the call was
    // charged (a 500), and the official SDKs would have retried it.
    const responses = (parameters: string) =>
      env.request('POST', '/api/v1/responses', {
        token: user.key,
        headers: JSON_HEADERS,
        raw: `{"model":"acme/echo-nested","input":"hi","store":true,"tools":[{"type":"function","name":"f","parameters":${parameters}}]}`,
      });
    const deep = await responses(nested(20_000));
    assert.equal(deep.status, 400, deep.text.slice(0, 300));
    assert.equal(deep.body.error.code, 'INVALID_REQUEST');
    assert.equal(
      deep.body.error.message,
      `The JSON body is nested more than ${MAX_JSON_NESTING} levels deep; flatten it.`,
    );
    assert.deepEqual(await wallet(env, user), before, 'nothing charged');
    assert.deepEqual(await holdsOf(env, user), [], 'nothing held');

    // Anthropic's clients read their own envelope; arrays count as objects do; brackets inside strings do not.
    const messages = await env.request('POST', '/api/v1/messages', {
      token: user.key,
      headers: JSON_HEADERS,
      raw: `{"model":"acme/echo-nested","max_tokens":8,"messages":[{"role":"user","content":"hi"}],"metadata":${'['.repeat(MAX_JSON_NESTING)}${']'.repeat(MAX_JSON_NESTING)}}`,
    });
    assert.equal(messages.status, 400, messages.text.slice(0, 300));
    assert.equal(messages.body.type, 'error');
    assert.equal(messages.body.error.type, 'invalid_request_error');
    assert.match(messages.body.error.message, /nested more than/);

    // Exactly at the limit (the body itself is level 1), and text full of brackets: answered as before.
    const atLimit = await responses(nested(MAX_JSON_NESTING - 3));
    assert.equal(atLimit.status, 200, atLimit.text.slice(0, 300));
    const brackets = await env.request('POST', '/api/v1/chat/completions', {
      token: user.key,
      body: { model: 'acme/echo-nested', messages: [{ role: 'user', content: `"\\${'[{'.repeat(5_000)}` }] },
    });
    assert.equal(brackets.status, 200, brackets.text.slice(0, 300));

    // A dashboard route too (the keys envelope).
    const keys = await env.request('POST', '/api/user/api-keys', {
      headers: { ...JSON_HEADERS, cookie: user.session.cookie, 'x-csrf-token': user.session.csrfToken },
      raw: nested(MAX_JSON_NESTING + 1),
    });
    assert.equal(keys.status, 400, keys.text.slice(0, 300));
    assert.deepEqual(keys.body, {
      success: false,
      error: `The JSON body is nested more than ${MAX_JSON_NESTING} levels deep; flatten it.`,
    });
  });
});
