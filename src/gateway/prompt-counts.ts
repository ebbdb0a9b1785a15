import { hash } from 'node:crypto';
import type { Counter } from 'prom-client';
import type { Principal } from '../platform/http/principal.ts';
import {
  countTextTokens,
  countTextTokensPaced,
  PACED_SLICE_CHARS,
  type TextTokenCounter,
} from '../providers/tokens.ts';

/**
 * Texts shorter than this are counted every time: counting 1 K characters takes ~0.2 ms, hashing them a few
 * µs, and most short texts are not resent.
 */
export const REMEMBERED_TEXT_MIN_CHARS = 1024;

/** Whose texts a count is remembered for: the caller's credential. */
export type PromptScope = Pick<Principal, 'userId' | 'appId' | 'keyId'>;

/**
 * The token counts of long prompt texts, remembered per credential, so that a conversation resent whole on
 * every turn (an agent loop: the same system prompt, tools and earlier messages, plus a few new ones) is
 * counted only for what is new.
 *
 * Why: the hold needs the prompt's tokens before the call goes upstream, and counting runs on the event loop
 * at ~0.1–0.2 µs a character (`node bench/agent-loop.ts`): 11–13 ms for 100 K characters, while every other
 * call and stream of the instance waits. SHA-256 of the same text takes ~0.1 ms.
 *
 * Security invariants:
 * - An entry is keyed by the SHA-256 of its text, and a count is a function of the text alone: no one can
 *   have a text counted as another (which would hold, and so capture, less than the call is billed) without
 *   a SHA-256 collision. The digest is of the text's UTF-8, which replaces a lone surrogate with U+FFFD;
 *   the tokenizer encodes its pieces the same way, so texts with one digest have one count (tested).
 * - Entries are scoped by credential (user, OAuth app and API key): how long a count takes shows whether the
 *   text was counted before, so a caller learns that only of texts sent with the same credential, never of
 *   another user's, nor of what another app sent for the same user.
 * - At most `maxEntries` entries (least recently used out first); 0 remembers nothing.
 */
export class PromptTokenCounts {
  readonly #entries = new Map<string, number>();
  readonly #maxEntries: number;
  readonly #texts: Counter<'source'>;

  /** `texts` counts each long text by where its count came from: `remembered` or `counted`. */
  constructor(maxEntries: number, texts: Counter<'source'>) {
    this.#maxEntries = maxEntries;
    this.#texts = texts;
  }

  /** The counter of one credential's texts: {@link countTextTokens}, remembered for long texts. */
  counterFor(scope: PromptScope): TextTokenCounter {
    if (this.#maxEntries === 0) return countTextTokens;
    return (text) => {
      const key = this.#keyOf(scope, text);
      if (key === null) return countTextTokens(text);
      const known = this.#recall(key);
      if (known !== undefined) return known;
      const tokens = countTextTokens(text);
      this.#store(key, tokens);
      return tokens;
    };
  }

  /**
   * A prompt's tokens: `count` counts it with the counter it is given (`(counter) => countChatPromptTokens(
   * body, counter)`), as {@link counterFor}'s would, the same total. `count` runs once, with a counter that
   * only collects the texts: its result then is what does not depend on them, to which each text's count is
   * added. So `count` must add up its counter's answers, as every prompt counter of `tokens.ts` does.
   *
   * Invariant: a long prompt holds the event loop for one slice of counting at a time (~8 K characters,
   * 1–2 ms), or the SHA-256 of one of its texts (~4 ms for 4 MB), or a piece of text with no safe cut in it
   * (see `countTextTokensPaced`), which is counted whole. A prompt of up to one slice is counted at once; in
   * a longer one, each text that is not remembered is counted in slices with the event loop served between
   * them (a 4 MB body took ~0.5 s in one go, while every other call and stream of the instance waited).
   * `remember: false` counts in slices all the same but neither reads nor fills the memory: for texts seldom
   * sent twice (embeddings' inputs), which would only push out a conversation's.
   */
  async countPrompt(
    scope: PromptScope,
    count: (counter: TextTokenCounter) => number,
    options: { remember: boolean } = { remember: true },
  ): Promise<number> {
    const texts: string[] = [];
    let characters = 0;
    let total = count((text) => {
      texts.push(text);
      characters += text.length;
      return 0;
    });
    if (characters <= PACED_SLICE_CHARS) {
      const counter = options.remember ? this.counterFor(scope) : countTextTokens;
      for (const text of texts) total += counter(text);
      return total;
    }
    /** This prompt's texts counted so far: a text it carries twice is counted once. */
    const counted = new Map<string, number>();
    let sinceTurn = 0;
    const pace = (slice: number) => {
      sinceTurn += slice;
      if (sinceTurn < PACED_SLICE_CHARS) return;
      sinceTurn = 0;
      return new Promise<void>((resolve) => setImmediate(resolve));
    };
    for (const text of texts) {
      let tokens = counted.get(text);
      if (tokens === undefined) {
        const key = options.remember ? this.#keyOf(scope, text) : null;
        tokens = key === null ? undefined : this.#recall(key);
        if (tokens === undefined) {
          tokens = await countTextTokensPaced(text, pace);
          if (key !== null) this.#store(key, tokens);
        }
        counted.set(text, tokens);
      }
      total += tokens;
    }
    return total;
  }

  /** The key `text` is remembered under for `scope`; null for a text this memory keeps nothing of. */
  #keyOf(scope: PromptScope, text: string): string | null {
    if (this.#maxEntries === 0 || text.length < REMEMBERED_TEXT_MIN_CHARS) return null;
    return `${scope.userId}:${scope.appId ?? ''}:${scope.keyId ?? ''}:${hash('sha256', text, 'base64')}`;
  }

  /** A remembered count, made the most recently used; undefined when there is none. */
  #recall(key: string): number | undefined {
    const known = this.#entries.get(key);
    if (known === undefined) return undefined;
    this.#texts.inc({ source: 'remembered' });
    // Most recently used last: a Map iterates in insertion order, so the first key is the one to evict.
    this.#entries.delete(key);
    this.#entries.set(key, known);
    return known;
  }

  #store(key: string, tokens: number): void {
    this.#texts.inc({ source: 'counted' });
    this.#entries.set(key, tokens);
    if (this.#entries.size > this.#maxEntries) this.#entries.delete(this.#entries.keys().next().value!);
  }
}
