import { createHash } from 'node:crypto';
import { countChatPromptTokens, countEmbeddingInputTokens, countTextTokens, truncateToTokens } from './tokens.ts';
import type { ChatBody, ChatChunk, ChatCompletion, ProviderAdapter } from './types.ts';

/** The public id of the built-in test model. */
export const ECHO_MODEL_ID = 'tollgate/echo';

/** The last user message's text: what the echo model answers. */
function lastUserText(messages: unknown[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as any;
    if (message?.role !== 'user') continue;
    if (typeof message.content === 'string') return message.content;
    if (Array.isArray(message.content)) return message.content.filter((p: any) => p?.type === 'text').map((p: any) => p.text).join(' ');
  }
  return '';
}

/** The reply, cut to the request's output cap so a hold bounds the echo model's cost like a real model's. */
function reply(body: ChatBody): { text: string; finish: 'stop' | 'length' } {
  const cap = (body.max_completion_tokens ?? body.max_tokens) as number | undefined;
  const text = lastUserText(body.messages);
  if (cap === undefined) return { text, finish: 'stop' };
  const cut = truncateToTokens(text, cap);
  return { text: cut.text, finish: cut.truncated ? 'length' : 'stop' };
}

/**
 * The built-in test provider behind `tollgate/echo`: it answers with the last user message, streams it word
 * by word and reports usage, with no network at all, so a fresh install can be tried (and billed) offline.
 */
export function echoAdapter(): ProviderAdapter {
  const usage = (body: ChatBody, text: string) => {
    const prompt = countChatPromptTokens(body as any);
    const completion = countTextTokens(text);
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  };
  return {
    name: 'echo',

    async chat(body): Promise<ChatCompletion> {
      const { text, finish } = reply(body);
      return {
        id: `chatcmpl-echo-${Date.now().toString(36)}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: finish }],
        usage: usage(body, text),
      };
    },

    async streamChat(body, call): Promise<AsyncIterable<ChatChunk>> {
      const { text, finish } = reply(body);
      const base = { id: `chatcmpl-echo-${Date.now().toString(36)}`, object: 'chat.completion.chunk' as const, created: Math.floor(Date.now() / 1000), model: body.model };
      return (async function* () {
        yield { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }] };
        for (const word of text.match(/\S+\s*|\s+/g) ?? []) {
          call.signal.throwIfAborted();
          yield { ...base, choices: [{ index: 0, delta: { content: word }, finish_reason: null }] };
        }
        yield { ...base, choices: [{ index: 0, delta: {}, finish_reason: finish }] };
        yield { ...base, choices: [], usage: usage(body, text) };
      })();
    },

    async embeddings(body) {
      const inputs = Array.isArray(body.input) && !body.input.every((x) => typeof x === 'number') ? (body.input as unknown[]) : [body.input];
      const dimensions = typeof body.dimensions === 'number' && body.dimensions > 0 && body.dimensions <= 3072 ? body.dimensions : 8;
      const tokens = countEmbeddingInputTokens(body.input);
      return {
        object: 'list',
        model: body.model,
        // A deterministic vector from the input's hash: equal inputs embed equally, which is all a test needs.
        data: inputs.map((input, index) => {
          const vector = pseudoVector(JSON.stringify(input), dimensions);
          // `encoding_format: base64` (the official SDK's default) is little-endian float32, as OpenAI sends it.
          const embedding = body.encoding_format === 'base64' ? Buffer.from(new Float32Array(vector).buffer).toString('base64') : vector;
          return { object: 'embedding', index, embedding };
        }),
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      };
    },
  };
}

function pseudoVector(text: string, dimensions: number): number[] {
  const vector: number[] = [];
  for (let block = 0; vector.length < dimensions; block++) {
    const digest = createHash('sha256').update(`${block}:${text}`).digest();
    for (let i = 0; i + 1 < digest.length && vector.length < dimensions; i += 2) vector.push(Math.round(((digest.readUInt16BE(i) / 65535) * 2 - 1) * 1e6) / 1e6);
  }
  return vector;
}
