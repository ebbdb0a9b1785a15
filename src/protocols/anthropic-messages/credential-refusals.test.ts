import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser } from '../../gateway/testing.ts';

const BODY = { model: 'tollgate/echo', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };
const UNKNOWN_KEY = `ak_${'0'.repeat(40)}`;

/**
 * The Messages routes read a credential from `x-api-key` (Anthropic's clients) or `Authorization: Bearer`: a
 * refused one is named by the header it came in, so that a developer looks at the credential that was read.
 */
describeEachDatabase('a refused credential on the Messages routes', (env) => {
  it('names the header it was sent in: x-api-key, Authorization, or both, in Anthropic’s envelope with the challenge', async () => {
    const user = await fundedUser(env, 1);
    const cases: Array<[Record<string, string>, string]> = [
      [{ 'x-api-key': UNKNOWN_KEY }, 'The x-api-key credential is invalid, expired or revoked.'],
      [
        { authorization: `Bearer ${UNKNOWN_KEY}` },
        'The bearer token (Authorization header) is invalid, expired or revoked.',
      ],
      [
        { 'x-api-key': UNKNOWN_KEY, authorization: `Bearer ${UNKNOWN_KEY}` },
        'The credential sent in both x-api-key and Authorization is invalid, expired or revoked.',
      ],
      [
        { 'x-api-key': user.key, authorization: `Bearer ${UNKNOWN_KEY}` },
        'The bearer token (Authorization header) is invalid, expired or revoked; the x-api-key header sent with it was not read, since Authorization comes first: send one credential.',
      ],
    ];
    for (const path of ['/api/v1/messages', '/api/v1/messages/count_tokens'])
      for (const [headers, message] of cases) {
        const answer = await env.request('POST', path, { headers, body: BODY });
        assert.equal(answer.status, 401, `${path} ${JSON.stringify(Object.keys(headers))}: ${answer.text}`);
        assert.equal(answer.body.type, 'error');
        assert.equal(answer.body.error.type, 'authentication_error');
        assert.equal(answer.body.error.message, message, `${path} ${Object.keys(headers)}`);
        assert.equal(answer.headers.get('www-authenticate'), 'Bearer realm="tollgate", error="invalid_token"');
      }
    // Either header alone, with the user's key, is let in.
    for (const headers of [{ 'x-api-key': user.key }, { authorization: `Bearer ${user.key}` }] as Array<
      Record<string, string>
    >)
      assert.equal((await env.request('POST', '/api/v1/messages', { headers, body: BODY })).status, 200);
  });
});
