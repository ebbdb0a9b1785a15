import type { App } from '../platform/http/server.ts';
import type { GatewayDeps } from './deps.ts';
import { ApiError } from '../platform/errors.ts';
import { costMicros, effectivePrice } from '../models/pricing.ts';
import { tokenCount } from './chat-usage.ts';
import { MODEL_ID_PATTERN, MODEL_ID_RULE } from '../models/routes.ts';
import { countTextTokens } from '../providers/tokens.ts';
import { meteredCall } from './common.ts';
import { DEFAULT_MAX_OUTPUT_TOKENS, worstPromptTokens } from './chat-plan.ts';
import { audioDurationSeconds } from './audio-duration.ts';
import type { CatalogueModel } from '../models/catalogue.ts';
import type { UsageKind } from '../billing/meter.ts';
import { AUDIO_TEXT_ANSWERS } from './openai-answers.ts';
import {
  fieldTooLong,
  fileTooLarge,
  MULTIPART_FIELD_BYTES,
  multipartRefusal,
  type MultipartWording,
} from './multipart.ts';

/** Audio tokens per second a token-priced transcription model is assumed to read, for the hold. */
const AUDIO_TOKENS_PER_SECOND = 50;
/** Seconds added to the header's duration for the hold: providers round a started second up. */
const DURATION_MARGIN_SECONDS = 1;

/** One of OpenAI's audio-to-text endpoints: where it is served, and how it reaches the provider. */
interface AudioTextEndpoint {
  path: string;
  summary: string;
  kind: UsageKind;
  /** The adapter's method for it (absent on a provider without the endpoint). */
  method: 'transcription' | 'translation';
}

const TRANSCRIPTIONS: AudioTextEndpoint = {
  path: '/api/v1/audio/transcriptions',
  summary: 'Transcribe audio (OpenAI-compatible multipart: file, model, …)',
  kind: 'transcriptions',
  method: 'transcription',
};

const TRANSLATIONS: AudioTextEndpoint = {
  path: '/api/v1/audio/translations',
  summary: 'Translate audio into English text (OpenAI-compatible multipart: file, model, …)',
  kind: 'translations',
  method: 'translation',
};

/** `POST /api/v1/audio/transcriptions`; registered in the one scope that parses multipart bodies. */
export function registerTranscriptionRoute(app: App, ctx: GatewayDeps): void {
  registerAudioTextRoute(app, ctx, TRANSCRIPTIONS);
}

/**
 * `POST /api/v1/audio/translations` (the SDK's `audio.translations.create`: whisper-1 turns speech in any language
 * into English text): held, charged and refused exactly as a transcription, whose route it shares.
 */
export function registerTranslationRoute(app: App, ctx: GatewayDeps): void {
  registerAudioTextRoute(app, ctx, TRANSLATIONS);
}

