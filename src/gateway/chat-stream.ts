import type { ServerResponse } from 'node:http';
import { countTextTokens } from '../providers/tokens.ts';
import type { ChatChunk, TokenUsage } from '../providers/types.ts';

/**
 * Follows a relayed stream: what it produced (for billing when the upstream reports no usage, or the stream
 * ends early) and which frames the client sees.
 */
export class StreamTally {
  #text: string[] = [];
  #reported: TokenUsage | null = null;
  readonly #publicModel: string;
  readonly #clientWantsUsage: boolean;

  constructor(publicModel: string, clientWantsUsage: boolean) {
    this.#publicModel = publicModel;
    this.#clientWantsUsage = clientWantsUsage;
  }

  /** Records the chunk; returns the frame to send, or null when the client did not ask for the usage frame. */
  frame(chunk: ChatChunk): string | null {
    if (chunk.usage) this.#reported = chunk.usage;
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
    }
    chunk.model = this.#publicModel;
    return `data: ${JSON.stringify(chunk)}\n\n`;
  }

  /** Tokens used: the upstream's report when it sent one, else the counted prompt and the counted output so far. */
  usage(countedPromptTokens: number): { promptTokens: number; completionTokens: number } {
    if (this.#reported) return { promptTokens: this.#reported.prompt_tokens ?? countedPromptTokens, completionTokens: this.#reported.completion_tokens ?? 0 };
    return { promptTokens: countedPromptTokens, completionTokens: countTextTokens(this.#text.join('')) };
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
