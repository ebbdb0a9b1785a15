import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser } from '../../gateway/testing.ts';

describeEachDatabase('authentication comes before body validation', (env) => {
  it("a caller without a valid credential gets 401 for a malformed body, in each surface's envelope; with one, a 400 that reads cleanly", async () => {
    const bad = { nonsense: true };
    const chat = await env.request('POST', '/api/v1/chat/completions', { token: 'ak_not_a_real_key', body: bad });
    assert.equal(chat.status, 401);
    assert.equal(chat.body.error.code, 'UNAUTHENTICATED');
    const messages = await env.request('POST', '/api/v1/messages', {
      headers: { 'x-api-key': 'ak_not_a_real_key' },
      body: bad,
    });
    assert.equal(messages.status, 401);
    assert.equal(messages.body.type, 'error');
    assert.equal(messages.body.error.type, 'authentication_error');
    const admin = await env.request('POST', '/api/admin/users', { token: 'not-the-operator', body: bad });
    assert.equal(admin.status, 401);

    const user = await fundedUser(env, 1);
    const validated = await env.request('POST', '/api/v1/chat/completions', { token: user.key, body: bad });
    assert.equal(validated.status, 400);
    assert.equal(validated.body.error.code, 'INVALID_REQUEST');
    // A root-level failure reads "Invalid body: must have …", not with the validator's path left as a gap.
    assert.match(validated.body.error.message, /^Invalid body: must have required property '\w+'$/);
  });

  it('a schema refusal names its field in param, as every other refusal does: nested, in an array, or missing', async () => {
    const user = await fundedUser(env, 1);
    const chat = (body: unknown) => env.request('POST', '/api/v1/chat/completions', { token: user.key, body });
    const cases: Array<[unknown, string]> = [
      [{ messages: [{ role: 'user', content: 'hi' }] }, 'model'],
      [{ model: 5, messages: [{ role: 'user', content: 'hi' }] }, 'model'],
      [{ model: 'tollgate/echo', messages: [{ content: 'hi' }] }, 'messages[0].role'],
      [{ model: 'tollgate/echo', messages: [{ role: 'user', content: 'hi' }], max_tokens: -1 }, 'max_tokens'],
    ];
    for (const [body, param] of cases) {
      const response = await chat(body);
      assert.equal(response.status, 400, response.text);
      assert.equal(response.body.error.code, 'INVALID_REQUEST');
      assert.equal(response.body.error.param, param, response.text);
    }
    const app = await env.dashboard(user.session, 'POST', '/api/user/apps', {
      name: 'app',
      redirectUris: ['http://127.0.0.1:9/cb'],
      scopes: ['ai:chat'],
      type: 'public',
    });
    assert.equal(app.status, 201, app.text);
    const limits = await env.dashboard(user.session, 'PATCH', `/api/user/authorized-apps/${app.body.clientId}`, {
      limits: { daily: -1 },
    });
    assert.equal(limits.status, 400, limits.text);
    assert.equal(limits.body.error.param, 'limits.daily', limits.text);
  });
});