function registerAudioTextRoute(app: App, ctx: GatewayDeps, endpoint: AudioTextEndpoint): void {
  app.post(
    endpoint.path,
    {
      schema: {
        tags: ['ai'],
        summary: endpoint.summary,
        security: [{ bearer: [] }],
        consumes: ['multipart/form-data'],
      },
      config: { auth: ['ai:audio'], billed: true, documentedResponses: AUDIO_TEXT_ANSWERS },
    },
    async (request, reply) => {
      if (!request.isMultipart())
        throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Send the audio as multipart/form-data.');
      const form = new FormData();
      const fields: Record<string, string> = {};
      const lists: Array<[string, string]> = [];
      let audio: Buffer | null = null;
      // Only the parser's work is inside: anything else it throws is about the body the client sent.
      try {
        for await (const part of request.parts({
          limits: {
            fileSize: ctx.config.BODY_LIMIT_UPLOAD_BYTES,
            files: 1,
            fields: 32,
            fieldSize: MULTIPART_FIELD_BYTES,
          },
        })) {
          if (part.type === 'file') {
            const buffer = await part.toBuffer();
            if (part.file.truncated) throw fileTooLarge(ctx.config.BODY_LIMIT_UPLOAD_BYTES, AUDIO_UPLOAD.file);
            audio = buffer;
            form.append(
              part.fieldname,
              new Blob([new Uint8Array(buffer)], { type: part.mimetype }),
              part.filename || 'audio',
            );
          } else if (part.valueTruncated) {
            throw fieldTooLong(
              part.fieldname,
              part.fieldname === SPEAKER_REFERENCE
                ? 'a speaker reference is a clip of 2 to 10 seconds: a shorter one, or MP3'
                : '',
            );
          } else if (isListOption(part.fieldname)) {
            lists.push([part.fieldname, String(part.value)]);
          } else {
            fields[part.fieldname] = String(part.value);
          }
        }
      } catch (error) {
        throw multipartRefusal(error, ctx.config.BODY_LIMIT_UPLOAD_BYTES, AUDIO_UPLOAD);
      }
      if (!audio?.length) throw new ApiError('INVALID_REQUEST', 'The multipart body needs a non-empty "file".');
      const durationSeconds = audioDurationSeconds(audio);
      if (!fields.model || !new RegExp(MODEL_ID_PATTERN).test(fields.model))
        throw new ApiError(
          'INVALID_REQUEST',
          fields.model
            ? `model ${MODEL_ID_RULE} (as sent: ${JSON.stringify(fields.model)}).`
            : `The multipart body needs a "model" field: it ${MODEL_ID_RULE}.`,
          { details: { param: 'model' } },
        );
      // The hold covers the audio the file carries (read from its header), not a flat hour; see audio-duration.ts.
      if (durationSeconds === null) {
        throw new ApiError(
          'AUDIO_DURATION_UNREADABLE',
          "The audio file's duration cannot be read from its header; send WAV (PCM) or MP3 audio.",
          { details: { param: 'file' } },
        );
      }
      const measured = durationSeconds;
      // The speaker references of a diarizing model are audio the upstream reads and bills as input too.
      const referenceSeconds = speakerReferenceSeconds(lists);
      const heldSeconds = Math.ceil(measured) + DURATION_MARGIN_SECONDS + referenceSeconds;
      // A text `prompt` (a glossary, the previous segment) is billed as input tokens by token-priced models.
      const textPromptTokens = fields.prompt ? countTextTokens(fields.prompt) : 0;
      // `text` answers carry no usage, so they are asked as JSON (which does) and answered as the bare text.
      const asksText = fields.response_format === 'text';
      const capOf = (model: CatalogueModel) =>
        Math.min(ctx.config.MAX_TRANSCRIPTION_SECONDS, model.maxPredictSeconds ?? Infinity);
      const answered = await meteredCall(ctx, request, reply, {
        kind: endpoint.kind,
        modelId: fields.model,
        supports: (adapter) => !!adapter[endpoint.method],
        refuses: (model) =>
          measured > capOf(model)
            ? new ApiError(
                'AUDIO_TOO_LONG',
                `The audio is ${Math.ceil(measured)} s long; the model "${model.id}" transcribes at most ${capOf(model)} s per request.`,
                { details: { param: 'file', seconds: Math.ceil(measured), maxSeconds: capOf(model) } },
              )
            : null,
        worstCase: (model) => {
          const inputTokens = worstPromptTokens(heldSeconds * AUDIO_TOKENS_PER_SECOND + textPromptTokens);
          const rest = {
            requests: 1,
            seconds: heldSeconds,
            completionTokens: model.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
          };
          // Every input token at the dearer of the two input prices: the audio's are charged at `audioInput`.
          return Math.max(
            costMicros(model.pricing, { ...rest, promptTokens: inputTokens }),
            costMicros(model.pricing, { ...rest, audioIn: inputTokens }),
          );
        },
        call: (adapter, model, signal) => {
          const upstreamForm = new FormData();
          for (const [name, value] of form) upstreamForm.append(name, value);
          for (const [name, value] of Object.entries(fields))
            upstreamForm.append(
              name,
              name === 'model' ? model.upstreamModel : name === 'response_format' && asksText ? 'json' : value,
            );
          for (const [name, value] of lists) upstreamForm.append(name, value);
          return adapter[endpoint.method]!(upstreamForm, { signal });
        },
        usage: (result, model) => {
          const { usage, text } = reportedUsage(result);
          // Upstream usage is not trusted as sent: an unusable duration is the header's, and an unusable count the
          // estimate below, so garbage can neither fail the settle, make a charge negative nor make it free.
          const reported = usage?.type === 'duration' ? usage.seconds : result?.duration;
          const seconds =
            typeof reported === 'number' && Number.isFinite(reported) && reported >= 0 ? reported : measured;
          // Nothing reported: the audio at the hold's rate and the transcript counted, never nothing.
          const estimate = () => ({
            prompt: textPromptTokens,
            audioIn: Math.ceil((measured + referenceSeconds) * AUDIO_TOKENS_PER_SECOND),
            completion: countTextTokens(text),
          });
          // A duration report (whisper-1's) counts no tokens: a model priced on them is charged the estimate for them.
          const tokens =
            usage?.type === 'tokens'
              ? reportedTokens(usage, estimate)
              : usage?.type === 'duration' && !pricesTokens(model)
                ? { prompt: 0, audioIn: 0, completion: 0 }
                : estimate();
          return {
            cost: costMicros(model.pricing, { requests: 1, seconds, ...tokens }),
            promptTokens: tokens.prompt + tokens.audioIn,
            completionTokens: tokens.completion,
          };
        },
      });
      if (!answered) return reply;
      const { contentType, ...json } = answered.result;
      if (asksText) return reply.type('text/plain; charset=utf-8').send(String(json.text ?? ''));
      return typeof contentType === 'string' ? reply.type(contentType).send(json.text) : json;
    },
  );
}

