import Type from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { App } from '../platform/http/server.ts';
import { principalOf } from '../platform/http/server.ts';
import type { AppContext } from '../platform/context.ts';
import { ApiError } from '../platform/errors.ts';
import { inputTokens, outputTokens } from '../models/pricing.ts';
import { microsToCredits } from '../platform/money.ts';
import { MODEL_ID_PATTERN } from '../models/routes.ts';
import { countChatPromptTokens, countTextTokens } from '../providers/tokens.ts';
import type { ChatChunk, ChatCompletion } from '../providers/types.ts';
import type { Meter } from '../billing/meter.ts';
import { callWithFallbacks, candidatesOf, ClientGone } from './upstream.ts';
import { chatCallPlan, planChat, planPromptTokens, upstreamChatBody, type ChatPlan, type ChatRequest } from './chat-plan.ts';
import { openCallMeter } from './affordable.ts';
import { StreamTally, writeFrame } from './chat-stream.ts';
import { accountChat, recordedDetails } from './chat-usage.ts';
import { clientSignal, resolveModel } from './common.ts';
import { refuseBeforeCounting } from './count-guard.ts';

/** The chat request as validated: only what the gateway must read; every other OpenAI field passes through. */
const ChatBodySchema = Type.Object({
  model: Type.String({ pattern: MODEL_ID_PATTERN, maxLength: 300, description: 'A model id `<vendor>/<model>`, e.g. `tollgate/echo`.' }),
  messages: Type.Array(Type.Object({ role: Type.String({ maxLength: 64 }) }, { additionalProperties: true }), { minItems: 1 }),
  stream: Type.Optional(Type.Boolean()),
  stream_options: Type.Optional(Type.Union([Type.Object({ include_usage: Type.Optional(Type.Boolean()) }, { additionalProperties: true }), Type.Null()])),
  max_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
  max_completion_tokens: Type.Optional(Type.Integer({ minimum: 1 })),
  n: Type.Optional(Type.Integer({ minimum: 1, maximum: 16 })),
}, { additionalProperties: true });

const ChatCompletionSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('chat.completion'),
  created: Type.Integer(),
  model: Type.String(),
  choices: Type.Array(Type.Object({ index: Type.Integer(), message: Type.Object({ role: Type.String(), content: Type.Union([Type.String(), Type.Null()]) }, { additionalProperties: true }), finish_reason: Type.Union([Type.String(), Type.Null()]) }, { additionalProperties: true })),
  usage: Type.Optional(Type.Object({ prompt_tokens: Type.Integer(), completion_tokens: Type.Integer(), total_tokens: Type.Optional(Type.Integer()) }, { additionalProperties: true })),
}, { additionalProperties: true });

const ErrorSchema = Type.Object({ error: Type.Object({ code: Type.String(), message: Type.String(), type: Type.String(), param: Type.Optional(Type.String()) }, { additionalProperties: true }) });

/** `POST /api/v1/chat/completions`: OpenAI-compatible chat, streamed or not, billed by hold and settle. */
export function registerChatRoute(app: App, ctx: AppContext): void {
  app.post('/api/v1/chat/completions', {
    schema: {
      tags: ['ai'],
      summary: 'Create a chat completion (OpenAI-compatible; `stream: true` answers Server-Sent Events)',
      description: 'The OpenAI chat fields on the provider\'s pass-through allow-list (tools, response_format, vision parts, …) reach the provider; another field is a 400 UNSUPPORTED_PARAMETER naming it. The call holds its worst-case cost before going upstream (each image part at the model\'s image-token budget) and is charged what it used; without max_tokens, the output cap is lowered to what the payer can afford.',
      security: [{ bearer: [] }],
      body: ChatBodySchema,
      response: { 200: ChatCompletionSchema, 400: ErrorSchema, 402: ErrorSchema, 404: ErrorSchema, 429: ErrorSchema, 502: ErrorSchema, 504: ErrorSchema },
    },
    config: { auth: ['ai:chat', 'ai:completions'] },
  }, async (request, reply) => {
    const body = request.body as ChatRequest;
    const model = await resolveModel(ctx, body.model);
    const candidates = await candidatesOf(ctx, model);
    await refuseBeforeCounting(ctx, principalOf(request), body, candidates);
    const promptTokens = countChatPromptTokens(body);
    const { meter, plan } = await openCallMeter(ctx, principalOf(request), model.id, chatCallPlan(body, planChat(body, candidates, promptTokens, ctx.config.MAX_IMAGES_PER_REQUEST)));
    return body.stream
      ? streamChat(ctx, request, reply, body, plan, meter)
      : completeChat(ctx, reply, body, plan, meter);
  });
}

