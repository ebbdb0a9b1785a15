import type { Kysely } from 'kysely';
import type { Db } from '../platform/db/connect.ts';
import { ownTables } from '../platform/db/own-tables.ts';
import type { InstanceSecretsTable } from '../platform/secrets.ts';
import type { AccountsTables } from '../accounts/schema.ts';
import type { OauthTables } from '../oauth/schema.ts';
import type { KeysTables } from '../keys/schema.ts';
import type { BillingTables } from '../billing/schema.ts';
import type { ModelsTables } from '../models/schema.ts';
import type { PredictionsTables } from '../predictions/schema.ts';
import type { WebhooksTables } from '../webhooks/schema.ts';
import type { TopupsTables } from '../topups/schema.ts';
import type { EventsTables } from '../events/schema.ts';
import type { ResponsesTables } from '../protocols/openai-responses/schema.ts';

/**
 * Every feature's tables at once. Only tooling (tests, src/testing, src/chaos, bench) sees the whole database:
 * a feature sees its own tables only (its `schema.ts`). Add a feature's tables with `&`.
 */
export type AllTables = { instance_secrets: InstanceSecretsTable } & AccountsTables &
  OauthTables &
  KeysTables &
  BillingTables &
  ModelsTables &
  PredictionsTables &
  WebhooksTables &
  TopupsTables &
  EventsTables &
  ResponsesTables;

/** The whole database, for tooling that checks what several features wrote (tests, chaos runs, benchmarks). */
export function allTables(db: Db): Kysely<AllTables> {
  return ownTables<AllTables>(db);
}
