import { it } from 'node:test';
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser, holdsOf } from '../../gateway/testing.ts';

/**
 * The server reads bodies as sent: it decompresses nothing. A JSON body sent compressed (a client with request
 * compression turned on) must be told that, with the status of an unsupported coding (RFC 9110 §15.5.16: 415),
 * not "The body is not valid JSON", which sends a person looking for a syntax error that is not there.
 */
describeEachDatabase('a JSON body sent with a Content-Encoding', (env) => {
  it('is a 415 UNSUPPORTED_MEDIA_TYPE saying to send it uncompressed, in the route family’s envelope; identity is taken', async () => {
    const user = await fundedUser(env, 10, ['ai:chat']);
    const chat = { model: 'tollgate/echo', messages: [{ role: 'user', content: 'hi' }] };
    const send = (path: string, encoding: string, body: Buffer | string, headers: Record<string, string> = {}) =>
      fetch(`${env.baseUrl}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'content-encoding': encoding, ...headers },
        body: typeof body === 'string' ? body : new Uint8Array(body),
      });
    for (const encoding of ['gzip', 'br', 'deflate, gzip']) {
      const response = await send('/api/v1/chat/completions', encoding, gzipSync(JSON.stringify(chat)), {
        authorization: `Bearer ${user.key}`,
      });
      const body = (await response.json()) as any;
      assert.equal(response.status, 415, `${encoding}: ${JSON.stringify(body)}`);
      assert.equal(body.error.code, 'UNSUPPORTED_MEDIA_TYPE');
      assert.equal(
        body.error.message,
        'A compressed body (Content-Encoding) is not accepted; send the JSON uncompressed.',
      );
    }
    assert.deepEqual(await holdsOf(env, user), [], 'nothing held');

    const keys = await send('/api/user/api-keys', 'gzip', gzipSync('{"name":"k","permissions":["ai:chat"]}'), {
      cookie: user.session.cookie,
      'x-csrf-token': user.session.csrfToken,
    });
    assert.equal(keys.status, 415);
    assert.deepEqual(await keys.json(), {
      success: false,
      error: 'A compressed body (Content-Encoding) is not accepted; send the JSON uncompressed.',
    });

    const identity = await send('/api/v1/chat/completions', 'identity', JSON.stringify(chat), {
      authorization: `Bearer ${user.key}`,
    });
    assert.equal(identity.status, 200, await identity.text());
  });
});
