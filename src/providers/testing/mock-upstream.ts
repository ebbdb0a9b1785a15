import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real HTTP server that speaks the OpenAI API (`/v1/chat/completions`, legacy `/v1/completions`, embeddings, images, speech,
 * transcriptions, image edits, realtime sessions, `/v1/models` with OpenRouter-style prices) and Anthropic Messages
 * (`/v1/messages`), streams included. Tests and the benchmark point provider base URLs at it.
 *
 * The upstream model name picks a behaviour, so one server serves every scenario at once:
 * - anything else: answers `reply` (default "alpha beta gamma delta"), one word per stream chunk;
 * - `status-<code>`: answers that HTTP status with an error body, before any output;
 * - `echo-key-<code>`: the same, its message repeating the credential it was sent (as some providers do);
 * - `hang`: never answers (the gateway's deadline fires);
 * - `cut-<n>`: streams n words, then destroys the connection (non-streaming: destroys at once);
 * - `stall-<n>`: streams n words, then sends nothing more until the client goes away;
 * - `no-usage`: like the default, but reports no usage;
 * - `error-frame-<n>`: streams n words, then an error frame;
 * - `late-end`: like the default, but the stream's last bytes come 30 ms after its `[DONE]`;
 * - `reasoner`: like the default, but a request that asks for reasoning (see {@link asksReasoning}) also thinks:
 *   {@link MOCK_REASONING_TOKENS} more output tokens, reported as OpenAI's `completion_tokens_details.reasoning_tokens`
 *   inside `completion_tokens` (Anthropic counts thinking in `output_tokens`);
 * - `no-reasoning`: like the default, but a chat request with `reasoning_effort` or `reasoning` is a 400, as OpenAI
 *   answers it for gpt-4o and gpt-4.1 (and many OpenAI-compatible servers for any model that cannot think).
 *
 * A request may dictate the usage reported, verbatim (garbage included), to test how the gateway reads
 * it: the OpenAI chat route reports the body's `metadata.mock_usage` (the embeddings route its `mock_usage`), the
 * Anthropic route its `metadata.mock_usage` (Anthropic usage fields; a stream reports `output_tokens` in
 * its `message_delta` and the rest in its `message_start`; `metadata.mock_delta_usage` adds fields to the
 * `message_delta`'s usage, as newer API versions restate the input counts there).
 */
export interface MockUpstreamOptions {
  /** Required bearer token (OpenAI) / `x-api-key` (Anthropic); unset: anything goes. */
  apiKey?: string;
  /** Delay before each answer begins, in ms (default 0). */
  latencyMs?: number;
  /** Delay between stream chunks, in ms (default 0). */
  chunkDelayMs?: number;
  /** The reply text (default "alpha beta gamma delta"). */
  reply?: string;
  /** Usage every answer reports (default: prompt 11, completion = words of the reply). */
  promptTokens?: number;
  /** The `/v1/models` list (default: two models with OpenRouter-style USD prices). */
  models?: unknown[];
  /** Keep a log of request bodies (default true; the benchmark turns it off). */
  log?: boolean;
}

/** One request the mock received. */
export interface MockRequest {
  method: string;
  path: string;
  headers: IncomingMessage['headers'];
  body: any;
  /** True when the client closed the connection before the answer was complete. */
  aborted: boolean;
  /** An image edit's multipart form as received (`/v1/images/edits` only). */
  edit?: { fields: Record<string, string>; files: MockEditFile[] };
}

/** One file of an image edit's form, as the mock received it. */
export interface MockEditFile {
  field: string;
  filename: string;
  type: string;
  bytes: Buffer;
}

/** A running mock upstream. */
export interface MockUpstream {
  /** `http://127.0.0.1:<port>`; the OpenAI base URL is `${url}/v1`, the Anthropic base URL is `url`. */
  url: string;
  requests: MockRequest[];
  /** Resolves when `count` requests ended (answered or aborted); lets tests wait for an abort to land. */
  settled(count: number): Promise<void>;
  /** TCP connections accepted so far: a client that keeps its connections alive opens few. */
  connections(): number;
  close(): Promise<void>;
}

const DEFAULT_MODELS = [
  {
    id: 'acme/small',
    name: 'Acme: Small',
    context_length: 32768,
    top_provider: { max_completion_tokens: 4096 },
    architecture: { input_modalities: ['text'], output_modalities: ['text'] },
    pricing: { prompt: '0.0000003', completion: '0.0000012', request: '0', image: '0' },
  },
  {
    id: 'acme/vision',
    name: 'Acme: Vision',
    context_length: 128000,
    architecture: { input_modalities: ['text', 'image'], output_modalities: ['text'] },
    pricing: { prompt: '0.000003', completion: '0.000015', request: '0.001', image: '0.0048' },
  },
];

/** The output tokens the `reasoner` model spends thinking when a request asks it to. */
export const MOCK_REASONING_TOKENS = 20;

/**
 * Whether a request body asks for reasoning in either wire's terms: an effort other than `none` (`reasoning_effort`,
 * OpenRouter's `reasoning.effort`, Anthropic's `output_config.effort`), OpenRouter's `reasoning.max_tokens`, or
 * Anthropic's `thinking` enabled or adaptive.
 */
function asksReasoning(body: any): boolean {
  const effort = body?.reasoning_effort ?? body?.reasoning?.effort ?? body?.output_config?.effort;
  if (typeof effort === 'string' && effort !== 'none') return true;
  if (typeof body?.reasoning?.max_tokens === 'number') return true;
  return body?.thinking?.type === 'enabled' || body?.thinking?.type === 'adaptive';
}

/** Starts a mock upstream on a random loopback port. */
export async function startMockUpstream(options: MockUpstreamOptions = {}): Promise<MockUpstream> {
  const requests: MockRequest[] = [];
  let ended = 0;
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  const sockets = new Set<import('node:net').Socket>();
  let connections = 0;
  const markEnded = () => {
    ended++;
    for (const waiter of waiters.splice(0))
      if (ended >= waiter.count) waiter.resolve();
      else waiters.push(waiter);
  };

  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk);
    const raw = Buffer.concat(chunks);
    const contentType = req.headers['content-type'] ?? '';
    let body: any =
      contentType.includes('json') && raw.length
        ? JSON.parse(raw.toString())
        : contentType.includes('multipart')
          ? { multipart: raw.toString('latin1') }
          : undefined;
    const entry: MockRequest = {
      method: req.method ?? 'GET',
      path: req.url ?? '/',
      headers: req.headers,
      body,
      aborted: false,
    };
    if (options.log !== false) requests.push(entry);
    let done = false;
    res.on('close', () => {
      if (!res.writableFinished) entry.aborted = true;
      if (!done) {
        done = true;
        markEnded();
      }
    });
    try {
      await route(req, res, entry, options);
    } catch (error) {
      if (!res.headersSent) json(res, 500, { error: { message: String(error) } });
      else res.destroy();
    }
  });
  server.on('connection', (socket) => {
    connections++;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  // Tollgate's own backlog (src/service.ts): a burst of thousands of streams waits in the kernel's queue
  // instead of being reset at the mock, which would count against the gateway.
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    settled: (count) => new Promise((resolve) => (ended >= count ? resolve() : waiters.push({ count, resolve }))),
    connections: () => connections,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

function json(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Breaks the connection after what was written has had time to reach the client: a cut that raced its own
 * data would look to the client like a failure before output.
 */
async function cutAfterFlush(res: ServerResponse): Promise<void> {
  await new Promise<void>((resolve) => res.write('', () => resolve()));
  await sleep(25);
  res.destroy();
}

const sleep = (ms: number) => (ms > 0 ? new Promise((r) => setTimeout(r, ms)) : Promise.resolve());

/** The usage a speech event stream reports unless the request's `mock_usage` dictates it (verbatim). */
export const MOCK_SPEECH_USAGE = { input_tokens: 11, output_tokens: 420, total_tokens: 431 };

/**
 * Speech as OpenAI streams it for `stream_format: "sse"`: one `speech.audio.delta` of base64 audio per chunk
 * (`ID3-mock-audio-`, then each word of the input), then `speech.audio.done` with the usage. `cut-<n>`: n
 * deltas, then the connection breaks; `stall-<n>`: n deltas, then nothing until the client leaves;
 * `error-frame-<n>`: n deltas, then an error event; `no-usage`: the done event carries no usage.
 */
async function speechEvents(res: ServerResponse, body: any, cut: RegExpExecArray | null): Promise<void> {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const input = String(body.input ?? '');
  const chunks = ['ID3-mock-audio-', ...input.split(' ').map((w, i) => (i === 0 ? w : ` ${w}`))];
  const limit = cut ? Number(cut[2]) : chunks.length;
  for (const chunk of chunks.slice(0, limit))
    await write(
      res,
      `data: ${JSON.stringify({ type: 'speech.audio.delta', audio: Buffer.from(chunk).toString('base64') })}\n\n`,
    );
  if (cut?.[1] === 'cut') return cutAfterFlush(res);
  if (cut?.[1] === 'stall') return;
  if (cut?.[1] === 'error-frame') {
    res.end(`data: ${JSON.stringify({ type: 'error', error: { message: 'mock failure' } })}\n\n`);
    return;
  }
  const usage = body.model === 'no-usage' ? undefined : (body.mock_usage ?? MOCK_SPEECH_USAGE);
  res.end(`data: ${JSON.stringify({ type: 'speech.audio.done', usage })}\n\n`);
}

/** Writes an SSE frame, waiting for the socket to drain when it is full. */
async function write(res: ServerResponse, frame: string): Promise<void> {
  if (!res.write(frame)) await new Promise((r) => res.once('drain', r));
}

async function route(
  req: IncomingMessage,
  res: ServerResponse,
  entry: MockRequest,
  options: MockUpstreamOptions,
): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  const anthropic = path === '/v1/messages';
  const authorized =
    !options.apiKey ||
    (anthropic
      ? req.headers['x-api-key'] === options.apiKey
      : req.headers.authorization === `Bearer ${options.apiKey}`);
  if (!authorized)
    return json(
      res,
      401,
      anthropic
        ? { type: 'error', error: { type: 'authentication_error', message: 'invalid x-api-key' } }
        : { error: { message: 'Incorrect API key provided', type: 'invalid_request_error' } },
    );
  const model: string = entry.body?.model ?? '';
  const status = /^status-(\d{3})$/.exec(model);
  if (model === 'hang') return; // never answers; the caller's deadline or abort ends it
  await sleep(options.latencyMs ?? 0);
  const echoKey = /^echo-key-(\d{3})$/.exec(model);
  if (echoKey) {
    const sent = anthropic ? req.headers['x-api-key'] : req.headers.authorization;
    const message = `Incorrect API key provided: ${sent}.`;
    return json(
      res,
      Number(echoKey[1]),
      anthropic
        ? { type: 'error', error: { type: 'authentication_error', message } }
        : { error: { message, type: 'invalid_request_error' } },
    );
  }
  if (status) {
    const code = Number(status[1]);
    return json(
      res,
      code,
      anthropic
        ? { type: 'error', error: { type: 'api_error', message: `mock status ${code}` } }
        : { error: { message: `mock status ${code}`, type: 'server_error' } },
    );
  }
  if (model === 'no-reasoning' && !anthropic) {
    const param = ['reasoning_effort', 'reasoning'].find((field) => entry.body?.[field] !== undefined);
    if (param)
      return json(res, 400, {
        error: {
          message: `Unsupported parameter: '${param}' is not supported with this model.`,
          type: 'invalid_request_error',
          param,
          code: 'unsupported_parameter',
        },
      });
  }
  const reply = options.reply ?? 'alpha beta gamma delta';
  const words = reply.split(' ').map((w, i) => (i === 0 ? w : ` ${w}`));
  const promptTokens = options.promptTokens ?? 11;
  const thought = model === 'reasoner' && asksReasoning(entry.body) ? MOCK_REASONING_TOKENS : 0;
  const output = words.length + thought;
  const usage =
    entry.body?.metadata?.mock_usage ??
    (model === 'no-usage'
      ? undefined
      : {
          prompt_tokens: promptTokens,
          completion_tokens: output,
          total_tokens: promptTokens + output,
          ...(thought ? { completion_tokens_details: { reasoning_tokens: thought } } : {}),
        });
  const cut = /^(cut|stall|error-frame)-(\d+)$/.exec(model);

  if (req.method === 'GET' && path === '/v1/models')
    return json(res, 200, { object: 'list', data: options.models ?? DEFAULT_MODELS });
  if (path === '/v1/embeddings') {
    const inputs = Array.isArray(entry.body.input) ? entry.body.input : [entry.body.input];
    // The official SDK asks for base64 (little-endian float32), as OpenAI answers it.
    const vector = [0.1, 0.2, 0.3];
    // `mock_ignore_encoding_format`: an OpenAI-compatible upstream that sends numbers whatever was asked.
    const embedding =
      entry.body.encoding_format === 'base64' && !entry.body.mock_ignore_encoding_format
        ? Buffer.from(new Float32Array(vector).buffer).toString('base64')
        : vector;
    return json(res, 200, {
      object: 'list',
      model,
      data: inputs.map((_: unknown, index: number) => ({ object: 'embedding', index, embedding })),
      usage: entry.body.mock_usage ?? { prompt_tokens: promptTokens, total_tokens: promptTokens },
    });
  }
  if (path === '/v1/images/generations') {
    const n = entry.body.n ?? 1;
    return json(res, 200, {
      created: 1,
      data: Array.from({ length: n }, () => ({ url: 'https://images.example/x.png' })),
      ...gptImageUsage(model, entry.body.prompt, entry.body.quality, n, 0),
    });
  }
  if (path === '/v1/images/edits') {
    // The form as OpenAI reads it; `entry.edit` keeps its fields and files for the test to check what was forwarded.
    const form = await new Response(Buffer.from(entry.body.multipart, 'latin1'), {
      headers: { 'content-type': String(req.headers['content-type']) },
    }).formData();
    const fields: Record<string, string> = {};
    const files: MockEditFile[] = [];
    for (const [name, value] of form)
      if (typeof value === 'string') fields[name] = value;
      else
        files.push({
          field: name,
          filename: value.name,
          type: value.type,
          bytes: Buffer.from(await value.arrayBuffer()),
        });
    entry.edit = { fields, files };
    // A prompt with `mock-returns-<k>` is answered k images, whatever `n` asked: an upstream that returns too many.
    const returns = /mock-returns-(\d+)/.exec(fields.prompt ?? '');
    const n = Number(returns?.[1] ?? fields.n ?? 1);
    return json(res, 200, {
      created: 1,
      data: Array.from({ length: n }, () => ({ b64_json: Buffer.from('mock-edited-png').toString('base64') })),
      ...gptImageUsage(fields.model ?? '', fields.prompt, fields.quality, n, files.length),
    });
  }
  if (path === '/v1/audio/speech') {
    if (entry.body.stream_format === 'sse') return speechEvents(res, entry.body, cut);
    res.writeHead(200, { 'content-type': 'audio/mpeg' });
    await write(res, 'ID3-mock-audio-');
    res.end(String(entry.body.input ?? ''));
    return;
  }
  if (path === '/v1/audio/transcriptions') {
    // `garbage-usage`: a provider reporting a negative duration and unusable token counts.
    if (String(entry.body?.multipart ?? '').includes('garbage-usage'))
      return json(res, 200, {
        text: reply,
        duration: -3,
        usage: { type: 'tokens', input_tokens: -5, output_tokens: 'many' },
      });
    return json(res, 200, { text: reply, usage: { type: 'duration', seconds: 7 } });
  }
  // As OpenAI's whisper-1 answers a translation in JSON: the English text, no usage, no duration.
  if (path === '/v1/audio/translations') return json(res, 200, { text: 'good morning' });
  if (path === '/v1/realtime/client_secrets')
    return json(res, 200, {
      // A session model named `no-value`: a provider answering 200 without the key.
      ...(entry.body.session?.model === 'no-value' ? {} : { value: 'ek_mock_secret' }),
      expires_at: 1,
      session: { ...entry.body.session, object: 'realtime.session', id: 'sess_mock', upstream_extra: 'kept' },
    });

  if (path === '/v1/realtime/sessions')
    return json(res, 200, {
      id: 'sess_mock',
      object: 'realtime.session',
      model,
      client_secret: { value: 'ek_mock_secret', expires_at: 1 },
    });

  if (path === '/v1/completions')
    return legacyCompletion(res, entry.body, { model, words, promptTokens, cut, options });

  if (path === '/v1/chat/completions' && !anthropic) {
    if (!entry.body.stream) {
      if (cut) return void res.destroy();
      return json(res, 200, {
        id: 'chatcmpl-mock',
        object: 'chat.completion',
        created: 1,
        model,
        choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
        ...(usage ? { usage } : {}),
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const base = { id: 'chatcmpl-mock', object: 'chat.completion.chunk', created: 1, model };
    const frame = (data: unknown) => write(res, `data: ${JSON.stringify(data)}\n\n`);
    await frame({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
    const count = cut ? Number(cut[2]) : words.length;
    for (let i = 0; i < count; i++) {
      await sleep(options.chunkDelayMs ?? 0);
      await frame({
        ...base,
        choices: [{ index: 0, delta: { content: words[i % words.length] }, finish_reason: null }],
      });
    }
    if (cut?.[1] === 'cut') return cutAfterFlush(res);
    if (cut?.[1] === 'stall') return; // the connection stays open until the client leaves
    if (cut?.[1] === 'error-frame') {
      await write(res, `data: ${JSON.stringify({ error: { message: 'mock failure mid-stream' } })}\n\n`);
      return void res.end();
    }
    await frame({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
    if (usage && entry.body.stream_options?.include_usage) await frame({ ...base, choices: [], usage });
    await write(res, 'data: [DONE]\n\n');
    if (model === 'late-end') await sleep(30);
    return void res.end();
  }

  if (anthropic) {
    const anthropicUsage = entry.body?.metadata?.mock_usage ?? {
      input_tokens: promptTokens,
      output_tokens: output,
    };
    const { output_tokens: outputTokens, ...inputUsage } = anthropicUsage;
    if (!entry.body.stream) {
      if (cut) return void res.destroy();
      return json(res, 200, {
        id: 'msg_mock',
        type: 'message',
        role: 'assistant',
        model,
        content: [{ type: 'text', text: reply }],
        stop_reason: 'end_turn',
        usage: anthropicUsage,
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    const event = (type: string, data: object) =>
      write(res, `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    await event('message_start', {
      message: {
        id: 'msg_mock',
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        usage: { ...inputUsage, output_tokens: 1 },
      },
    });
    await event('content_block_start', { index: 0, content_block: { type: 'text', text: '' } });
    const count = cut ? Number(cut[2]) : words.length;
    for (let i = 0; i < count; i++) {
      await sleep(options.chunkDelayMs ?? 0);
      await event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: words[i % words.length] } });
    }
    if (cut?.[1] === 'cut') return cutAfterFlush(res);
    if (cut?.[1] === 'stall') return;
    if (cut?.[1] === 'error-frame') {
      await event('error', { error: { type: 'overloaded_error', message: 'mock failure mid-stream' } });
      return void res.end();
    }
    await event('content_block_stop', { index: 0 });
    await event('message_delta', {
      delta: { stop_reason: 'end_turn', stop_sequence: null },
      usage: { output_tokens: outputTokens, ...entry.body?.metadata?.mock_delta_usage },
    });
    await event('message_stop', {});
    return void res.end();
  }
  json(res, 404, { error: { message: `mock has no route ${req.method} ${path}` } });
}

/**
 * `/v1/completions` (OpenAI's legacy text completions): the reply (after the prompt with `echo`) for each of `n`
 * per prompt, usage 11 prompt tokens per prompt and a token per word of each choice; streamed, one word per chunk
 * (every choice's word in turn), with `cut-<n>`/`stall-<n>` as for chat.
 */
async function legacyCompletion(
  res: ServerResponse,
  body: any,
  scene: {
    model: string;
    words: string[];
    promptTokens: number;
    cut: RegExpExecArray | null;
    options: MockUpstreamOptions;
  },
): Promise<void> {
  const { model, words, cut } = scene;
  const prompts: string[] = Array.isArray(body.prompt) ? body.prompt.map(String) : [String(body.prompt ?? '')];
  const n = typeof body.n === 'number' ? body.n : 1;
  const choices = prompts.flatMap((prompt, p) =>
    Array.from({ length: n }, (_, j) => ({ index: p * n + j, echo: body.echo === true ? prompt : '' })),
  );
  const usage =
    model === 'no-usage'
      ? undefined
      : {
          prompt_tokens: scene.promptTokens * prompts.length,
          completion_tokens: words.length * choices.length,
          total_tokens: scene.promptTokens * prompts.length + words.length * choices.length,
        };
  const base = { id: 'cmpl-mock', object: 'text_completion', created: 1, model };
  if (!body.stream) {
    if (cut) return void res.destroy();
    return json(res, 200, {
      ...base,
      system_fingerprint: 'fp_mock',
      choices: choices.map(({ index, echo }) => ({
        index,
        text: echo + words.join(''),
        logprobs: null,
        finish_reason: 'stop',
      })),
      ...(usage ? { usage } : {}),
    });
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const frame = (data: unknown) => write(res, `data: ${JSON.stringify(data)}\n\n`);
  const count = cut ? Number(cut[2]) : words.length;
  for (let i = 0; i < count; i++) {
    await sleep(scene.options.chunkDelayMs ?? 0);
    for (const { index } of choices)
      await frame({
        ...base,
        choices: [{ index, text: words[i % words.length], logprobs: null, finish_reason: null }],
      });
  }
  if (cut?.[1] === 'cut') return cutAfterFlush(res);
  if (cut?.[1] === 'stall') return;
  for (const { index } of choices)
    await frame({ ...base, choices: [{ index, text: '', logprobs: null, finish_reason: 'stop' }] });
  if (usage && body.stream_options?.include_usage) await frame({ ...base, choices: [], usage });
  await write(res, 'data: [DONE]\n\n');
  res.end();
}

/**
 * The `usage` OpenAI reports for a GPT image model (upstream model `gpt-image…`; others report none): the
 * prompt's words as text tokens, 323 tokens per input image, and each output image's tokens at a 1024×1024
 * size of the asked quality (low 272, medium 1056, high or auto 4160), as OpenAI documents them.
 */
export function gptImageUsage(model: string, prompt: unknown, quality: unknown, images: number, inputImages: number) {
  if (!model.startsWith('gpt-image')) return {};
  const text = String(prompt ?? '')
    .split(/\s+/)
    .filter(Boolean).length;
  const perImage = quality === 'low' ? 272 : quality === 'medium' ? 1056 : 4160;
  const input = text + 323 * inputImages;
  return {
    usage: {
      input_tokens: input,
      input_tokens_details: { text_tokens: text, image_tokens: 323 * inputImages },
      output_tokens: perImage * images,
      total_tokens: input + perImage * images,
    },
  };
}
