import Type from 'typebox';
import type { App } from '../platform/http/server.ts';
import type { AppContext } from '../platform/context.ts';
import { ApiError } from '../platform/errors.ts';
import { costMicros } from '../models/pricing.ts';
import { MODEL_ID_PATTERN } from '../models/routes.ts';
import { countTextTokens } from '../providers/tokens.ts';
import { meteredCall } from './common.ts';
import { DEFAULT_MAX_OUTPUT_TOKENS, worstPromptTokens } from './chat-plan.ts';

/** Audio length a transcription hold covers when the model sets no `maxPredictSeconds`. */
const DEFAULT_MAX_AUDIO_SECONDS = 3_600;
/** Audio tokens per second a token-priced transcription model is assumed to read, for the hold. */
const AUDIO_TOKENS_PER_SECOND = 50;
/** Bytes per second of audio assumed when the provider reports no duration (128 kbit/s). */
const AUDIO_BYTES_PER_SECOND = 16_000;

const SpeechBody = Type.Object({
  model: Type.String({ pattern: MODEL_ID_PATTERN, maxLength: 300 }),
  input: Type.String({ minLength: 1, maxLength: 4096 }),
  voice: Type.Optional(Type.Unknown()),
}, { additionalProperties: true });

/**
 * `POST /api/v1/audio/speech` (binary audio relayed as it arrives) and `POST /api/v1/audio/transcriptions`
 * (multipart upload). Speech is billed `request` + `prompt` per 1M tokens of `input` — known before the call,
 * so the hold is the charge. Transcription is billed `request` + `second` × the audio's duration + `prompt`/
 * `completion` tokens when the provider reports them.
 */
export function registerSpeechRoute(app: App, ctx: AppContext): void {
  app.post('/api/v1/audio/speech', {
    schema: { tags: ['ai'], summary: 'Text to speech (OpenAI-compatible; answers the audio bytes)', security: [{ bearer: [] }], body: SpeechBody },
    config: { auth: ['ai:audio'] },
  }, async (request, reply) => {
    const body = request.body as { model: string; input: string; [k: string]: unknown };
    const promptTokens = countTextTokens(body.input);
    const answered = await meteredCall(ctx, request, reply, {
      kind: 'speech',
      modelId: body.model,
      supports: (adapter) => !!adapter.speech,
      worstCase: (model) => costMicros(model.pricing, { promptTokens, requests: 1 }),
      call: (adapter, model, signal) => adapter.speech!({ ...body, model: model.upstreamModel }, { signal }),
      usage: (_audio, model) => ({ cost: costMicros(model.pricing, { promptTokens, requests: 1 }), promptTokens, completionTokens: 0 }),
    });
    if (!answered) return reply;
    return reply.type(answered.result.contentType).send(answered.result.body);
  });
}

/** `POST /api/v1/audio/transcriptions`; registered in the one scope that parses multipart bodies. */
export function registerTranscriptionRoute(app: App, ctx: AppContext): void {
  app.post('/api/v1/audio/transcriptions', {
    schema: {
      tags: ['ai'], summary: 'Transcribe audio (OpenAI-compatible multipart: file, model, …)', security: [{ bearer: [] }],
      consumes: ['multipart/form-data'],
    },
    config: { auth: ['ai:audio'] },
  }, async (request, reply) => {
    if (!request.isMultipart()) throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Send the audio as multipart/form-data.');
    const form = new FormData();
    const fields: Record<string, string> = {};
    let audioBytes = 0;
    for await (const part of request.parts({ limits: { fileSize: ctx.config.BODY_LIMIT_UPLOAD_BYTES, files: 1, fields: 32 } })) {
      if (part.type === 'file') {
        const buffer = await part.toBuffer();
        if (part.file.truncated) throw new ApiError('PAYLOAD_TOO_LARGE', `The audio file is larger than the ${ctx.config.BODY_LIMIT_UPLOAD_BYTES} bytes this route accepts (BODY_LIMIT_UPLOAD_BYTES).`, { details: { limit: ctx.config.BODY_LIMIT_UPLOAD_BYTES } });
        audioBytes = buffer.length;
        form.append(part.fieldname, new Blob([new Uint8Array(buffer)], { type: part.mimetype }), part.filename || 'audio');
      } else {
        fields[part.fieldname] = String(part.value);
      }
    }
    if (!audioBytes) throw new ApiError('INVALID_REQUEST', 'The multipart body needs a non-empty "file".');
    if (!fields.model || !new RegExp(MODEL_ID_PATTERN).test(fields.model)) throw new ApiError('INVALID_REQUEST', 'The multipart body needs a "model" of the form <vendor>/<model>.');
    const estimatedSeconds = Math.ceil(audioBytes / AUDIO_BYTES_PER_SECOND);
    const answered = await meteredCall(ctx, request, reply, {
      kind: 'transcriptions',
      modelId: fields.model,
      supports: (adapter) => !!adapter.transcription,
      worstCase: (model) => {
        const seconds = model.maxPredictSeconds ?? DEFAULT_MAX_AUDIO_SECONDS;
        return costMicros(model.pricing, { requests: 1, seconds, promptTokens: worstPromptTokens(seconds * AUDIO_TOKENS_PER_SECOND), completionTokens: model.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS });
      },
      call: (adapter, model, signal) => {
        const upstreamForm = new FormData();
        for (const [name, value] of form) upstreamForm.append(name, value);
        for (const [name, value] of Object.entries(fields)) upstreamForm.append(name, name === 'model' ? model.upstreamModel : value);
        return adapter.transcription!(upstreamForm, { signal });
      },
      usage: (result, model) => {
        const usage = result?.usage;
        const seconds = usage?.type === 'duration' && typeof usage.seconds === 'number' ? usage.seconds : typeof result?.duration === 'number' ? result.duration : estimatedSeconds;
        const promptTokens = usage?.type === 'tokens' ? Number(usage.input_tokens ?? 0) : 0;
        const completionTokens = usage?.type === 'tokens' ? Number(usage.output_tokens ?? 0) : 0;
        return { cost: costMicros(model.pricing, { requests: 1, seconds, promptTokens, completionTokens }), promptTokens, completionTokens };
      },
    });
    if (!answered) return reply;
    const { contentType, ...json } = answered.result;
    return typeof contentType === 'string' ? reply.type(contentType).send(json.text) : json;
  });
}
