import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser, holdsOf, wallet } from '../../gateway/testing.ts';

const JSON_HEADERS = { 'content-type': 'application/json' };

describeEachDatabase('a JSON body with a key the parser refuses (__proto__, constructor.prototype)', (env) => {
  it('is a 400 INVALID_REQUEST naming the key, not "not valid JSON", in each route family’s envelope; nothing held', async () => {
    const user = await fundedUser(env, 1);
    const chat = await env.request('POST', '/api/v1/chat/completions', {
      token: user.key,
      headers: JSON_HEADERS,
      raw: '{"model":"tollgate/echo","messages":[{"role":"user","content":"hi","__proto__":{"admin":true}}]}',
    });
    assert.equal(chat.status, 400, chat.text);
    assert.equal(chat.body.error.code, 'INVALID_REQUEST');
    assert.equal(chat.body.error.param, 'messages[0].__proto__');
    assert.equal(
      chat.body.error.message,
      'The body has a key the server refuses: "messages[0].__proto__" (a "__proto__" key, or "prototype" inside "constructor", could change the objects built from the body); rename or remove it.',
    );
    const messages = await env.request('POST', '/api/v1/messages', {
      token: user.key,
      headers: JSON_HEADERS,
      raw: '{"model":"tollgate/echo","max_tokens":8,"constructor":{"prototype":{}},"messages":[{"role":"user","content":"hi"}]}',
    });
    assert.equal(messages.status, 400, messages.text);
    assert.equal(messages.body.type, 'error');
    assert.match(messages.body.error.message, /refuses: "constructor\.prototype"/);
    const key = await env.request('POST', '/api/user/api-keys', {
      headers: { ...JSON_HEADERS, cookie: user.session.cookie, 'x-csrf-token': user.session.csrfToken },
      raw: '{"__proto__":{"x":1},"name":"k","permissions":["ai:chat"]}',
    });
    assert.equal(key.status, 400, key.text);
    assert.equal(key.body.success, false);
    assert.match(key.body.error, /refuses: "__proto__"/);
    assert.deepEqual(await holdsOf(env, user), []);
    assert.equal((await wallet(env, user)).balance, 1_000_000);
  });

  it('a body that is not JSON is still "not valid JSON", and "__proto__" or "constructor" as text or a plain value is taken', async () => {
    const user = await fundedUser(env, 1);
    const garbled = await env.request('POST', '/api/v1/chat/completions', {
      token: user.key,
      headers: JSON_HEADERS,
      raw: '{"model":"tollgate/echo","__proto__":',
    });
    assert.equal(garbled.status, 400);
    assert.equal(garbled.body.error.message, 'The body is not valid JSON.');
    const taken = await env.request('POST', '/api/v1/chat/completions', {
      token: user.key,
      headers: JSON_HEADERS,
      raw: '{"model":"tollgate/echo","user":"constructor","messages":[{"role":"user","content":"__proto__"}]}',
    });
    assert.equal(taken.status, 200, taken.text);
  });
});
