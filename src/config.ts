import Type, { type Static } from 'typebox';
import { parseConfig, PlatformConfigSection } from './platform/config.ts';
import { OpsConfigSection } from './ops/config.ts';
import { AccountsConfigSection } from './accounts/config.ts';
import { OAuthConfigSection } from './oauth/config.ts';
import { BillingConfigSection } from './billing/config.ts';
import { ProvidersConfigSection } from './providers/config.ts';
import { ModelsConfigSection } from './models/config.ts';
import { GatewayConfigSection } from './gateway/config.ts';
import { ResponsesConfigSection } from './protocols/openai-responses/config.ts';
import { MessagesConfigSection } from './protocols/anthropic-messages/config.ts';
import { PredictionsConfigSection } from './predictions/config.ts';
import { WebhooksConfigSection } from './webhooks/config.ts';
import { TopupsConfigSection } from './topups/config.ts';
import { EventsConfigSection } from './events/config.ts';

export { ConfigError, PROJECT_DATA_DIR } from './platform/config.ts';

/**
 * Every setting Tollgate reads, in one schema composed of the platform's section and each feature's: the
 * environment and the optional JSON file named by `TOLLGATE_CONFIG` are parsed against it once, at start-up.
 * The README's configuration table is checked against it.
 */
export const ConfigSchema = Type.Object({
  ...PlatformConfigSection.properties,
  ...OpsConfigSection.properties,
  ...AccountsConfigSection.properties,
  ...OAuthConfigSection.properties,
  ...BillingConfigSection.properties,
  ...ProvidersConfigSection.properties,
  ...ModelsConfigSection.properties,
  ...GatewayConfigSection.properties,
  ...ResponsesConfigSection.properties,
  ...MessagesConfigSection.properties,
  ...PredictionsConfigSection.properties,
  ...WebhooksConfigSection.properties,
  ...TopupsConfigSection.properties,
  ...EventsConfigSection.properties,
});

/** The validated configuration (every section). */
export type Config = Static<typeof ConfigSchema> & { PUBLIC_BASE_URL: string };

/**
 * Parses the configuration from `env` (and the JSON file `env.TOLLGATE_CONFIG` names). Environment variables
 * win over the file. `overrides` are applied last; tests use them.
 */
export function loadConfig(
  env: Record<string, string | undefined> = process.env,
  overrides: Partial<Config> = {},
): Config {
  return parseConfig(ConfigSchema, env, overrides);
}
