import type { GatewayDeps } from './deps.ts';
import type { Principal } from '../platform/http/principal.ts';
import { ApiError } from '../platform/errors.ts';
import { toApiError } from '../platform/http/server.ts';
import type { CatalogueModel } from '../models/catalogue.ts';
import { inputTokens, outputTokens, type UsageBreakdown } from '../models/pricing.ts';
import { microsToCredits } from '../platform/money.ts';
import {
  chatPromptLowerBound,
  countChatPromptTokens,
  countTextTokens,
  StreamedTextTokens,
  type TextTokenCounter,
} from '../providers/tokens.ts';
import { toOpenAiPromptFields } from '../providers/openai-compatible/wire.ts';
import { UpstreamError, type ProviderCall, type TokenUsage } from '../providers/types.ts';
import type { Meter } from '../billing/meter.ts';
import type {
  CanonicalCall,
  CanonicalEvent,
  CanonicalPart,
  CanonicalResult,
  CanonicalUsage,
  FinishReason,
} from './canonical.ts';
import { callOutputCap, countedPromptTokens, planCall, planPromptTokens, type CallPlan } from './chat-plan.ts';
import { estimatedPdfTokens } from './document-estimate.ts';
import { openCallMeter } from './affordable.ts';
import { refuseBeforeCounting } from './count-guard.ts';
import { accountChat, chatBreakdown, recordedDetails, tokenCount, type ChatAccount } from './chat-usage.ts';
import { resolveModel } from './common.ts';
import { callWithFallbacks, candidatesOf, ClientGone } from './upstream.ts';

/**
 * The pipeline every inbound protocol runs its calls through: resolve the model and its fallbacks, plan the
 * worst case, hold it, call the provider (fallbacks on 5xx, network failure or timeout before output), and
 * settle on what the provider reported — exactly once, on every exit path.
 *
 * A protocol parses its request into a {@link CanonicalCall} and calls {@link completeCall} or
 * {@link streamCall}; it renders what comes back. Restriction errors (402/429) are the meter's, unchanged;
 * every failure before output is a thrown ApiError (the hold released), or {@link ClientGone} when the
 * client left before the answer (nothing to render: the protocol hijacks its reply).
 */

export { ClientGone };

/** What a protocol may add to the pipeline. */
export interface RunOptions {
  /**
   * Why this call cannot go to a model (a native field its provider may not receive), or null. The model
   * asked for answers the error (before any hold); a fallback that refuses is left out.
   */
  refuses?: (model: CatalogueModel) => ApiError | null;
  /**
   * Streams only: called once when the call, its hold placed, has waited `STREAM_OPEN_AFTER_MS` for its upstream's
   * first event (its fallbacks' included), so that the protocol opens its event stream before a slow upstream's
   * client gives up (`startEventStream` in `sse.ts`). Never called for a call whose first event or failure came
   * sooner.
   */
  onSlowStart?: () => void;
}

/** A planned and held call, ready to go upstream. */
interface Held {
  plan: CallPlan;
  meter: Meter;
}

/**
 * Resolves, plans and holds. Cheap refusals come first: an unknown model (404), a model the API key may not
 * call (403; a fallback it may not call is left out), a prompt beyond every context or an empty wallet for a
 * long prompt (`count-guard.ts`), before the prompt is counted exactly.
 */
async function hold(ctx: GatewayDeps, principal: Principal, call: CanonicalCall, options: RunOptions): Promise<Held> {
  const model = await resolveModel(ctx, call.model, principal);
  const candidates = await candidatesOf(ctx, model, principal);
  const prompt = toOpenAiPromptFields(call);
  await refuseBeforeCounting(ctx, principal, prompt, candidates);
  const promptTokens = await ctx.promptCounts.countPrompt(principal, (count) => promptTokensOf(call, prompt, count));
  const plan = planCall(call, candidates, promptTokens, ctx.config.MAX_IMAGES_PER_REQUEST, options.refuses);
  return openCallMeter(ctx, principal, model.id, plan);
}