/**
 * Whether a multipart field is one value of an array option, which the openai SDK sends as one `name[]` field per
 * value (`timestamp_granularities[]: word` and `: segment`, `include[]`, `known_speaker_names[]` and
 * `known_speaker_references[]`): every value goes upstream, in order. Any other field is sent once (its last value),
 * as the hold read it.
 */
function isListOption(name: string): boolean {
  return name.endsWith('[]');
}

const SPEAKER_REFERENCE = 'known_speaker_references[]';
/** A speaker reference as OpenAI takes it: a data URL of base64 audio. */
const AUDIO_DATA_URL = /^data:[^,;]*(?:;[^,;]*)*;base64,([A-Za-z0-9+/=\s]*)$/;

/**
 * The seconds of audio in the request's speaker references (a diarizing model's `known_speaker_references[]`),
 * each rounded up, for the hold and the estimate: the upstream reads them as input audio, so they are held as the
 * file is.
 *
 * Billing invariant: a reference whose duration cannot be read is refused (400 naming it), never let through
 * unheld: before, only the last reference was sent, so that the others could not cost what the hold left out.
 */
function speakerReferenceSeconds(lists: Array<[string, string]>): number {
  let seconds = 0;
  let index = 0;
  for (const [name, value] of lists) {
    if (name !== SPEAKER_REFERENCE) continue;
    const param = `known_speaker_references[${index++}]`;
    const data = AUDIO_DATA_URL.exec(value);
    const duration = data ? audioDurationSeconds(Buffer.from(data[1]!, 'base64')) : null;
    if (duration === null)
      throw new ApiError(
        'AUDIO_DURATION_UNREADABLE',
        `The speaker reference ${param} must be a data URL of WAV (PCM) or MP3 audio (data:audio/wav;base64,…) whose duration can be read from its header.`,
        { details: { param } },
      );
    seconds += Math.ceil(duration);
  }
  return seconds;
}

/** Whether a transcription on `model` costs anything by its tokens (text or audio in, text out). */
function pricesTokens(model: CatalogueModel): boolean {
  return (['prompt', 'audioInput', 'completion'] as const).some((key) => effectivePrice(model.pricing, key) > 0);
}

/**
 * The usage a transcription answer reports, and its text: a JSON answer's `usage`, or, for `stream: true` (an
 * event stream, relayed whole), the `usage` of its `transcript.text.done` event. Missing: null.
 */
function reportedUsage(result: any): { usage: any; text: string } {
  if (typeof result?.contentType !== 'string' || !result.contentType.includes('text/event-stream'))
    return { usage: result?.usage ?? null, text: typeof result?.text === 'string' ? result.text : '' };
  let usage: any = null;
  let text = '';
  for (const line of String(result.text).split(/\r?\n/)) {
    if (!line.startsWith('data:')) continue;
    let event: any;
    try {
      event = JSON.parse(line.slice(5));
    } catch {
      continue;
    }
    if (typeof event?.delta === 'string') text += event.delta;
    if (event?.type === 'transcript.text.done') {
      if (typeof event.text === 'string') text = event.text;
      usage = event.usage ?? usage;
    }
  }
  return { usage, text };
}

/**
 * A `usage.type: "tokens"` report as priced parts: the input's `text_tokens` at `prompt`, the rest (its
 * `audio_tokens`, and any not attributed) at `audioInput`, never less than the audio costs. A count that is
 * missing or unusable (not a non-negative number) is taken from `estimate`, as when nothing is reported.
 */
function reportedTokens(
  usage: any,
  estimate: () => { prompt: number; audioIn: number; completion: number },
): { prompt: number; audioIn: number; completion: number } {
  const input = tokenCount(usage.input_tokens);
  const output = tokenCount(usage.output_tokens);
  const estimated = input === null || output === null ? estimate() : null;
  const text = input === null ? 0 : Math.min(tokenCount(usage.input_token_details?.text_tokens) ?? 0, input);
  return {
    prompt: input === null ? estimated!.prompt : text,
    audioIn: input === null ? estimated!.audioIn : input - text,
    completion: output ?? estimated!.completion,
  };
}

/** How the parser's refusals of a transcription's body are worded (see multipart.ts). */
const AUDIO_UPLOAD: MultipartWording = {
  file: 'The audio file is',
  limits: {
    FST_FILES_LIMIT: 'The multipart body carries more than one file; send the audio as one file, named "file".',
    FST_FIELDS_LIMIT: 'The multipart body has more than 32 fields; send the file, the model and the options you need.',
    FST_PARTS_LIMIT: 'The multipart body has too many parts; send the file, the model and the options you need.',
  },
};
