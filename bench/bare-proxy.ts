import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { pipeline } from 'node:stream/promises';
import { request } from 'undici';

/**
 * The benchmark's reference row: the smallest honest forwarding proxy, to show what putting any Node process
 * between the client and the upstream costs on this machine before a gateway does any work of its own. Every
 * gateway in the report pays at least this; the direct path pays none of it, so "≥ 0.5× of direct" is judged
 * against a figure this row shows to be out of reach of a plain proxy where the upstream answers in no time.
 *
 * It does what forwarding needs and nothing more: a `node:http` server reads the request body, sends it to the
 * upstream's `/v1/chat/completions` with undici's `request` (its default keep-alive pool: the client
 * Tollgate's providers use, see src/providers/http.ts), and pipes the answer back as it arrives, streams
 * included, with the upstream's status and content type. No auth, no billing, no parsing, no logging.
 *
 * Usage: `node bench/bare-proxy.ts <upstream base URL>`. Prints `{"url": …}` on one line once it listens on a
 * free loopback port; stops on SIGTERM.
 */
const upstreamUrl = process.argv[2];
if (!upstreamUrl) {
  console.error('usage: node bench/bare-proxy.ts <upstream base URL>');
  process.exit(2);
}
const chatUrl = `${upstreamUrl.replace(/\/+$/, '')}/v1/chat/completions`;

const server = createServer(async (req, res) => {
  // A client that goes away also ends the upstream call, as a gateway must not keep paying for it.
  const upstreamCall = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) upstreamCall.abort();
  });
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk);
    const headers: Record<string, string> = { 'content-type': req.headers['content-type'] ?? 'application/json' };
    if (req.headers.authorization) headers.authorization = req.headers.authorization;
    const upstream = await request(chatUrl, {
      method: 'POST',
      headers,
      body: Buffer.concat(chunks),
      signal: upstreamCall.signal,
    });
    // Only the headers that describe the body: hop-by-hop headers (connection, transfer-encoding) are this
    // hop's own. A stream has no length and goes out chunked as it comes in.
    const answerHeaders: Record<string, string> = {
      'content-type': String(upstream.headers['content-type'] ?? 'application/octet-stream'),
    };
    const length = upstream.headers['content-length'];
    if (typeof length === 'string') answerHeaders['content-length'] = length;
    if (typeof upstream.headers['content-encoding'] === 'string')
      answerHeaders['content-encoding'] = upstream.headers['content-encoding'];
    res.writeHead(upstream.statusCode, answerHeaders);
    await pipeline(upstream.body, res);
  } catch (error) {
    if (upstreamCall.signal.aborted) return;
    if (!res.headersSent) {
      res.writeHead(502, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: `The upstream is unreachable (${(error as Error).message}).` } }));
    } else {
      res.destroy();
    }
  }
});

// The backlog Tollgate listens with (src/service.ts), so that a burst of streams meets the same queue.
await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, resolve));
process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })}\n`);
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
