import Type, { type Static } from 'typebox';

/** When a key's spending limit resets (`weekly`: Monday 00:00 UTC; `total`: never). */
export const KeyLimitPeriodSchema = Type.Enum(['daily', 'weekly', 'monthly', 'total'] as const);

const IsoDate = Type.String({ format: 'date-time' });

/** What a key's limit has used in its current period (credits). */
function KeyLimitUsageSchema() {
  return Type.Object({
    spent: Type.Number({ description: 'Credits charged in the current period, net of refunds' }),
    reserved: Type.Number({ description: "Credits held by the key's calls still running" }),
    remaining: Type.Number({ description: 'What the limit leaves: limit - spent - reserved, never below 0' }),
    resetsAt: Type.Union([IsoDate, Type.Null()], {
      description:
        'When the period ends (UTC day, week from Monday, or month); null for a total limit, which never resets',
    }),
  });
}

/** An API key as listed (contract §2.1), with its optional spending limit, expiry and models. */
export const ListedApiKeySchema = Type.Object({
  id: Type.String({ examples: ['key_3kT9xQ2mN7pR4sV8wY1z'] }),
  name: Type.String(),
  key: Type.String({ pattern: '^ak_', description: 'The key value itself' }),
  permissions: Type.Array(Type.String()),
  lastUsed: Type.Union([IsoDate, Type.Null()], {
    description: 'Last use, recorded at most about once a minute; null when never used',
  }),
  createdAt: IsoDate,
  limit: Type.Union([Type.Number(), Type.Null()], { description: 'Spending limit in credits; null when none' }),
  limitPeriod: Type.Union([KeyLimitPeriodSchema, Type.Null()], {
    description: 'When the limit resets; null when there is no limit',
  }),
  limitUsage: Type.Union([KeyLimitUsageSchema(), Type.Null()], {
    description: "What the limit's current period has spent and holds; null when there is no limit",
  }),
  expiresAt: Type.Union([IsoDate, Type.Null()], {
    description:
      'When the key stops authenticating (401 from then on); null when it never expires. An expired key stays listed until revoked',
  }),
  models: Type.Union([Type.Array(Type.String()), Type.Null()], {
    description:
      'The model ids and vendor wildcards (`<vendor>/*`) the key may call, as created; null when it may call every model',
  }),
});

/** An API key as listed. */
export type ListedApiKey = Static<typeof ListedApiKeySchema>;

/** An API key as its creation returns it (contract §2.1: no `lastUsed`). */
export const CreatedApiKeySchema = Type.Object({
  id: Type.String(),
  name: Type.String(),
  key: Type.String({ pattern: '^ak_' }),
  permissions: Type.Array(Type.String()),
  createdAt: IsoDate,
});

/** An API key as its creation returns it. */
export type CreatedApiKey = Static<typeof CreatedApiKeySchema>;

/** `GET /api/user/api-keys` (contract §4.1). */
export const ApiKeyListSchema = Type.Object({ success: Type.Literal(true), apiKeys: Type.Array(ListedApiKeySchema) });

/** The caller's API keys. */
export type ApiKeyList = Static<typeof ApiKeyListSchema>;

/** `POST /api/user/api-keys` (contract §4.2). */
export const ApiKeyCreatedSchema = Type.Object({ success: Type.Literal(true), apiKey: CreatedApiKeySchema });

/** The answer to a key's creation. */
export type ApiKeyCreated = Static<typeof ApiKeyCreatedSchema>;

/** `PATCH /api/user/api-keys/:id`: the key as the list shows it after the change. */
export const ApiKeyUpdatedSchema = Type.Object({ success: Type.Literal(true), apiKey: ListedApiKeySchema });

/** The answer to a key's change. */
export type ApiKeyUpdated = Static<typeof ApiKeyUpdatedSchema>;