/**
 * The call as one candidate's provider receives it. Invariant: `maxOutputTokens` is the cap the hold was
 * computed with for this model, so the hold bounds what the upstream can produce. `modelReasons` is this
 * candidate's own (a fallback may not reason where the model asked for does).
 */
function providerCall(call: CanonicalCall, model: CatalogueModel, plan: CallPlan): ProviderCall {
  return {
    ...call,
    model: model.upstreamModel,
    maxOutputTokens: callOutputCap(plan, model),
    modelReasons: model.reasons,
  };
}

/** The prompt's lower bound, for protocols that answer a token count without calling upstream. */
export function promptLowerBound(call: CanonicalCall): number {
  return chatPromptLowerBound(toOpenAiPromptFields(call)).tokens;
}

/** Counted prompt tokens of a call (system, messages, tools, response format, reasoning; images apart), as the hold counts them. */
export function countCallPromptTokens(call: CanonicalCall, count: TextTokenCounter): number {
  return promptTokensOf(call, toOpenAiPromptFields(call), count);
}

/**
 * The one count the hold and `count_tokens` share: the OpenAI-shaped prompt's tokens plus the replayed reasoning
 * and the input only a native upstream reads (`nativeInput`: replayed server-tool blocks, which it bills as input).
 */
function promptTokensOf(
  call: CanonicalCall,
  prompt: ReturnType<typeof toOpenAiPromptFields>,
  count: TextTokenCounter,
): number {
  let nativeInput = 0;
  for (const text of call.nativeInput ?? []) nativeInput += count(text);
  if (call.rawPrompt) return rawPromptTokens(call, count) + nativeInput;
  return countChatPromptTokens(prompt, count) + reasoningPromptTokens(call, count) + nativeInput;
}

/** The text parts of a raw prompt's messages, counted as they are (see {@link CanonicalCall.rawPrompt}). */
function rawPromptTokens(call: CanonicalCall, count: TextTokenCounter): number {
  let total = 0;
  for (const message of call.messages)
    for (const part of message.content) if (part.type === 'text') total += count(part.text);
  return total;
}

/**
 * Tokens of the reasoning a call replays (Anthropic thinking blocks, their redacted form, reasoning items):
 * the OpenAI-shaped prompt leaves them out, yet an upstream that receives them (Anthropic keeps earlier
 * thinking in context) bills them as input, so the hold counts them. A part with no text (redacted thinking,
 * an encrypted item) is its opaque data, bounded at one token per 4 characters.
 *
 * Security invariant: without this, a conversation carrying long thinking was held for less than it is
 * billed, and the capture is capped at the hold.
 */
function reasoningPromptTokens(call: CanonicalCall, count: TextTokenCounter): number {
  let total = 0;
  for (const message of call.messages) {
    for (const part of message.content) {
      if (part.type !== 'reasoning') continue;
      total += part.text ? count(part.text) : Math.ceil((part.signature?.length ?? 0) / 4);
    }
  }
  return total;
}

/** A provider's usage as the sanitizer reads it (OpenAI's shape); null when the provider reported none. */
function reportOf(usage: CanonicalUsage | undefined): TokenUsage | null {
  if (!usage) return null;
  if (usage.reported) return usage.reported as TokenUsage;
  if (Number.isNaN(usage.inputTokens) && Number.isNaN(usage.outputTokens)) return null;
  return {
    prompt_tokens: usage.inputTokens,
    completion_tokens: usage.outputTokens,
    prompt_tokens_details: {
      cached_tokens: usage.cacheReadTokens ?? 0,
      cache_write_tokens: usage.cacheWriteTokens ?? 0,
      ...(usage.cacheWrite1hTokens !== undefined ? { cache_write_1h_tokens: usage.cacheWrite1hTokens } : {}),
      audio_tokens: usage.audioInputTokens ?? 0,
    },
    completion_tokens_details: {
      reasoning_tokens: usage.reasoningTokens ?? 0,
      audio_tokens: usage.audioOutputTokens ?? 0,
    },
    ...(usage.webSearches !== undefined ? { server_tool_use: { web_search_requests: usage.webSearches } } : {}),
  };
}

