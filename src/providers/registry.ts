import type { PlatformConfig } from '../platform/config.ts';
import type { ProvidersConfig } from './config.ts';

type Config = PlatformConfig & ProvidersConfig;
import { anthropicProvider } from './anthropic/index.ts';
import { echoAdapter } from './echo/index.ts';
import { openAiCompatibleProviders } from './openai-compatible/index.ts';
import type { ProviderAdapter } from './types.ts';

/** Built-in provider names; `config.providers` may add any other OpenAI-compatible one. */
export const BUILT_IN_PROVIDERS = ['openai', 'openrouter', 'anthropic', 'replicate', 'echo'] as const;

/** The adapters by provider name, built from the configuration. */
export interface ProviderRegistry {
  get(name: string): ProviderAdapter | undefined;
  /** Every name a catalogue entry may use (configured or not). */
  knownNames(): string[];
  /** Providers with credentials or an explicit entry, whose `/models` lists the sync imports. */
  syncable(): ProviderAdapter[];
}

/**
 * Builds one adapter per provider. Each built-in OpenAI-compatible or Anthropic provider exists even without
 * an API key (a local vLLM or Ollama needs none), so a base URL alone is enough to use it; Replicate is
 * registered by the predictions feature, not here.
 */
export function createProviderRegistry(config: Config): ProviderRegistry {
  const adapters = new Map<string, ProviderAdapter>();
  // Each provider folder builds its adapters from the configuration; a configured name replaces a built-in one.
  for (const adapter of [echoAdapter(), anthropicProvider(config), ...openAiCompatibleProviders(config)])
    adapters.set(adapter.name, adapter);
  const syncable = [
    ...(config.OPENAI_API_KEY ? ['openai'] : []),
    ...(config.OPENROUTER_API_KEY ? ['openrouter'] : []),
    ...(config.ANTHROPIC_API_KEY ? ['anthropic'] : []),
    ...config.providers.map((p) => p.name),
  ];
  return {
    get: (name) => adapters.get(name),
    knownNames: () => [...new Set([...BUILT_IN_PROVIDERS, ...adapters.keys()])],
    syncable: () => syncable.map((name) => adapters.get(name)!),
  };
}
