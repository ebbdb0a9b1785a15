import type { ServerResponse } from 'node:http';
import { countTextTokens } from '../providers/tokens.ts';
import type { ChatChunk, TokenUsage } from '../providers/types.ts';
import type { ChatAccount, OwnCount } from './chat-usage.ts';

/**
 * Follows a relayed stream: what it produced (for billing when the upstream reports no usage, or the stream
 * ends early) and which frames the client sees.
 */
export class StreamTally {
  #text: string[] = [];
  #reported: TokenUsage | null = null;
  readonly #publicModel: string;
  readonly #clientWantsUsage: boolean;
  readonly #account: (reported: TokenUsage | null, own: OwnCount) => ChatAccount;
  readonly #promptTokens: number;
  /** The id and creation time of the chunks relayed, for a usage frame the gateway writes itself. */
  #last: Pick<ChatChunk, 'id' | 'created'> = { id: 'chatcmpl', created: 0 };

  /** `account` prices a usage report (or our own counts when there is none): the usage frame shows what it says. */
  constructor(publicModel: string, clientWantsUsage: boolean, countedPromptTokens: number, account: (reported: TokenUsage | null, own: OwnCount) => ChatAccount) {
    this.#publicModel = publicModel;
    this.#clientWantsUsage = clientWantsUsage;
    this.#account = account;
    this.#promptTokens = countedPromptTokens;
  }

  /** Records the chunk; returns the frame to send, or null when the client did not ask for the usage frame. */
  frame(chunk: ChatChunk): string | null {
    if (chunk.usage) this.#reported = chunk.usage;
    this.#last = { id: chunk.id, created: chunk.created };
    for (const choice of chunk.choices ?? []) {
      const delta = choice.delta;
      if (!delta) continue;
      if (typeof delta.content === 'string' && delta.content) this.#text.push(delta.content);
      if (typeof delta.reasoning === 'string' && delta.reasoning) this.#text.push(delta.reasoning);
      for (const call of delta.tool_calls ?? []) {
        if (call.function?.name) this.#text.push(call.function.name);
        if (call.function?.arguments) this.#text.push(call.function.arguments);
      }
    }
    if (chunk.usage && !this.#clientWantsUsage) {
      if (!chunk.choices?.length) return null;
      delete chunk.usage;
    } else if (chunk.usage) {
      // The client sees the counts it is billed on and their cost (the output so far is all of it: usage comes last).
      chunk.usage = this.#account(chunk.usage, this.#own(this.#promptTokens)).usage;
    }
    chunk.model = this.#publicModel;
    return `data: ${JSON.stringify(chunk)}\n\n`;
  }

  /** The call priced: on the upstream's report when it sent one (sanitized), else on the counted prompt and the output counted so far. */
  account(): ChatAccount {
    return this.#account(this.#reported, this.#own(this.#promptTokens));
  }

  /**
   * The usage frame a finished stream still owes the client: when it asked for usage and the upstream sent
   * none, the gateway writes one on its own counts, so the client always learns what it was charged.
   */
  missingUsageFrame(): string | null {
    if (!this.#clientWantsUsage || this.#reported) return null;
    const chunk: ChatChunk = { ...this.#last, object: 'chat.completion.chunk', model: this.#publicModel, choices: [], usage: this.account().usage };
    return `data: ${JSON.stringify(chunk)}\n\n`;
  }

  #own(prompt: number): OwnCount {
    return { prompt, output: () => countTextTokens(this.#text.join('')) };
  }
}

/**
 * Writes one frame, waiting for the socket to drain when it is full; false when the client is gone.
 * Frames written in one turn of the event loop (an upstream read often carries several) leave in one
 * socket write: the response is corked until the turn's queued work is done. Each frame its own write was
 * a system call per token.
 */
export async function writeFrame(raw: ServerResponse, frame: string): Promise<boolean> {
  if (raw.destroyed || raw.writableEnded) return false;
  if (raw.writableCorked === 0) {
    raw.cork();
    process.nextTick(() => raw.uncork());
  }
  if (raw.write(frame)) return true;
  await new Promise<void>((resolve) => {
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.once('drain', done);
    raw.once('close', done);
  });
  return !raw.destroyed;
}
