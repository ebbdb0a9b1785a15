import { it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser } from '../../gateway/testing.ts';

const UNSUPPORTED = 'Unsupported Content-Type; send application/json.';
const CHAT = { model: 'tollgate/echo', messages: [{ role: 'user', content: 'hi' }] };

/** Every JSON route of the AI API, with a body it would take as JSON. */
const AI_ROUTES: Array<[string, unknown]> = [
  ['/api/v1/chat/completions', CHAT],
  ['/api/v1/completions', { model: 'tollgate/echo', prompt: 'hi' }],
  ['/api/v1/responses', { model: 'tollgate/echo', input: 'hi' }],
  ['/api/v1/responses/input_tokens', { model: 'tollgate/echo', input: 'hi' }],
  ['/api/v1/embeddings', { model: 'tollgate/echo', input: 'hi' }],
  ['/api/v1/images/generations', { model: 'tollgate/echo', prompt: 'a cat' }],
  ['/api/v1/audio/speech', { model: 'tollgate/echo', input: 'hi', voice: 'alloy' }],
  ['/api/v1/realtime/sessions', { model: 'tollgate/echo' }],
  ['/api/v1/realtime/client_secrets', { session: { type: 'realtime', model: 'tollgate/echo' } }],
  ['/api/v1/predictions', { version: 'acme/model', input: { prompt: 'hi' } }],
  ['/api/v1/models/acme/model/predictions', { input: { prompt: 'hi' } }],
  ['/api/v1/messages', { ...CHAT, max_tokens: 10 }],
  ['/api/v1/messages/count_tokens', CHAT],
];

/** A JSON body sent as text (fetch's default for a string) or as a form (curl -d's default). */
const MISLABELLED: Array<[string, (body: unknown) => string]> = [
  ['text/plain', (body) => JSON.stringify(body)],
  ['text/plain;charset=UTF-8', (body) => JSON.stringify(body)],
  [
    'application/x-www-form-urlencoded',
    (body) => new URLSearchParams(Object.entries(body as object).map(([k, v]) => [k, String(v)])).toString(),
  ],
];

/** The error's message and code, wherever the route's family puts them. */
function errorOf(body: any): { code: string; message: string } {
  return { code: body.error.code, message: body.error.message };
}

