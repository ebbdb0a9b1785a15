import type { Migration } from 'kysely';
import { platformMigrations } from './platform/secrets.ts';
import { accountsMigrations } from './accounts/tables.ts';
import { oauthMigrations } from './oauth/tables.ts';
import { keysMigrations } from './keys/tables.ts';
import { billingMigrations } from './billing/tables.ts';
import { billingFunctionMigrations } from './billing/pg-functions.ts';
import { modelsMigrations } from './models/tables.ts';
import { usageMigrations } from './usage/tables.ts';
import { responsesMigrations } from './protocols/openai-responses/tables.ts';
import { predictionsMigrations } from './predictions/tables.ts';
import { webhooksMigrations } from './webhooks/tables.ts';
import { topupsMigrations } from './topups/tables.ts';
import { eventsMigrations } from './events/tables.ts';

/** Each feature's migrations (features without tables have none); they run before any feature is built. */
const FEATURE_MIGRATIONS: Array<Record<string, Migration>> = [
  accountsMigrations,
  oauthMigrations,
  keysMigrations,
  billingMigrations,
  billingFunctionMigrations,
  modelsMigrations,
  usageMigrations,
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
