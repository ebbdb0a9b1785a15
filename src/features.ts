import type { Migration } from 'kysely';
import type { Feature } from './platform/feature.ts';
import { platformMigrations } from './platform/secrets.ts';
import { opsFeature } from './ops/feature.ts';
import { accountsFeature } from './accounts/feature.ts';
import { oauthFeature } from './oauth/feature.ts';
import { keysFeature } from './keys/feature.ts';
import { billingFeature } from './billing/feature.ts';
import { providersFeature } from './providers/feature.ts';
import { modelsFeature } from './models/feature.ts';
import { usageFeature } from './usage/feature.ts';
import { gatewayFeature } from './gateway/feature.ts';
import { openAiChatFeature } from './protocols/openai-chat/feature.ts';
import { responsesFeature } from './protocols/openai-responses/feature.ts';
import { anthropicMessagesFeature } from './protocols/anthropic-messages/feature.ts';
import { adminFeature } from './admin/feature.ts';
import { predictionsFeature } from './predictions/feature.ts';
import { webhooksFeature } from './webhooks/feature.ts';
import { topupsFeature } from './topups/feature.ts';
import { eventsFeature } from './events/feature.ts';
import { webFeature } from './web/feature.ts';

/** Every feature, in registration order (a feature may use the services of those before it). */
export function allFeatures(): Feature[] {
  return [
    opsFeature,
    accountsFeature,
    oauthFeature,
    keysFeature,
    billingFeature,
    providersFeature,
    modelsFeature,
    usageFeature,
    gatewayFeature,
    openAiChatFeature,
    responsesFeature,
    anthropicMessagesFeature,
    adminFeature,
    predictionsFeature,
    webhooksFeature,
    topupsFeature,
    eventsFeature,
    webFeature,
  ];
}

/** The migrations of the platform and every feature; names sort into the order they apply. */
export function allMigrations(): Record<string, Migration> {
  const merged: Record<string, Migration> = { ...platformMigrations };
  for (const feature of allFeatures()) {
    for (const [name, migration] of Object.entries(feature.migrations ?? {})) {
      if (merged[name]) throw new Error(`two migrations are named ${name}`);
      merged[name] = migration;
    }
  }
  return merged;
}
