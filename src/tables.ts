import type { InstanceSecretsTable } from './platform/secrets.ts';
import type { AccountsTables } from './accounts/tables.ts';
import type { OauthTables } from './oauth/tables.ts';
import type { KeysTables } from './keys/tables.ts';
import type { BillingTables } from './billing/tables.ts';
import type { ModelsTables } from './models/tables.ts';
import type { UsageTables } from './usage/tables.ts';
import type { PredictionsTables } from './predictions/tables.ts';
import type { WebhooksTables } from './webhooks/tables.ts';
import type { TopupsTables } from './topups/tables.ts';
import type { EventsTables } from './events/tables.ts';
import type { ResponsesTables } from './protocols/openai-responses/tables.ts';

/**
 * The database as Kysely sees it: each feature declares its own tables in its folder and they are
 * composed here. Add a feature's tables with `&`.
 */
export type Tables = { instance_secrets: InstanceSecretsTable } & AccountsTables &
  OauthTables &
  KeysTables &
  BillingTables &
  ModelsTables &
  UsageTables &
  PredictionsTables &
  WebhooksTables &
  TopupsTables &
  EventsTables &
  ResponsesTables;