/** A non-streaming chat: the upstream's completion, its model renamed to the public id, charged on its usage. */
async function completeChat(ctx: AppContext, reply: FastifyReply, body: ChatRequest, plan: ChatPlan, meter: Meter): Promise<ChatCompletion | FastifyReply> {
  let answered;
  try {
    answered = await callWithFallbacks(ctx, plan.candidates, clientSignal(reply), (model, adapter, signal) => adapter.chat(upstreamChatBody(body, model, plan, false), { signal }));
  } catch (error) {
    await meter.release(plan.candidates[0], error instanceof ClientGone ? 'client_aborted' : 'upstream_error');
    if (error instanceof ClientGone) return reply.hijack();
    throw error;
  }
  answered.attempt.dispose();
  const { result: completion, model } = answered;
  const promptTokens = planPromptTokens(plan, model);
  const outputText = () => completion.choices.map((c) => `${c.message?.content ?? ''}${c.message?.tool_calls ? JSON.stringify(c.message.tool_calls) : ''}`).join('');
  const account = accountChat(model.pricing, meter.held, completion.usage, { prompt: promptTokens, output: () => countTextTokens(outputText()) });
  const captured = await meter.settle({ model, cost: account.charge, promptTokens: inputTokens(account.breakdown), completionTokens: outputTokens(account.breakdown), details: recordedDetails(account.breakdown), status: 'ok' });
  completion.usage = { ...account.usage, cost: microsToCredits(captured) };
  completion.model = model.id;
  return completion;
}

/**
 * A streaming chat, relayed frame by frame as the upstream produces them (never buffered whole).
 *
 * Invariants, in order: (1) nothing is written to the client until the first upstream chunk arrived, so a
 * failure before output is an ordinary 502/504 JSON error with the hold released and the fallbacks tried;
 * (2) once output began, every exit path — done, client gone, upstream broken — settles the hold for what
 * was produced, exactly once, in the `finally`, before the response ends.
 */
async function streamChat(ctx: AppContext, request: FastifyRequest, reply: FastifyReply, body: ChatRequest, plan: ChatPlan, meter: Meter): Promise<FastifyReply> {
  let answered;
  try {
    answered = await callWithFallbacks(ctx, plan.candidates, clientSignal(reply), async (model, adapter, signal) => {
      const iterator = (await adapter.streamChat(upstreamChatBody(body, model, plan, true), { signal }))[Symbol.asyncIterator]();
      return { iterator, first: await iterator.next() };
    });
  } catch (error) {
    await meter.release(plan.candidates[0], error instanceof ClientGone ? 'client_aborted' : 'upstream_error');
    if (error instanceof ClientGone) return reply.hijack();
    throw error;
  }
  const { result: { iterator, first }, model, attempt } = answered;
  attempt.began();
  reply.hijack();
  const raw = reply.raw;
  raw.writeHead(200, {
    ...(reply.getHeaders() as Record<string, string>),
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'x-accel-buffering': 'no',
  });
  const promptTokens = planPromptTokens(plan, model);
  const tally = new StreamTally(model.id, body.stream_options?.include_usage === true, promptTokens, (reported, own) => accountChat(model.pricing, meter.held, reported, own));
  let status: 'ok' | 'client_aborted' | 'upstream_error' = 'ok';
  try {
    for (let step = first; !step.done; step = await iterator.next()) {
      const frame = tally.frame(step.value as ChatChunk);
      if (frame && !(await writeFrame(raw, frame))) throw new ClientGone('The client went away mid-stream.');
    }
    const usageFrame = tally.missingUsageFrame();
    if (usageFrame && !(await writeFrame(raw, usageFrame))) throw new ClientGone('The client went away mid-stream.');
    await writeFrame(raw, 'data: [DONE]\n\n');
  } catch (error) {
    if (error instanceof ClientGone || attempt.signal.aborted || raw.destroyed) {
      status = 'client_aborted';
    } else {
      status = 'upstream_error';
      request.log.warn({ err: error, model: model.id }, 'upstream stream failed after output began');
      const envelope = new ApiError('UPSTREAM_ERROR', `The upstream stream failed after output began: ${(error as Error).message}`).toEnvelope();
      await writeFrame(raw, `event: error\ndata: ${JSON.stringify(envelope)}\n\n`);
    }
    // Stop the upstream producing (and billing) tokens nobody will read.
    await iterator.return?.().catch(() => {});
  } finally {
    attempt.dispose();
    const { breakdown, charge } = tally.account();
    await meter.settle({ model, cost: charge, promptTokens: inputTokens(breakdown), completionTokens: outputTokens(breakdown), details: recordedDetails(breakdown), status }).catch((error) => request.log.error({ err: error }, 'settling a stream failed; the hold expires and is released by the sweep'));
    // The response ends only after the settle, so a client that reads its wallet once the stream closed sees the charge.
    if (!raw.writableEnded) raw.end();
  }
  return reply;
}
