import { createHash } from 'node:crypto';
import { countChatPromptTokens, countEmbeddingInputTokens, countTextTokens, truncateToTokens } from '../tokens.ts';
import type { ChatBody, ChatChunk, ChatCompletion, ProviderAdapter, ProviderCall } from '../types.ts';
import type {
  CanonicalEvent,
  CanonicalPart,
  CanonicalResult,
  CanonicalUsage,
  FinishReason,
} from '../../gateway/canonical.ts';
import {
  canonicalUsageOfOpenAi,
  fromOpenAiCompletion,
  OpenAiStreamReader,
  toOpenAiChatBody,
  toOpenAiPromptFields,
} from '../openai-compatible/wire.ts';

/** The public id of the built-in test model. */
export const ECHO_MODEL_ID = 'tollgate/echo';

/** The last user message's text: what the echo model answers. */
function lastUserText(messages: unknown[]): string {
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i] as any;
    if (message?.role !== 'user') continue;
    if (typeof message.content === 'string') return message.content;
    if (Array.isArray(message.content))
      return message.content
        .filter((p: any) => p?.type === 'text')
        .map((p: any) => p.text)
        .join(' ');
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

/** A tool the call requires (`tool_choice` `required` or a name), which the echo calls, as OpenAI's models do. */
function requiresTool(call: ProviderCall): boolean {
  return call.tools.length > 0 && (call.toolChoice === 'required' || typeof call.toolChoice === 'object');
}

/**
 * A chat answered in OpenAI chat's own chunks (every choice of `n`); a chat that requires a tool is answered as
 * the other protocols are, with the call (LangChain's `withStructuredOutput` forces its tool and reads the call).
 */
function answersNatively(call: ProviderCall): boolean {
  return call.native?.protocol === 'openai-chat' && !requiresTool(call);
}

/** What the echo model answers a canonical call from another protocol: text, or a tool call when one is required. */
interface EchoAnswer {
  text: string;
  toolCall: { id: string; name: string; arguments: string } | null;
  finish: FinishReason;
}

/**
 * Deterministic: the text of the last message's tool results (a tool round trip shows its result), else of
 * the last user message, cut to the output cap; a call that requires a tool (`toolChoice` `required` or a
 * name) gets one call of it (the named one, or the first) with `{"text": <that text>}` as its arguments.
 */
function echoAnswer(call: ProviderCall): EchoAnswer {
  const last = call.messages.at(-1);
  const results = (last?.content ?? []).filter((part) => part.type === 'tool_result');
  let text = results.map((part) => part.content).join(' ');
  if (!results.length) {
    const user = [...call.messages].reverse().find((message) => message.role === 'user');
    text = (user?.content ?? []).flatMap((part) => (part.type === 'text' ? [part.text] : [])).join(' ');
  }
  const cut = truncateToTokens(text, call.maxOutputTokens);
  const choice = call.toolChoice;
  if (!results.length && requiresTool(call)) {
    const tool =
      typeof choice === 'object' ? (call.tools.find((t) => t.name === choice.name) ?? call.tools[0]) : call.tools[0];
    const id = `call_echo_${createHash('sha256').update(text).digest('hex').slice(0, 12)}`;
    return {
      text: '',
      toolCall: { id, name: tool.name, arguments: JSON.stringify({ text: cut.text }) },
      finish: 'tool_calls',
    };
  }
  return { text: cut.text, toolCall: null, finish: cut.truncated ? 'length' : 'stop' };
}

/**
 * The built-in test provider behind `tollgate/echo`: it answers with the last user message, streams it word
 * by word and reports usage, with no network at all, so a fresh install can be tried (and billed) offline.
 * It speaks OpenAI chat natively (its chunks are OpenAI's); any other protocol gets canonical events.
 */
