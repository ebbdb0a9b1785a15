import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * An OpenAI-compatible upstream (`POST /v1/chat/completions`, streamed or not) that misbehaves on demand:
 * a real node:http server, so the gateway meets the faults through its real HTTP client.
 *
 * The upstream model name picks the behaviour, so one server serves every scenario at once. `n` is a number
 * of words; each word is one token (colour words, so the gateway's own count of a cut stream is exact):
 * - `ok-<n>`: answers n words (streams one word per chunk) and reports usage (prompt 0, completion n);
 * - `drip-<n>-<ms>`: like `ok-<n>`, with `ms` between chunks (a slow drip; the whole answer is late);
 * - `status-<code>`: that status with an OpenAI error body, before any output;
 * - `html-<code>`: that status with an HTML body (a proxy's error page);
 * - `hang`: never answers (the gateway's deadline fires);
 * - `reset`: destroys the connection before answering;
 * - `empty`: 200 with an empty body (a stream that ends before its first frame);
 * - `malformed`: 200 with a body that is not JSON (a stream whose first frame is not JSON);
 * - `no-choices`: 200 JSON without `choices` (non-streamed only);
 * - `cut-<n>`: streams n words, then destroys the connection (non-streamed: destroys at once);
 * - `end-<n>`: streams n words, then ends cleanly without a finish reason or `[DONE]`;
 * - `error-frame-<n>`: streams n words, then an error data frame;
 * - `malformed-after-<n>`: streams n words, then a frame that is not JSON.
 */
export interface FaultUpstream {
  /** The OpenAI base URL: `http://127.0.0.1:<port>/v1`. */
  baseUrl: string;
  /** Chat requests received. */
  received: number;
  /** Per chat request, in arrival order: its upstream model and the words written so far. */
  calls: Array<{ model: string; wordsSent: number }>;
  close(): Promise<void>;
}

/** Options of {@link startFaultUpstream}. */
export interface FaultUpstreamOptions {
  /** Delay before every answer begins, in ms (default 0): keeps calls in flight under load. */
  latencyMs?: number;
  /** Delay between the chunks of an `ok-<n>` stream, in ms (default 0). */
  chunkDelayMs?: number;
}

const WORDS = ['red', 'green', 'blue', 'black', 'white', 'brown', 'pink', 'gray'];

/** The text of the first `n` words, as the upstream produces it (one token per word). */
export function wordsOf(n: number): string[] {
  return Array.from({ length: n }, (_, i) => (i === 0 ? WORDS[0] : ` ${WORDS[i % WORDS.length]}`));
}

const sleep = (ms: number) => (ms > 0 ? new Promise((resolve) => setTimeout(resolve, ms)) : Promise.resolve());

/** Starts the fault upstream on a random loopback port. */
export async function startFaultUpstream(options: FaultUpstreamOptions = {}): Promise<FaultUpstream> {
  const sockets = new Set<Socket>();
  const upstream: FaultUpstream = { baseUrl: '', received: 0, calls: [], close: async () => {} };
  const server = createServer((req, res) => {
    void answer(req, res, options, upstream).catch(() => res.destroy());
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  upstream.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  upstream.close = () =>
    new Promise((resolve) => {
      for (const socket of sockets) socket.destroy();
      server.close(() => resolve());
    });
  return upstream;
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Writes and waits until the bytes left for the socket, so a cut that follows cannot overtake them. */
function flushed(res: ServerResponse, text: string): Promise<void> {
  return new Promise((resolve) => res.write(text, () => resolve()));
}

async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  options: FaultUpstreamOptions,
  upstream: FaultUpstream,
): Promise<void> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  if (req.method !== 'POST' || req.url !== '/v1/chat/completions')
    return sendJson(res, 404, { error: { message: 'no such route' } });
  upstream.received++;
  const body = JSON.parse(Buffer.concat(chunks).toString() || '{}');
  const model = String(body.model ?? '');
  const call = { model, wordsSent: 0 };
  upstream.calls.push(call);
  const stream = body.stream === true;
  if (model === 'hang') return;
  await sleep(options.latencyMs ?? 0);
  if (model === 'reset') return void res.destroy();

  const status = /^(status|html)-(\d{3})$/.exec(model);
  if (status) {
    const code = Number(status[2]);
    if (status[1] === 'html') {
      res.writeHead(code, { 'content-type': 'text/html' });
      return void res.end(`<html><body><h1>${code} Bad Gateway</h1></body></html>`);
    }
    return sendJson(res, code, { error: { message: `fault upstream answered ${code}`, type: 'server_error' } });
  }
  if (model === 'empty') {
    res.writeHead(200, { 'content-type': stream ? 'text/event-stream' : 'application/json' });
    return void res.end();
  }
  if (model === 'no-choices' && !stream) return sendJson(res, 200, { id: 'chatcmpl-fault', object: 'chat.completion' });

  const shape = /^(ok|cut|end|error-frame|malformed-after)-(\d+)$|^drip-(\d+)-(\d+)$|^(malformed)$/.exec(model);
  if (!shape)
    return sendJson(res, 400, { error: { message: `unknown fault model ${model}`, type: 'invalid_request_error' } });
  const kind = shape[1] ?? (shape[3] ? 'drip' : 'malformed');
  const n = Number(shape[2] ?? shape[3] ?? 0);
  const delay = shape[4] ? Number(shape[4]) : (options.chunkDelayMs ?? 0);
  const words = wordsOf(n);
  const usage = { prompt_tokens: 0, completion_tokens: n, total_tokens: n };

  if (!stream) {
    if (kind === 'malformed' || kind === 'malformed-after') {
      res.writeHead(200, { 'content-type': 'application/json' });
      return void res.end('{"id":"chatcmpl-fault","choices":[{"index":0,"message":');
    }
    if (kind !== 'ok' && kind !== 'drip') return void res.destroy();
    await sleep(delay * n);
    return sendJson(res, 200, {
      id: 'chatcmpl-fault',
      object: 'chat.completion',
      created: 1,
      model,
      choices: [{ index: 0, message: { role: 'assistant', content: words.join('') }, finish_reason: 'stop' }],
      usage,
    });
  }

  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const base = { id: 'chatcmpl-fault', object: 'chat.completion.chunk', created: 1, model };
  const frame = (data: unknown) => flushed(res, `data: ${JSON.stringify(data)}\n\n`);
  if (kind === 'malformed') {
    await flushed(res, 'data: {"id":"chatcmpl-fault","choices":[{\n\n');
    return void res.end();
  }
  await frame({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
  for (const word of words) {
    await sleep(delay);
    if (res.destroyed) return;
    await frame({ ...base, choices: [{ index: 0, delta: { content: word }, finish_reason: null }] });
    call.wordsSent++;
  }
  if (kind === 'cut') return void setTimeout(() => res.destroy(), 20);
  if (kind === 'end') return void res.end();
  if (kind === 'error-frame') {
    await frame({ error: { message: 'fault upstream failed mid-stream' } });
    return void res.end();
  }
  if (kind === 'malformed-after') {
    await flushed(res, 'data: {"choices":[{"delta":{"content":\n\n');
    return void res.end();
  }
  await frame({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
  await frame({ ...base, choices: [], usage });
  await flushed(res, 'data: [DONE]\n\n');
  res.end();
}