/** The usage a client sees: the sanitized counts the call was billed on and its cost in credits. */
function billedUsage(breakdown: UsageBreakdown, chargedMicros: number, reported: TokenUsage | null): CanonicalUsage {
  return {
    inputTokens: inputTokens(breakdown),
    outputTokens: outputTokens(breakdown),
    cacheReadTokens: breakdown.cachedRead,
    cacheWriteTokens: breakdown.cacheWrite + breakdown.cacheWrite1h,
    cacheWrite1hTokens: breakdown.cacheWrite1h,
    reasoningTokens: breakdown.reasoning,
    audioInputTokens: breakdown.audioIn,
    audioOutputTokens: breakdown.audioOut,
    webSearches: breakdown.webSearches,
    cost: microsToCredits(chargedMicros),
    ...(reported ? { reported } : {}),
  };
}

/** The text our own output count reads when a provider reports no usable count (every choice's). */
function producedText(result: CanonicalResult): string {
  const text = (content: CanonicalPart[]) =>
    content
      .map((part) =>
        part.type === 'text' || part.type === 'reasoning'
          ? part.text
          : part.type === 'tool_call'
            ? part.name + part.arguments
            : '',
      )
      .join('');
  return [result.content, ...(result.otherChoices ?? [])].map(text).join('');
}

/**
 * A whole answer: the provider's result with `model` the public id (a fallback's when one answered) and
 * `usage` the sanitized counts it was charged on, `cost` filled. Throws ApiError (hold released) or
 * {@link ClientGone}.
 */
export async function completeCall(
  ctx: GatewayDeps,
  principal: Principal,
  call: CanonicalCall,
  signal: AbortSignal,
  options: RunOptions = {},
): Promise<CanonicalResult> {
  const { plan, meter } = await hold(ctx, principal, call, options);
  let answered;
  try {
    answered = await callWithFallbacks(ctx, plan.candidates, signal, (model, adapter, attempt) =>
      adapter.complete(providerCall(call, model, plan), { signal: attempt }),
    );
  } catch (error) {
    await meter.release(plan.candidates[0], error instanceof ClientGone ? 'client_aborted' : 'upstream_error');
    throw error;
  }
  answered.attempt.dispose();
  const { result, model } = answered;
  const reported = reportOf(result.usage);
  const own = { prompt: planPromptTokens(plan, model), output: () => countTextTokens(producedText(result)) };
  const account = accountChat(model.pricing, meter.held, reported, own, call.longCache !== undefined);
  const captured = await meter.settle(outcomeOf(model, account, 'ok'));
  return { ...result, model: model.id, usage: billedUsage(account.breakdown, captured, reported) };
}

/** What the meter records for a call priced by `account`. */
function outcomeOf(model: CatalogueModel, account: ChatAccount, status: 'ok' | 'client_aborted' | 'upstream_error') {
  const { breakdown, cost } = account;
  return {
    model,
    // The whole cost: the meter captures at most the hold, and records the rest as uncollected.
    cost,
    promptTokens: inputTokens(breakdown),
    completionTokens: outputTokens(breakdown),
    status,
    details: recordedDetails(breakdown),
  };
}

/** A streamed answer: iterate it once; its end (or `return()`, the client gone) settles the call. */
export interface CallStream extends AsyncIterable<CanonicalEvent> {
  /** The catalogue model answering (its `id` is the public id a renderer shows). */
  readonly model: CatalogueModel;
  /**
   * True when the provider speaks the call's `native` protocol: its events carry the upstream's frames in
   * `native`, and an event without one has no frame of its own (a renderer relaying frames skips it).
   */
  readonly native: boolean;
  /**
   * The prompt's tokens as the gateway knows them before any upstream report: text and images as counted, and a
   * PDF at its page estimate (`document-estimate.ts`, the number count_tokens gives), never at the model's context
   * it is held at (a renderer showing this number, as Anthropic's `message_start` does, would tell a context meter
   * the whole window was used).
   */
  readonly promptTokens: number;
}