export function echoAdapter(): ProviderAdapter {
  /** Usage of `choices` answers of `text` each (OpenAI counts every choice's output). */
  const usage = (body: ChatBody, text: string, choices = 1) => {
    const prompt = countChatPromptTokens(body as any);
    const completion = countTextTokens(text) * choices;
    return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
  };
  /** OpenAI chat's `n`: that many choices, each the same echo (the hold was sized for them all). */
  const choicesOf = (body: ChatBody) => (Number.isInteger(body.n) && (body.n as number) > 1 ? (body.n as number) : 1);
  /** The answer in OpenAI chat's shape, for a chat (native): the echo, once per choice asked for. */
  async function chat(body: ChatBody): Promise<ChatCompletion> {
    const { text, finish } = reply(body);
    const choices = choicesOf(body);
    return {
      id: `chatcmpl-echo-${Date.now().toString(36)}`,
      object: 'chat.completion',
      created: Math.floor(Date.now() / 1000),
      model: body.model,
      choices: Array.from({ length: choices }, (_, index) => ({
        index,
        message: { role: 'assistant', content: text },
        finish_reason: finish,
      })),
      usage: usage(body, text, choices),
    };
  }

  /** The chunks of a chat's answer, one word of each choice at a time, then the finishes and the usage chunk. */
  async function streamChat(body: ChatBody, call: { signal: AbortSignal }): Promise<AsyncIterable<ChatChunk>> {
    const { text, finish } = reply(body);
    const choices = choicesOf(body);
    const base = {
      id: `chatcmpl-echo-${Date.now().toString(36)}`,
      object: 'chat.completion.chunk' as const,
      created: Math.floor(Date.now() / 1000),
      model: body.model,
    };
    const each = (delta: (index: number) => ChatChunk['choices'][number]) =>
      Array.from({ length: choices }, (_, index) => ({ ...base, choices: [delta(index)] }));
    return (async function* () {
      for (const chunk of each((index) => ({ index, delta: { role: 'assistant', content: '' }, finish_reason: null })))
        yield chunk;
      for (const word of text.match(/\S+\s*|\s+/g) ?? []) {
        call.signal.throwIfAborted();
        for (const chunk of each((index) => ({ index, delta: { content: word }, finish_reason: null }))) yield chunk;
      }
      for (const chunk of each((index) => ({ index, delta: {}, finish_reason: finish }))) yield chunk;
      yield { ...base, choices: [], usage: usage(body, text, choices) };
    })();
  }

  const canonicalUsage = (call: ProviderCall, answer: EchoAnswer): CanonicalUsage =>
    canonicalUsageOfOpenAi(
      usage(
        toOpenAiPromptFields(call) as ChatBody,
        answer.toolCall ? answer.toolCall.name + answer.toolCall.arguments : answer.text,
      ),
    );
  const id = () => `msg_echo_${Date.now().toString(36)}`;
  const adapter: ProviderAdapter = {
    name: 'echo',
    speaks: ['openai-chat'],

    async complete(call, options): Promise<CanonicalResult> {
      if (answersNatively(call)) return fromOpenAiCompletion(await chat(toOpenAiChatBody(call, 'echo', false)), true);
      const answer = echoAnswer(call);
      const content: CanonicalPart[] = answer.toolCall
        ? [{ type: 'tool_call', ...answer.toolCall }]
        : [{ type: 'text', text: answer.text }];
      return {
        id: id(),
        model: call.model,
        created: Math.floor(Date.now() / 1000),
        content,
        finishReason: answer.finish,
        usage: canonicalUsage(call, answer),
      };
    },

    async stream(call, options): Promise<AsyncIterable<CanonicalEvent>> {
      if (answersNatively(call)) {
        const chunks = await streamChat(toOpenAiChatBody(call, 'echo', true), options);
        const reader = new OpenAiStreamReader(true);
        return (async function* () {
          for await (const chunk of chunks) for (const event of reader.events(chunk)) yield event;
          yield { type: 'end', finishReason: reader.finish ?? 'stop' } satisfies CanonicalEvent;
        })();
      }
      const answer = echoAnswer(call);
      return (async function* (): AsyncGenerator<CanonicalEvent> {
        yield { type: 'start', id: id(), model: call.model, created: Math.floor(Date.now() / 1000) };
        for (const word of answer.text.match(/\S+\s*|\s+/g) ?? []) {
          options.signal.throwIfAborted();
          yield { type: 'text', delta: word };
        }
        if (answer.toolCall) {
          const args = answer.toolCall.arguments;
          yield { type: 'tool_call_start', index: 0, id: answer.toolCall.id, name: answer.toolCall.name };
          // Two pieces, so a client's argument assembly is exercised.
          const half = Math.floor(args.length / 2);
          yield { type: 'tool_call_delta', index: 0, arguments: args.slice(0, half) };
          yield { type: 'tool_call_delta', index: 0, arguments: args.slice(half) };
        }
        yield { type: 'usage', usage: canonicalUsage(call, answer) };
        yield { type: 'end', finishReason: answer.finish };
      })();
    },

    async embeddings(body) {
      const inputs =
        Array.isArray(body.input) && !body.input.every((x) => typeof x === 'number')
          ? (body.input as unknown[])
          : [body.input];
      const dimensions =
        typeof body.dimensions === 'number' && body.dimensions > 0 && body.dimensions <= 3072 ? body.dimensions : 8;
      const tokens = countEmbeddingInputTokens(body.input);
      return {
        object: 'list',
        model: body.model,
        // A deterministic vector from the input's hash: equal inputs embed equally, which is all a test needs.
        data: inputs.map((input, index) => {
          const vector = pseudoVector(JSON.stringify(input), dimensions);
          // `encoding_format: base64` (the official SDK's default) is little-endian float32, as OpenAI sends it.
          const embedding =
            body.encoding_format === 'base64'
              ? Buffer.from(new Float32Array(vector).buffer).toString('base64')
              : vector;
          return { object: 'embedding', index, embedding };
        }),
        usage: { prompt_tokens: tokens, total_tokens: tokens },
      };
    },
  };
  return adapter;
}

function pseudoVector(text: string, dimensions: number): number[] {
  const vector: number[] = [];
  for (let block = 0; vector.length < dimensions; block++) {
    const digest = createHash('sha256').update(`${block}:${text}`).digest();
    for (let i = 0; i + 1 < digest.length && vector.length < dimensions; i += 2)
      vector.push(Math.round(((digest.readUInt16BE(i) / 65535) * 2 - 1) * 1e6) / 1e6);
  }
  return vector;
}
