import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser } from '../../gateway/testing.ts';
import { registerTestApp } from '../../oauth/testing.ts';
import { findNulCharacter } from './nul-characters.ts';

const NUL = '\u0000';

describeEachDatabase('a NUL character (U+0000) in a request', (env) => {
  it('is a 400 naming where it is, in each envelope, never a 500 (PostgreSQL refuses it in text)', async () => {
    const user = await fundedUser(env, 1);
    const { session } = user;
    const cases = [
      {
        answer: await env.dashboard(session, 'POST', '/api/user/api-keys', {
          name: `a${NUL}b`,
          permissions: ['ai:chat'],
        }),
        where: 'body/name',
      },
      { answer: await env.dashboard(session, 'DELETE', `/api/user/api-keys/key_${NUL}x`), where: 'params/id' },
      {
        answer: await env.dashboard(session, 'POST', '/api/user/apps', {
          name: `a${NUL}b`,
          redirectUris: ['https://app.example.com/cb'],
          scopes: ['read'],
          type: 'public',
        }),
        where: 'body/name',
      },
      {
        answer: await env.dashboard(session, 'PATCH', `/api/user/webhooks/wep_${NUL}x`, { enabled: true }),
        where: 'params/id',
      },
      {
        answer: await env.dashboard(session, 'DELETE', `/api/user/authorized-apps/app_${NUL}x`),
        where: 'params/clientId',
      },
      { answer: await env.request('GET', `/api/v1/predictions/pred_${NUL}x`, { token: user.key }), where: 'params/id' },
      {
        answer: await env.request('POST', '/api/auth/signin', {
          body: { email: `a${NUL}@example.com`, password: 'long-enough-pw' },
        }),
        where: 'body/email',
      },
      {
        answer: await env.request('POST', '/api/auth/signup', {
          body: { email: 'new@example.com', password: 'long-enough-pw', name: `n${NUL}` },
        }),
        where: 'body/name',
      },
      {
        answer: await env.request('POST', '/signin', {
          raw: 'email=a%00b%40example.com&password=long-enough-pw',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        }),
        where: 'body/email',
      },
    ];
    for (const { answer, where } of cases) {
      assert.equal(answer.status, 400, answer.text);
      // The sign-in form's post is a page (error-page.ts): its message is the page's alert.
      const page = /<p class="error" role="alert">([^<]*)<\/p>/.exec(answer.text)?.[1];
      const message = page ?? (typeof answer.body.error === 'string' ? answer.body.error : answer.body.error.message);
      assert.match(message, new RegExp(`^${where} contains a NUL character`), answer.text);
    }
    // The keys routes keep their own envelope (contract §7.1).
    assert.equal(cases[0].answer.body.success, false);
  });

  it("refuses it in an OAuth app's client_id at the token and authorization endpoints, not with a 500", async () => {
    const app = await registerTestApp(env);
    const token = await env.request('POST', '/api/oauth/token', {
      raw: `grant_type=authorization_code&code=abc&code_verifier=xyz&redirect_uri=${encodeURIComponent(app.redirectUri)}&client_id=app_%00x`,
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assert.equal(token.status, 400, token.text);
    assert.equal(token.body.error, 'invalid_request', token.text);
    const authorize = await env.request(
      'GET',
      `/api/oauth/authorize?client_id=app_%00x&response_type=code&redirect_uri=${encodeURIComponent(app.redirectUri)}&scope=read&code_challenge=${'a'.repeat(43)}&code_challenge_method=S256`,
    );
    assert.ok(authorize.status >= 400 && authorize.status < 500, `${authorize.status} ${authorize.text.slice(0, 300)}`);
  });

  it('is a 400 in the model or version an AI call names, which is looked up rather than sent to a model', async () => {
    const user = await fundedUser(env, 1);
    for (const [path, body, where] of [
      ['/api/v1/predictions', { model: `acme/img${NUL}`, input: {} }, 'body/model'],
      ['/api/v1/predictions', { version: `v${NUL}1`, input: {} }, 'body/version'],
      [
        '/api/v1/chat/completions',
        { model: `tollgate/echo${NUL}`, messages: [{ role: 'user', content: 'x' }] },
        'body/model',
      ],
    ] as const) {
      const answer = await env.request('POST', path, { token: user.key, body });
      assert.equal(answer.status, 400, `${path}: ${answer.text}`);
      assert.match(answer.body.error.message, new RegExp(`^${where} contains a NUL character`), answer.text);
    }
  });

  it('is let through in the text of an AI call, which a model may be sent and which is stored as JSON', async () => {
    const user = await fundedUser(env, 1);
    const chat = await env.request('POST', '/api/v1/chat/completions', {
      token: user.key,
      body: { model: 'tollgate/echo', messages: [{ role: 'user', content: `a${NUL}b` }] },
    });
    assert.equal(chat.status, 200, chat.text);
    assert.equal(chat.body.choices[0].message.content, `a${NUL}b`);
  });
});

it('findNulCharacter walks keys and values of any depth without recursion', () => {
  assert.equal(findNulCharacter({ a: [1, 'x', { b: `y${NUL}` }] }), '/a/2/b');
  assert.equal(findNulCharacter({ [`k${NUL}`]: 1 }), `/k${NUL}`);
  assert.equal(findNulCharacter(['ok', null, 3, true]), null);
  // A raw body (the signed webhooks read theirs as bytes) is not searched.
  assert.equal(findNulCharacter(Buffer.from(`x${NUL}`)), null);
  assert.equal(findNulCharacter(Object.assign(Object.create(null), { q: NUL })), '/q');
  let deep: unknown = `z${NUL}`;
  for (let i = 0; i < 200_000; i++) deep = [deep];
  assert.ok(findNulCharacter(deep)?.startsWith('/0/0/0'));
});