/**
 * A streamed call. Resolves once the first upstream event arrived (so a failure before output is a thrown
 * ApiError with the hold released and the fallbacks tried, or {@link ClientGone}, whether or not
 * `options.onSlowStart` had the protocol open its stream meanwhile); then yields the provider's
 * events with `usage` replaced by the billed usage (its `cost` filled; our own count when the upstream sent
 * none, as a last `usage` event without `native`), then `end` — or an `error` event when the upstream broke
 * after output began.
 *
 * Invariant: every exit — the end, an upstream failure, the consumer's `return()` (client gone), a throw in
 * the consumer, a `return()` before any `next()` — settles the hold exactly once for what was produced, before
 * the iterator finishes, so a renderer that ends its response after the iteration lets the client see the
 * charge. A stream that ended is settled before its `end` is yielded; a settle that cannot be written yields an
 * `error` event (SERVICE_UNAVAILABLE) in the end's place. A consumer that neither iterates nor returns leaves the hold to expire: always iterate or return.
 */
export async function streamCall(
  ctx: GatewayDeps,
  principal: Principal,
  call: CanonicalCall,
  signal: AbortSignal,
  options: RunOptions = {},
): Promise<CallStream> {
  const { plan, meter } = await hold(ctx, principal, call, options);
  // One timer per call, not per attempt (a fallback does not restart the wait the client sees), cleared at the
  // first event or the failure: a stream that begins sooner costs one timer armed and cleared. The attempts'
  // deadline timers cannot carry it: each fallback has its own, of its own model's length.
  const slowStart = options.onSlowStart && setTimeout(options.onSlowStart, ctx.config.STREAM_OPEN_AFTER_MS);
  let answered;
  try {
    answered = await callWithFallbacks(ctx, plan.candidates, signal, async (model, adapter, attempt) => {
      const iterator = (await adapter.stream(providerCall(call, model, plan), { signal: attempt }))[
        Symbol.asyncIterator
      ]();
      return {
        iterator,
        first: await iterator.next(),
        native: call.native !== undefined && adapter.speaks.includes(call.native.protocol),
      };
    });
  } catch (error) {
    clearTimeout(slowStart);
    await meter.release(plan.candidates[0], error instanceof ClientGone ? 'client_aborted' : 'upstream_error');
    throw error;
  }
  clearTimeout(slowStart);
  const {
    result: { iterator, first, native },
    model,
    attempt,
  } = answered;
  attempt.began();
  const promptTokens = planPromptTokens(plan, model);
  // Counted as it comes, so a long stream does not keep its whole answer for its own count.
  const produced = new StreamedTextTokens();
  let reported: TokenUsage | null = null;
  const account = () =>
    accountChat(
      model.pricing,
      meter.held,
      reported,
      { prompt: promptTokens, output: () => produced.total },
      call.longCache !== undefined,
    );
  /**
   * An upstream that failed before producing anything (its start sent, then an error: Anthropic's overloaded_error,
   * whose message_start reported the input) did not bill the call: nothing is charged, as before output. A client
   * gone is charged the input it had processed.
   */
  const failedBeforeOutput = (status: 'ok' | 'client_aborted' | 'upstream_error') =>
    status === 'upstream_error' && produced.total === 0 && !((tokenCount(reported?.completion_tokens) ?? 0) > 0);
  let closed = false;
  /**
   * Stops the upstream when it may still be producing, and settles for what was produced; once. Resolves with
   * the error when the settle could not be written (after the meter's own retries), else null.
   */
  const close = async (status: 'ok' | 'client_aborted' | 'upstream_error'): Promise<unknown> => {
    if (closed) return null;
    closed = true;
    if (status === 'client_aborted') await iterator.return?.(undefined).catch(() => {});
    attempt.dispose();
    return (
      failedBeforeOutput(status) ? meter.release(model, status) : meter.settle(outcomeOf(model, account(), status))
    ).then(
      () => null,
      (error: unknown) => {
        ctx.log.error({ err: error }, 'settling a stream failed; the hold expires and is released by the sweep');
        return error ?? new Error('settling a stream failed');
      },
    );
  };

  async function* events(): AsyncGenerator<CanonicalEvent> {
    let status: 'ok' | 'client_aborted' | 'upstream_error' = 'client_aborted';
    let usageSent = false;
    let end: CanonicalEvent | null = null;
    try {
      try {
        for (let step = first; !step.done; step = await iterator.next()) {
          const event = step.value;
          if (event.type === 'text' || event.type === 'reasoning') produced.add(event.delta);
          else if (event.type === 'tool_call_start') produced.add(event.name);
          else if (event.type === 'tool_call_delta') produced.add(event.arguments);
          if (event.type === 'end') {
            end = event;
            // The provider may still be suspended at its `end`: returning it runs its cleanup now (the upstream
            // body's last bytes are read, so its keep-alive connection serves the next call).
            await iterator.return?.(undefined).catch(() => {});
            break;
          }
          if (event.type === 'usage') {
            reported = reportOf(event.usage) ?? reported;
            const priced = account();
            usageSent = true;
            yield { ...event, usage: billedUsage(priced.breakdown, priced.charge, reported) };
            continue;
          }
          yield event;
        }
      } catch (error) {
        if (signal.reason instanceof ApiError) {
          // A shutdown cut the stream: the client is still reading, so it gets what it was charged and why the
          // stream ends here, and the call is settled for what was produced, as for a client gone.
          const priced = account();
          yield { type: 'usage', usage: billedUsage(priced.breakdown, priced.charge, reported) };
          yield { type: 'error', code: signal.reason.code, message: signal.reason.message };
          return;
        }
        if (error instanceof ClientGone || attempt.signal.aborted || signal.aborted) return;
        status = 'upstream_error';
        ctx.log.warn({ err: error, model: model.id }, 'upstream stream failed after output began');
        // Stop the upstream producing (and billing) tokens nobody will read.
        await iterator.return?.(undefined).catch(() => {});
        // The usage the call is charged, before the error: a renderer that shows usage on failure (Responses'
        // response.failed) shows this one, not the last the upstream reported (Anthropic's input-only one).
        const nothing = failedBeforeOutput(status);
        const priced = nothing
          ? { breakdown: chatBreakdown(null, { prompt: 0, output: () => 0 }), charge: 0 }
          : account();
        yield { type: 'usage', usage: billedUsage(priced.breakdown, priced.charge, nothing ? null : reported) };
        yield {
          type: 'error',
          code: 'UPSTREAM_ERROR',
          // The provider's own message already says what broke ("The upstream stream failed: …").
          message: `${(error as Error).message.replace(/\.$/, '')}, after output began.`,
          ...(error instanceof UpstreamError && error.status === 529 ? { overloaded: true } : {}),
        };
        return;
      }
      if (!usageSent) {
        const priced = account();
        yield { type: 'usage', usage: billedUsage(priced.breakdown, priced.charge, reported) };
      }
      status = 'ok';
      // Settled before the end goes out: a stream whose charge could not be written (the database's disk full or
      // the database gone, past the meter's retries) ends with that error instead of its end, so that a client
      // never reads as complete an answer that was not charged.
      const unsettled = await close(status);
      if (unsettled !== null) {
        const { code, message } = toApiError(unsettled);
        yield { type: 'error', code, message };
        return;
      }
      yield end ?? { type: 'end', finishReason: 'stop' as FinishReason };
    } finally {
      await close(status);
    }
  }

  const generator = events();
  let started = false;
  // A generator returned before its first `next()` never runs its body (nor its `finally`): the wrapper closes
  // the call itself then, so a consumer that gives up before iterating still settles the hold.
  const iterator_: AsyncIterableIterator<CanonicalEvent> = {
    next: () => {
      started = true;
      return generator.next();
    },
    return: async (value?: unknown) => {
      if (!started) await close('client_aborted');
      started = true;
      return generator.return(value as undefined);
    },
    [Symbol.asyncIterator]: () => iterator_,
  };
  return {
    model,
    native,
    // What the gateway knows of the input before the upstream reports: the counted prompt and its PDFs' estimate,
    // as count_tokens answers it (the hold is the context: chat-plan.ts).
    promptTokens: countedPromptTokens(plan, model) + (plan.wholeContext ? estimatedPdfTokens(call) : 0),
    [Symbol.asyncIterator]: () => iterator_,
  };
}
