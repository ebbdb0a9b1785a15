import Type, { type Static } from 'typebox';

const Totals = {
  requests: Type.Integer(),
  promptTokens: Type.Integer(),
  completionTokens: Type.Integer(),
  cacheReadTokens: Type.Integer({
    description: 'Of promptTokens: read from the provider’s prompt cache, charged at the model’s cacheRead price.',
  }),
  cacheWriteTokens: Type.Integer({
    description:
      'Of promptTokens: written to the prompt cache (any lifetime), charged at cacheWrite (or cacheWrite1h).',
  }),
  cost: Type.Number({ description: 'Credits charged.' }),
};

/** `GET /api/usage`: one user's calls over the last `days` UTC days (today included). */
export const UsageReportSchema = Type.Object({
  from: Type.String({ format: 'date-time', description: 'Start of the first day counted (00:00 UTC).' }),
  to: Type.String({ format: 'date-time' }),
  totals: Type.Object(Totals),
  byModel: Type.Array(Type.Object({ model: Type.String(), ...Totals })),
  byApp: Type.Array(
    Type.Object({
      appId: Type.Union([Type.String(), Type.Null()], {
        description: 'null: calls made with the user’s own keys or dashboard',
      }),
      name: Type.String(),
      ...Totals,
    }),
  ),
  byKey: Type.Array(
    Type.Object({
      keyId: Type.String(),
      name: Type.String({ description: 'The key’s name (also for a revoked key)' }),
      ...Totals,
    }),
    {
      description: 'Calls made with each API key (calls made with an OAuth token or the dashboard are in no row).',
    },
  ),
  byDay: Type.Array(
    Type.Object({
      date: Type.String({ description: 'YYYY-MM-DD (UTC)' }),
      requests: Type.Integer(),
      cost: Type.Number(),
    }),
  ),
});

/** One user's usage report, by model, by app, by API key and by day. */
export type UsageReport = Static<typeof UsageReportSchema>;

/** Totals of one group of usage records (calls, tokens, credits charged). */
export type UsageTotals = UsageReport['totals'];
