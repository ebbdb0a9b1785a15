import Type, { type Static } from 'typebox';

/** The upstream providers' settings: their keys and addresses, the extra OpenAI-compatible upstreams (config file only) and the upstream timeout. Part of the one configuration schema (src/config.ts). */
export const ProvidersConfigSection = Type.Object({
  OPENAI_API_KEY: Type.Optional(Type.String({ description: 'OpenAI API key.' })),
  OPENAI_BASE_URL: Type.String({ default: 'https://api.openai.com/v1', description: 'OpenAI-compatible base URL.' }),
  OPENROUTER_API_KEY: Type.Optional(Type.String({ description: 'OpenRouter API key.' })),
  OPENROUTER_BASE_URL: Type.String({ default: 'https://openrouter.ai/api/v1', description: 'OpenRouter base URL.' }),
  ANTHROPIC_API_KEY: Type.Optional(Type.String({ description: 'Anthropic API key.' })),
  ANTHROPIC_BASE_URL: Type.String({
    default: 'https://api.anthropic.com',
    description: 'Anthropic base URL (without `/v1`).',
  }),
  REPLICATE_API_TOKEN: Type.Optional(Type.String({ description: 'Replicate API token.' })),
  REPLICATE_BASE_URL: Type.String({ default: 'https://api.replicate.com/v1', description: 'Replicate base URL.' }),
  UPSTREAM_TIMEOUT_MS: Type.Integer({
    minimum: 100,
    default: 120000,
    description: 'Time allowed for an upstream response to begin.',
  }),
  providers: Type.Array(
    Type.Object({
      name: Type.String({ pattern: '^[a-z0-9][a-z0-9-]*$' }),
      baseUrl: Type.String({ pattern: '^https?://' }),
      apiKey: Type.Optional(Type.String()),
    }),
    { default: [], description: 'Extra OpenAI-compatible upstreams (config file only).' },
  ),
});

/** This section, parsed. */
export type ProvidersConfig = Static<typeof ProvidersConfigSection>;
