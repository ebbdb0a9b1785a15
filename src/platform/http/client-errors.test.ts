import { it } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { describeEachDatabase } from '../../testing/harness.ts';
import { ERROR_CODES } from '../errors.ts';

/** Sends `bytes` on a new connection and reads the whole answer until the server closes it. */
function exchange(baseUrl: string, bytes: Buffer): Promise<{ status: number; headers: string; body: any }> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.end(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (chunk) => chunks.push(chunk as Buffer));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head, ...rest] = text.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(head ?? '')?.[1]);
      let body: any = rest.join('\r\n\r\n');
      try {
        body = JSON.parse(body);
      } catch {}
      resolve({ status, headers: head ?? '', body });
    });
  });
}

const request = (line: string, headers: string[] = []) =>
  Buffer.concat([Buffer.from(`${line}\r\nHost: x\r\n${headers.map((h) => `${h}\r\n`).join('')}\r\n`, 'latin1')]);

/**
 * A request Node's HTTP parser refuses never reaches a route: headers past Node's limit (16 KiB), a request line
 * with raw bytes that are not ASCII, bytes that are not HTTP. Its answer must still be the route family's
 * envelope with a code of the catalogue and that code's status, not Fastify's own `{"error":"Bad Request",
 * "message":"Client Error"}`.
 */
describeEachDatabase('a request the HTTP parser cannot read', (env) => {
  it('headers past 16 KiB are a 431 HEADERS_TOO_LARGE in the envelope of the path the request line names', async () => {
    const big = [`x-junk: ${'a'.repeat(20_000)}`];
    const api = await exchange(env.baseUrl, request('GET /api/v1/models HTTP/1.1', big));
    assert.equal(api.status, 431, JSON.stringify(api));
    assert.equal(ERROR_CODES.HEADERS_TOO_LARGE.status, 431);
    assert.equal(api.body.error.code, 'HEADERS_TOO_LARGE');
    assert.equal(api.body.error.type, 'invalid_request_error');
    assert.match(api.body.error.message, /headers are larger than the 16384 bytes/);
    assert.match(api.headers, /\r\ncontent-type: application\/json; charset=utf-8/i);
    assert.match(api.headers, /\r\nx-content-type-options: nosniff/i);

    const keys = await exchange(env.baseUrl, request('DELETE /api/user/api-keys/key_1 HTTP/1.1', big));
    assert.equal(keys.status, 431);
    assert.equal(keys.body.success, false);
    assert.match(keys.body.error, /headers are larger/);

    const messages = await exchange(env.baseUrl, request('POST /api/v1/messages HTTP/1.1', big));
    assert.equal(messages.status, 431);
    assert.equal(messages.body.type, 'error');
    assert.equal(messages.body.error.type, 'invalid_request_error');

    // OAuth clients read RFC 6749's { error, error_description } on the endpoints they call.
    for (const path of ['/api/oauth/token', '/api/oauth/revoke', '/api/oauth/introspect', '/api/oauth/userinfo']) {
      const oauth = await exchange(env.baseUrl, request(`POST ${path} HTTP/1.1`, big));
      assert.equal(oauth.status, 431, path);
      assert.equal(oauth.body.error, 'invalid_request', `${path}: ${JSON.stringify(oauth.body)}`);
      assert.match(oauth.body.error_description, /headers are larger/);
    }
  });

  it('an Expect other than 100-continue is a 417 EXPECTATION_FAILED in the envelope of the path, saying what to send', async () => {
    const api = await exchange(env.baseUrl, request('GET /api/v1/models HTTP/1.1', ['Expect: 200-ok']));
    assert.equal(api.status, 417, JSON.stringify(api));
    assert.equal(ERROR_CODES.EXPECTATION_FAILED.status, 417);
    assert.equal(api.body.error.code, 'EXPECTATION_FAILED');
    assert.match(api.body.error.message, /"200-ok".*without it/);
    assert.match(api.headers, /\r\ncontent-type: application\/json; charset=utf-8/i);

    const messages = await exchange(
      env.baseUrl,
      request('POST /api/v1/messages HTTP/1.1', [
        'Expect: 200-ok',
        'Content-Type: application/json',
        'Content-Length: 2',
      ]),
    );
    assert.equal(messages.status, 417);
    assert.equal(messages.body.type, 'error');
    assert.equal(messages.body.error.type, 'invalid_request_error');

    // 100-continue is met as before: the server says continue and the request reaches its route.
    const continued = await exchange(
      env.baseUrl,
      request('GET /healthz HTTP/1.1', ['Expect: 100-continue', 'Connection: close']),
    );
    assert.match(continued.headers, /^HTTP\/1\.1 100 Continue/);
    assert.match(JSON.stringify(continued.body), /HTTP\/1\.1 200 OK/);
  });

  it('a request line with raw non-ASCII bytes, or bytes that are not HTTP, is a 400 INVALID_REQUEST saying what to send', async () => {
    const raw = await exchange(env.baseUrl, request('GET /api/wallet/balance?cursor=\u00e9 HTTP/1.1'));
    assert.equal(raw.status, 400, JSON.stringify(raw));
    assert.equal(raw.body.error.code, 'INVALID_REQUEST');
    assert.match(raw.body.error.message, /not valid HTTP\/1\.1 \(Invalid char in url query\).*percent-encoded/);

    // Body framing that could smuggle a second request: said so, with what to send instead.
    const framing = await exchange(
      env.baseUrl,
      request('POST /api/user/api-keys HTTP/1.1', ['Content-Length: 2', 'Transfer-Encoding: chunked']),
    );
    assert.equal(framing.status, 400, JSON.stringify(framing));
    assert.equal(framing.body.success, false);
    assert.match(framing.body.error, /one Content-Length that matches it, or with Transfer-Encoding: chunked alone/);

    const garbage = await exchange(env.baseUrl, Buffer.from('\x00\xff{{ hello\r\n\r\n', 'latin1'));
    assert.equal(garbage.status, 400, JSON.stringify(garbage));
    assert.equal(garbage.body.error.code, 'INVALID_REQUEST');

    // HTTP/1.1 without a Host header: Node's own refusal was a bare 400 with no body.
    const hostless = await exchange(env.baseUrl, Buffer.from('GET /api/user/api-keys HTTP/1.1\r\n\r\n'));
    assert.equal(hostless.status, 400, JSON.stringify(hostless));
    assert.equal(hostless.body.success, false);
    assert.match(hostless.body.error, /needs a Host header/);
    const old = await exchange(env.baseUrl, Buffer.from('GET /healthz HTTP/1.0\r\n\r\n'));
    assert.equal(old.status, 200, 'HTTP/1.0 has no Host header to require');

    // The server still answers well-formed requests on new connections.
    assert.equal((await env.request('GET', '/healthz')).status, 200);
  });
});
