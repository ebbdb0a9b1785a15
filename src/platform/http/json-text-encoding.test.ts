import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser, holdsOf } from '../../gateway/testing.ts';

/**
 * A JSON file saved by a Windows editor starts with a UTF-8 byte order mark, which RFC 8259 §8.1 lets a parser
 * ignore; one saved by Windows PowerShell is UTF-16. Sent as is (`curl -d @body.json`), the first must be read
 * like any JSON, and the second told what is wrong with it, not "not valid JSON".
 */
describeEachDatabase('a JSON body as a Windows tool saves it', (env) => {
  const chat = { model: 'tollgate/echo', messages: [{ role: 'user', content: 'hi' }] };
  const send = (user: { key: string }, bytes: Buffer) =>
    fetch(`${env.baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${user.key}` },
      body: new Uint8Array(bytes),
    });

  it('with a UTF-8 byte order mark is read as the JSON after it, on the AI calls and the dashboard routes', async () => {
    const user = await fundedUser(env, 10, ['ai:chat']);
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const response = await send(user, Buffer.concat([bom, Buffer.from(JSON.stringify(chat))]));
    assert.equal(response.status, 200, await response.clone().text());
    assert.equal(((await response.json()) as any).object, 'chat.completion');

    const keys = await fetch(`${env.baseUrl}/api/user/api-keys`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        cookie: user.session.cookie,
        'x-csrf-token': user.session.csrfToken,
      },
      body: new Uint8Array(Buffer.concat([bom, Buffer.from('{"name":"from notepad","permissions":["ai:chat"]}')])),
    });
    assert.equal(keys.status, 200, await keys.clone().text());
    assert.equal(((await keys.json()) as any).success, true);
  });

  it('in UTF-16, with or without its byte order mark, is a 400 saying to send UTF-8, and nothing is held', async () => {
    const user = await fundedUser(env, 10, ['ai:chat']);
    const utf16le = Buffer.from(JSON.stringify(chat), 'utf16le');
    const utf16be = Buffer.from(utf16le).swap16();
    for (const [name, bytes] of [
      ['UTF-16LE with its mark', Buffer.concat([Buffer.from([0xff, 0xfe]), utf16le])],
      ['UTF-16BE with its mark', Buffer.concat([Buffer.from([0xfe, 0xff]), utf16be])],
      ['UTF-16LE without', utf16le],
      ['UTF-16BE without', utf16be],
    ] as const) {
      const response = await send(user, bytes);
      const body = (await response.json()) as any;
      assert.equal(response.status, 400, `${name}: ${JSON.stringify(body)}`);
      assert.equal(body.error.code, 'INVALID_REQUEST');
      assert.match(body.error.message, /not UTF-8 \(it looks like UTF-16.*send the JSON encoded as UTF-8/, name);
    }
    assert.deepEqual(await holdsOf(env, user), [], 'nothing held');
  });
});