describeEachDatabase('a JSON route given a body that is not labelled JSON', (env) => {
  it('every /api/v1 JSON route answers 415 in its family envelope, not a 400 about the body, and nothing is charged', async () => {
    const user = await fundedUser(env, 1);
    const before = (await env.request('GET', '/api/wallet/balance', { token: user.key })).body;
    for (const [path, body] of AI_ROUTES) {
      for (const [contentType, encode] of MISLABELLED) {
        const answer = await env.request('POST', path, {
          token: user.key,
          headers: { 'content-type': contentType },
          raw: encode(body),
        });
        assert.equal(answer.status, 415, `${path} ${contentType}: ${answer.text}`);
        assert.deepEqual(errorOf(answer.body), { code: 'UNSUPPORTED_MEDIA_TYPE', message: UNSUPPORTED }, path);
        if (path.startsWith('/api/v1/messages')) {
          // Anthropic's envelope, as its clients read it.
          assert.equal(answer.body.type, 'error', path);
          assert.equal(answer.body.error.type, 'invalid_request_error', path);
        } else assert.equal(answer.body.error.type, 'invalid_request_error', path);
      }
    }
    const after = (await env.request('GET', '/api/wallet/balance', { token: user.key })).body;
    assert.deepEqual(after, before, 'nothing was charged or held');
  });

  it('the other JSON routes (dashboard, wallet, operator) answer 415 too, and do nothing', async () => {
    const session = await env.createUser();
    const dashboard = { cookie: session.cookie, 'x-csrf-token': session.csrfToken };
    const operator = { authorization: `Bearer ${env.adminToken}` };
    const routes: Array<[string, string, Record<string, string>, unknown]> = [
      ['PUT', '/api/user/low-balance-alert', dashboard, { threshold: 5 }],
      ['POST', '/api/user/webhooks', dashboard, { url: 'https://example.com/hook' }],
      ['POST', '/api/user/apps', dashboard, { name: 'x', redirectUris: 'https://example.com/cb' }],
      ['PUT', '/api/wallet/auto-topup', dashboard, { enabled: false }],
      ['POST', '/api/admin/users', operator, { email: 'form@example.com', password: 'long-enough-pw' }],
      ['POST', `/api/admin/users/${session.userId}/credits`, operator, { amount: 5, reason: 'form' }],
    ];
    for (const [method, path, headers, body] of routes) {
      for (const [contentType, encode] of MISLABELLED) {
        const answer = await env.request(method, path, {
          headers: { ...headers, 'content-type': contentType },
          raw: encode(body),
        });
        assert.equal(answer.status, 415, `${method} ${path} ${contentType}: ${answer.text}`);
        assert.deepEqual(errorOf(answer.body), { code: 'UNSUPPORTED_MEDIA_TYPE', message: UNSUPPORTED }, path);
      }
    }
    // Nothing was done: no user was created from the form, no credits granted.
    const balance = await env.dashboard(session, 'GET', '/api/wallet/balance');
    assert.equal(balance.body.balance, 0, balance.text);
    const again = await env.admin('POST', '/api/admin/users', {
      email: 'form@example.com',
      password: 'long-enough-pw',
    });
    assert.equal(again.status, 201, again.text);
  });

  it('a caller without a credential still gets its 401 first', async () => {
    const answer = await env.request('POST', '/api/v1/chat/completions', {
      token: 'ak_not_a_real_key',
      headers: { 'content-type': 'text/plain' },
      raw: JSON.stringify(CHAT),
    });
    assert.equal(answer.status, 401, answer.text);
  });

  it('JSON with a charset, and what the official openai and Anthropic clients send, still work', async () => {
    const user = await fundedUser(env, 1);
    for (const contentType of [
      'application/json',
      'application/json; charset=utf-8',
      'Application/JSON;charset=UTF-8',
    ]) {
      const answer = await env.request('POST', '/api/v1/chat/completions', {
        token: user.key,
        headers: { 'content-type': contentType },
        raw: JSON.stringify(CHAT),
      });
      assert.equal(answer.status, 200, `${contentType}: ${answer.text}`);
    }
    // What the clients send, recorded on the way out.
    const sent = new Set<string>();
    const recording: typeof fetch = (input, init) => {
      sent.add(new Headers(init?.headers).get('content-type') ?? '(none)');
      return fetch(input, init);
    };
    const openai = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0, fetch: recording });
    const completion = await openai.chat.completions.create({ model: 'tollgate/echo', messages: CHAT.messages as any });
    assert.equal(completion.choices[0].message.content, 'hi');
    const response = await openai.responses.create({ model: 'tollgate/echo', input: 'hi' });
    assert.equal(response.output_text, 'hi');
    const embedding = await openai.embeddings.create({ model: 'tollgate/echo', input: 'hi' });
    assert.equal(embedding.data.length, 1);
    const anthropic = new Anthropic({
      apiKey: user.key,
      authToken: null,
      baseURL: `${env.baseUrl}/api`,
      maxRetries: 0,
      fetch: recording,
    });
    const message = await anthropic.messages.create({ ...CHAT, messages: CHAT.messages as any, max_tokens: 10 });
    assert.deepEqual(message.content, [{ type: 'text', text: 'hi' }]);
    const counted = await anthropic.messages.countTokens({ model: 'tollgate/echo', messages: CHAT.messages as any });
    assert.ok(counted.input_tokens > 0);
    assert.deepEqual([...sent], ['application/json']);
  });

  it('the account and OAuth forms still take a form', async () => {
    const session = await env.createUser();
    const signin = await env.request('POST', '/api/auth/signin', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      raw: new URLSearchParams({ email: session.email, password: session.password }).toString(),
    });
    assert.equal(signin.status, 200, signin.text);
    const token = await env.request('POST', '/api/oauth/token', {
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      raw: 'grant_type=client_credentials&client_id=app_unknown',
    });
    assert.equal(token.headers.get('content-type')?.split(';')[0], 'application/json');
    assert.equal(typeof token.body.error, 'string', 'an OAuth error, not a media-type refusal');
    assert.notEqual(token.status, 415);
  });
});
