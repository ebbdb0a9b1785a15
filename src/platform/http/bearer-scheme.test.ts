import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser } from '../../gateway/testing.ts';
import { authorizeForTest } from '../../oauth/testing.ts';

const CHAT = { model: 'tollgate/echo', messages: [{ role: 'user', content: 'hi' }] };

/**
 * `Authorization: Bearer <token>` (contract §5.1) is HTTP's Bearer scheme, whose name is case-insensitive
 * (RFC 9110 §11.1, RFC 6750 §2.1: `"Bearer" 1*SP b64token`). Clients that write `bearer` or put two spaces
 * before the token must be let in, as every OAuth resource server lets them.
 */
describeEachDatabase('the Bearer scheme of the Authorization header', (env) => {
  it('is matched whatever its case, with one or more spaces before the credential: access token and API key', async () => {
    const auth = await authorizeForTest(env);
    const user = await fundedUser(env, 1);
    for (const scheme of ['bearer', 'BEARER', 'Bearer ', 'bEaReR  ']) {
      const keys = await env.request('GET', '/api/user/api-keys', {
        headers: { authorization: `${scheme} ${auth.accessToken}` },
      });
      assert.equal(keys.status, 200, `${JSON.stringify(scheme)}: ${keys.text}`);
      assert.equal(keys.body.success, true);
      const me = await env.request('GET', '/api/user/me', {
        headers: { authorization: `${scheme} ${auth.accessToken}` },
      });
      assert.equal(me.status, 200, `${JSON.stringify(scheme)}: ${me.text}`);
      const chat = await env.request('POST', '/api/v1/chat/completions', {
        headers: { authorization: `${scheme} ${user.key}` },
        body: CHAT,
      });
      assert.equal(chat.status, 200, `${JSON.stringify(scheme)}: ${chat.text}`);
      assert.equal(chat.body.choices[0].message.content, 'hi');
    }
  });

  it('still refuses another scheme, a missing credential and a credential with a space in it (401)', async () => {
    const auth = await authorizeForTest(env);
    for (const header of [
      `Basic ${auth.accessToken}`,
      `Bearer`,
      `Bearer${auth.accessToken}`,
      `Bearer ${auth.accessToken} extra`,
      `Token ${auth.accessToken}`,
    ]) {
      const answer = await env.request('GET', '/api/user/api-keys', { headers: { authorization: header } });
      assert.equal(answer.status, 401, `${header}: ${answer.text}`);
      assert.deepEqual(answer.body, {
        success: false,
        error: 'The Authorization header must be "Bearer <token>".',
      });
    }
  });

  it('a 401 carries the Bearer challenge HTTP requires (RFC 9110 §11.6.1, RFC 6750 §3): invalid_token for a refused credential', async () => {
    const user = await fundedUser(env, 0, ['ai:chat']);
    const revoked = await env.dashboard(user.session, 'GET', '/api/user/api-keys');
    await env.dashboard(user.session, 'DELETE', `/api/user/api-keys/${revoked.body.apiKeys[0].id}`);
    const cases: Array<[string, string, Record<string, string>, string]> = [
      ['no credential', '/api/user/api-keys', {}, 'Bearer realm="tollgate"'],
      ['no credential', '/api/wallet/balance', {}, 'Bearer realm="tollgate"'],
      [
        'unknown token',
        '/api/user/me',
        { authorization: 'Bearer not-a-token' },
        'Bearer realm="tollgate", error="invalid_token"',
      ],
      [
        'revoked key',
        '/api/v1/models',
        { authorization: `Bearer ${user.key}` },
        'Bearer realm="tollgate", error="invalid_token"',
      ],
      [
        'another scheme',
        '/api/user/api-keys',
        { authorization: 'Basic dXNlcjpwdw==' },
        'Bearer realm="tollgate", error="invalid_request"',
      ],
    ];
    for (const [what, path, headers, challenge] of cases) {
      const answer = await env.request('GET', path, { headers });
      assert.equal(answer.status, 401, `${what} ${path}: ${answer.text}`);
      assert.equal(answer.headers.get('www-authenticate'), challenge, `${what} ${path}`);
    }
    // A refusal that is not about the credential (a missing scope) is a 403 without a challenge to sign in again.
    const chatOnly = await authorizeForTest(env, { scopes: ['ai:chat'] });
    const scoped = await env.request('GET', '/api/user/me', { token: chatOnly.accessToken });
    assert.equal(scoped.status, 403, scoped.text);
    assert.equal(scoped.headers.get('www-authenticate'), null);
  });
});
