import Fastify from 'fastify';
import { request } from 'undici';

/**
 * A reference for bench/http-layers.ts: the bare proxy's job (bench/bare-proxy.ts) done the way a gateway built
 * on Fastify does it, without any gateway logic. Fastify parses the JSON body, the handler serialises it again
 * and sends it upstream with undici's `request`, parses the answer and returns it for Fastify to serialise.
 * With `FASTIFY_PROXY_LOG=1` Fastify also writes its request log (pino, two lines a request) to standard error,
 * a pipe the benchmark reads, as Tollgate's log goes to a pipe in production.
 *
 * Usage: `node bench/fastify-proxy.ts <upstream base URL>`. Prints `{"url": …}` once it listens; stops on SIGTERM.
 */
const upstreamUrl = process.argv[2];
if (!upstreamUrl) {
  console.error('usage: node bench/fastify-proxy.ts <upstream base URL>');
  process.exit(2);
}
const chatUrl = `${upstreamUrl.replace(/\/+$/, '')}/v1/chat/completions`;

const app = Fastify({
  logger: process.env.FASTIFY_PROXY_LOG === '1' ? { level: 'info', stream: process.stderr } : false,
});
app.post('/v1/chat/completions', async (req) => {
  const upstream = await request(chatUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(req.body),
  });
  return upstream.body.json();
});
await app.listen({ host: '127.0.0.1', port: 0, backlog: 4096 });
const { port } = app.server.address() as { port: number };
console.log(JSON.stringify({ url: `http://127.0.0.1:${port}` }));
process.on('SIGTERM', () => void app.close().then(() => process.exit(0)));
