import Type, { type Static } from 'typebox';

/** One spending limit of an authorized app, in credits, as it stands in its current period. */
export const AppLimitSchema = Type.Object({
  limit: Type.Number({ description: 'The limit in credits.' }),
  spent: Type.Number({ description: 'Credits captured in the current period.' }),
  reserved: Type.Number({ description: 'Credits held by calls in flight placed in the current period.' }),
  resetsAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()], {
    description: 'End of the current period; null for total.',
  }),
});

/** One spending limit of an authorized app; `resetsAt` is null for a `total` limit. */
export type AppLimit = Static<typeof AppLimitSchema>;

const NoLimitOr = Type.Union([AppLimitSchema, Type.Null()]);

/** An app the user authorized, with its spending limits (null: no limit for that period). */
export const AuthorizedAppSchema = Type.Object({
  clientId: Type.String({ examples: ['app_3kT9xQ2mN7pR4sV8wY1z'] }),
  name: Type.String(),
  scopes: Type.Array(Type.String()),
  authorizedAt: Type.String({ format: 'date-time' }),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  limits: Type.Object({ daily: NoLimitOr, weekly: NoLimitOr, monthly: NoLimitOr, total: NoLimitOr }),
});

/** An app the user authorized (one entry of `GET /api/user/authorized-apps`). */
export type AuthorizedApp = Static<typeof AuthorizedAppSchema>;

/** `GET /api/user/authorized-apps`; an app's own credential sees only its own entry. */
export const AuthorizedAppsSchema = Type.Object({ apps: Type.Array(AuthorizedAppSchema) });

/** The user's authorized apps. */
export type AuthorizedApps = Static<typeof AuthorizedAppsSchema>;
