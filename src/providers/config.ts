import Type, { type Static } from 'typebox';
import { TIMER_MAX_MS } from '../platform/config.ts';

/** The default of `UPSTREAM_IDLE_TIMEOUT_MS`, also the idle timeout of an adapter built without a configuration. */
export const DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS = 600_000;

/** The least an upstream deadline may be (`UPSTREAM_TIMEOUT_MS`, `UPSTREAM_IDLE_TIMEOUT_MS`, a model's `answerTimeoutMs`): less could reach no provider. */
export const MIN_UPSTREAM_TIMEOUT_MS = 100;

/** `http(s)://host[/path]`: the form of every upstream's base URL (the four settings, the extra providers'). */
const UPSTREAM_BASE_URL = '^https?://[^/\\s]+(/\\S*)?$';

/**
 * An upstream's base URL: `http(s)://host[/path]`. Checked at start-up because a value without its scheme (a
 * host name copied from a provider's page) was accepted and then failed every call to that provider.
 */
function upstreamBaseUrl(defaultUrl: string, what: string) {
  return Type.String({
    pattern: UPSTREAM_BASE_URL,
    default: defaultUrl,
    description: `${what}: an http(s) URL, such as \`${defaultUrl}\`.`,
  });
}

/** The upstream providers' settings: their keys and addresses, the extra OpenAI-compatible upstreams (config file only) and the upstream timeouts. Part of the one configuration schema (src/config.ts). */
export const ProvidersConfigSection = Type.Object({
  OPENAI_API_KEY: Type.Optional(Type.String({ description: 'OpenAI API key.' })),
  OPENAI_BASE_URL: upstreamBaseUrl('https://api.openai.com/v1', 'OpenAI-compatible base URL'),
  OPENROUTER_API_KEY: Type.Optional(Type.String({ description: 'OpenRouter API key.' })),
  OPENROUTER_BASE_URL: upstreamBaseUrl('https://openrouter.ai/api/v1', 'OpenRouter base URL'),
  ANTHROPIC_API_KEY: Type.Optional(Type.String({ description: 'Anthropic API key.' })),
  ANTHROPIC_BASE_URL: upstreamBaseUrl('https://api.anthropic.com', 'Anthropic base URL (without `/v1`)'),
  REPLICATE_API_TOKEN: Type.Optional(Type.String({ description: 'Replicate API token.' })),
  REPLICATE_BASE_URL: upstreamBaseUrl('https://api.replicate.com/v1', 'Replicate base URL'),
  UPSTREAM_TIMEOUT_MS: Type.Integer({
    minimum: MIN_UPSTREAM_TIMEOUT_MS,
    maximum: TIMER_MAX_MS,
    default: 600000,
    description:
      "Time allowed for an upstream answer to begin: a non-streaming answer's whole body, a stream's first output (10 minutes, what the official OpenAI and Anthropic SDKs wait: a reasoning model may think that long). Past it: 504, or the next fallback. A catalogue model's `answerTimeoutMs` replaces it for that model.",
  }),
  UPSTREAM_IDLE_TIMEOUT_MS: Type.Integer({
    minimum: MIN_UPSTREAM_TIMEOUT_MS,
    maximum: TIMER_MAX_MS,
    default: DEFAULT_UPSTREAM_IDLE_TIMEOUT_MS,
    description:
      'Longest silence allowed while an upstream answer is read: between two chunks of a stream (a reasoning model may be silent for minutes), or between its headers and its first bytes. Past it a stream that began ends with an error frame and is charged for what it produced.',
  }),
  providers: Type.Array(
    Type.Object({
      name: Type.String({
        pattern: '^[a-z0-9][a-z0-9-]*$',
        description: 'the provider name catalogue models refer to: lower-case letters, digits and dashes',
      }),
      baseUrl: Type.String({
        pattern: UPSTREAM_BASE_URL,
        description: "the upstream's OpenAI-compatible base URL, an http(s) URL such as `http://127.0.0.1:8000/v1`",
      }),
      apiKey: Type.Optional(Type.String({ description: "the upstream's API key (a string)" })),
    }),
    { default: [], description: 'Extra OpenAI-compatible upstreams (config file only).' },
  ),
});

/** This section, parsed. */
export type ProvidersConfig = Static<typeof ProvidersConfigSection>;
