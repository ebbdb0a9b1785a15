import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A real OpenAI-compatible upstream whose one streamed chat answer the test drives word by word: the first
 * word goes out at once (output has begun), then each `emit()` sends one more, and `finish()` ends the
 * stream with its usage (`promptTokens`, one completion token per word). Lets a test keep a stream open
 * for as long as its settable clock says, however short the real time.
 */
export interface GatedUpstream {
  /** The OpenAI base URL (`…/v1`). */
  baseUrl: string;
  /** Resolves once a stream is open upstream. */
  opened(): Promise<void>;
  /** Sends one more word of the open stream. */
  emit(): void;
  /** Ends the open stream with its usage; resolves with the words sent. */
  finish(): number;
  close(): Promise<void>;
}

/** Starts a gated upstream on a random loopback port; every answer reports `promptTokens` prompt tokens. */
export async function startGatedUpstream(promptTokens = 11): Promise<GatedUpstream> {
  let stream: ServerResponse | null = null;
  let words = 0;
  let opened = Promise.withResolvers<void>();
  const frame = (data: unknown) => stream!.write(`data: ${JSON.stringify(data)}\n\n`);
  const base = { id: 'chatcmpl-gated', object: 'chat.completion.chunk', created: 1, model: 'gated' };
  const word = () => {
    words++;
    frame({ ...base, choices: [{ index: 0, delta: { content: ` w${words}` }, finish_reason: null }] });
  };
  const server: Server = createServer(async (req, res) => {
    for await (const _ of req);
    if (req.url !== '/v1/chat/completions') {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    stream = res;
    words = 0;
    frame({ ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] });
    word();
    opened.resolve();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    opened: () => opened.promise,
    emit: word,
    finish() {
      frame({ ...base, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] });
      frame({
        ...base,
        choices: [],
        usage: { prompt_tokens: promptTokens, completion_tokens: words, total_tokens: promptTokens + words },
      });
      stream!.end('data: [DONE]\n\n');
      stream = null;
      opened = Promise.withResolvers<void>();
      return words;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
