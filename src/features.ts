import type { Migration } from 'kysely';
import { platformMigrations } from './platform/secrets.ts';
import { accountsMigrations } from './accounts/migrations.ts';
import { oauthMigrations } from './oauth/migrations.ts';
import { keysMigrations } from './keys/migrations.ts';
import { billingMigrations, usageRecordsMigrations } from './billing/migrations.ts';
import { billingFunctionMigrations } from './billing/pg-functions.ts';
import { modelsMigrations } from './models/migrations.ts';
import { responsesMigrations } from './protocols/openai-responses/migrations.ts';
import { predictionsMigrations } from './predictions/migrations.ts';
import { webhooksMigrations } from './webhooks/migrations.ts';
import { topupsMigrations } from './topups/migrations.ts';
import { eventsMigrations } from './events/migrations.ts';

/** Each feature's migrations (features without tables have none); they run before any feature is built. */
const FEATURE_MIGRATIONS: Array<Record<string, Migration>> = [
  accountsMigrations,
  oauthMigrations,
  keysMigrations,
  billingMigrations,
  usageRecordsMigrations,
  billingFunctionMigrations,
  modelsMigrations,
  responsesMigrations,
  predictionsMigrations,
  webhooksMigrations,
  topupsMigrations,
  eventsMigrations,
];

/** The migrations of the platform and every feature; names sort into the order they apply. */
export function allMigrations(): Record<string, Migration> {
  const merged: Record<string, Migration> = { ...platformMigrations };
  for (const migrations of FEATURE_MIGRATIONS) {
    for (const [name, migration] of Object.entries(migrations)) {
      if (merged[name]) throw new Error(`two migrations are named ${name}`);
      merged[name] = migration;
    }
  }
  return merged;
}
