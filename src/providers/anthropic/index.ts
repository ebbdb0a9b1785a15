import type { PlatformConfig } from '../../platform/config.ts';
import type { ProvidersConfig } from '../config.ts';

type Config = PlatformConfig & ProvidersConfig;
import { joinUrl, readJson, readSse, upstreamDispatcher, upstreamFetch } from '../http.ts';
import type { Dispatcher } from 'undici';
import { anthropicEvents, fromAnthropicResult, toAnthropicMessages } from './wire.ts';
import { UpstreamError, type CallOptions, type ProviderAdapter, type UpstreamModel } from '../types.ts';

/** The Anthropic API version the translation follows. */
export const ANTHROPIC_VERSION = '2023-06-01';

/** The `anthropic` provider the configuration names (`ANTHROPIC_BASE_URL`, `ANTHROPIC_API_KEY`). */
export function anthropicProvider(config: Config): ProviderAdapter {
  return anthropicAdapter({
    baseUrl: config.ANTHROPIC_BASE_URL,
    apiKey: config.ANTHROPIC_API_KEY,
    dispatcher: upstreamDispatcher(config),
  });
}

/**
 * Anthropic's Messages API. It speaks Anthropic Messages natively (a Messages call's body and SSE events are
 * relayed as sent, model and `max_tokens` replaced); a call from another protocol is built from its
 * canonical fields and answered in canonical events (`wire.ts`). A Messages body's tokens are counted by
 * Anthropic's `count_tokens` (free; what the gateway's `count_tokens` answers for an Anthropic model).
 */
export function anthropicAdapter(options: {
  name?: string;
  baseUrl: string;
  apiKey?: string;
  /** The connection pool with the configured timeouts ({@link upstreamDispatcher}); unset: the default one. */
  dispatcher?: Dispatcher;
}): ProviderAdapter {
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'anthropic-version': ANTHROPIC_VERSION,
    ...(options.apiKey ? { 'x-api-key': options.apiKey } : {}),
  };
  const post = (body: unknown, call: CallOptions, path = '/v1/messages') =>
    upstreamFetch(joinUrl(options.baseUrl, path), {
      method: 'POST',
      headers,
      body: JSON.stringify(body),
      signal: call.signal,
      dispatcher: options.dispatcher,
    });

  return {
    name: options.name ?? 'anthropic',
    speaks: ['anthropic-messages'],

    async complete(canonical, call) {
      const message = await readJson(await post(toAnthropicMessages(canonical, false), call));
      return fromAnthropicResult(message, canonical.native?.protocol === 'anthropic-messages');
    },

    async stream(canonical, call) {
      const response = await post(toAnthropicMessages(canonical, true), call);
      return anthropicEvents(readSse(response.body, call.signal), canonical.native?.protocol === 'anthropic-messages');
    },

    async countTokens(body, call) {
      const counted = await readJson(await post(body, call, '/v1/messages/count_tokens'));
      const tokens = counted?.input_tokens;
      if (!Number.isSafeInteger(tokens) || tokens < 0)
        throw new UpstreamError(502, 'The upstream provider answered a count without input_tokens.');
      return tokens;
    },

    async listModels(call): Promise<UpstreamModel[]> {
      const response = await upstreamFetch(joinUrl(options.baseUrl, '/v1/models?limit=1000'), {
        headers,
        signal: call.signal,
        dispatcher: options.dispatcher,
      });
      const list = await readJson(response);
      return (Array.isArray(list?.data) ? list.data : []).map((m: any) => ({
        id: m.id,
        name: m.display_name,
        inputModalities: ['text', 'image'],
        outputModalities: ['text'],
      }));
    },
  };
}
