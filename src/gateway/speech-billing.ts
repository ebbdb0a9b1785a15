import type { CatalogueModel } from '../models/catalogue.ts';
import { costMicros } from '../models/pricing.ts';
import { DEFAULT_MAX_OUTPUT_TOKENS, worstPromptTokens } from './chat-plan.ts';
import { tokenCount } from './chat-usage.ts';

/**
 * What text-to-speech costs. A model whose catalogue entry prices `audioOutput` (OpenAI's gpt-4o-mini-tts) is
 * billed on the tokens the provider reports — text input at `prompt`, audio output at `audioOutput` — which
 * only its event stream reports; any other speech model (tts-1, billed per character) on the tokens of its
 * input text at `prompt`, known before the call.
 */

/**
 * Audio tokens per second of speech assumed when the provider reported none: OpenAI prices gpt-4o-mini-tts at
 * an estimated $0.015 a minute, 1,250 audio tokens at $12 per 1M, about 21 a second; 25 errs high.
 */
export const AUDIO_OUTPUT_TOKENS_PER_SECOND = 25;

/**
 * Bytes of audio a second of speech takes at least, by `response_format`, for that estimate: PCM (and WAV)
 * is OpenAI's 24 kHz 16-bit mono, exactly 48,000 bytes a second; a compressed format is assumed at 32 kbit/s,
 * below what OpenAI sends speech at, so the seconds (and the charge) are over- rather than under-estimated.
 */
const PCM_BYTES_PER_SECOND = 48_000;
const COMPRESSED_BYTES_PER_SECOND = 4_000;

/** True when the model is billed on the speech tokens the provider reports (its entry prices `audioOutput`). */
export function billsSpeechTokens(model: CatalogueModel): boolean {
  return model.pricing.audioOutput !== null && model.pricing.audioOutput !== undefined;
}

/**
 * The most a speech call can cost on `model`, in micro-credits. Token-priced: `request` + the counted text
 * with the tokenizer margin at `prompt` + the model's output cap (`maxOutputTokens`, else
 * {@link DEFAULT_MAX_OUTPUT_TOKENS}) at `audioOutput` — the speech endpoint takes no output cap, so the
 * catalogue's is the bound. Per character: `request` + the counted text at `prompt`, which is the charge.
 */
export function speechWorstCase(model: CatalogueModel, promptTokens: number): number {
  if (!billsSpeechTokens(model)) return perCharacterSpeechCost(model, promptTokens);
  return costMicros(model.pricing, {
    requests: 1,
    prompt: worstPromptTokens(promptTokens),
    audioOut: model.maxOutputTokens ?? DEFAULT_MAX_OUTPUT_TOKENS,
  });
}

/**
 * What a per-character speech call costs: `request` + its counted text at `prompt`. Known before the call, it
 * is both the hold and the charge.
 */
export function perCharacterSpeechCost(model: CatalogueModel, promptTokens: number): number {
  return costMicros(model.pricing, { promptTokens, requests: 1 });
}

/** What a token-priced speech call is charged on. */
export interface SpeechTokens {
  input: number;
  output: number;
  /** True when a count is our estimate (the provider reported none that could be used). */
  estimated: boolean;
}

/** What the gateway knows of a speech call itself: its counted input and the audio relayed so far. */
export interface SpeechProduced {
  promptTokens: number;
  audioBytes: number;
  /** The `response_format` asked for (default mp3). */
  format: unknown;
}

/**
 * The tokens a token-priced speech call is charged for: the `usage` of its `speech.audio.done` event when it
 * came, each count read as {@link tokenCount} does (never negative, fractional or absurd). A count missing or
 * unusable — a stream cut by the client or the upstream before the event, or a provider that sent none — is
 * estimated: the input as counted, the output from the audio relayed ({@link estimatedOutputTokens}). A
 * reported 0 output where audio was produced is not believed either.
 */
export function speechTokens(usage: unknown, produced: SpeechProduced): SpeechTokens {
  const report = usage && typeof usage === 'object' ? (usage as Record<string, unknown>) : {};
  const input = tokenCount(report.input_tokens);
  const reportedOutput = tokenCount(report.output_tokens);
  const output = reportedOutput === 0 && produced.audioBytes > 0 ? null : reportedOutput;
  return {
    input: input ?? produced.promptTokens,
    output: output ?? estimatedOutputTokens(produced.audioBytes, produced.format),
    estimated: input === null || output === null,
  };
}

/** Audio output tokens of `bytes` of audio in `format`, at the rates above, rounded up. */
export function estimatedOutputTokens(bytes: number, format: unknown): number {
  const rate = format === 'pcm' || format === 'wav' ? PCM_BYTES_PER_SECOND : COMPRESSED_BYTES_PER_SECOND;
  return Math.ceil((bytes * AUDIO_OUTPUT_TOKENS_PER_SECOND) / rate);
}

/** The cost in micro-credits of a token-priced speech call that used `tokens`. */
export function speechTokensCost(model: CatalogueModel, tokens: SpeechTokens): number {
  return costMicros(model.pricing, { requests: 1, prompt: tokens.input, audioOut: tokens.output });
}
