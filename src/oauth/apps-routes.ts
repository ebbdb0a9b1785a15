import Type from 'typebox';
import type { FastifyRequest } from 'fastify';
import type { App } from '../platform/http/server.ts';
import { principalOf } from '../platform/http/server.ts';
import type { OAuthDeps } from './deps.ts';
import { errors } from '../platform/errors.ts';
import type { Principal } from '../platform/http/principal.ts';
import { SCOPES } from './scopes.ts';
import {
  deleteClient,
  listOwnedClients,
  MAX_APPS_PER_OWNER,
  registerClient,
  replaceClientJwks,
  type NewClient,
} from './clients.ts';
import { CLIENT_ASSERTION_ALGS, MAX_CLIENT_KEYS } from './client-keys.ts';
import { revokeAuthorization } from './authorizations.ts';
import type { AccessTokenResolver } from './bearer.ts';

/** The bus channel that says the set of registered apps (and so of their redirect origins) changed. */
export const CLIENTS_CHANGED_CHANNEL = 'oauth:clients-changed';

const NewApp = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100, examples: ['My chat app'] }),
  redirectUris: Type.Array(Type.String({ minLength: 1, maxLength: 2000 }), {
    minItems: 1,
    maxItems: 20,
    description:
      'Exact redirect URIs: https, or http on a loopback address. Matched character for character, port and trailing slash included; with `OAUTH_LOOPBACK_ANY_PORT` on, an http one on 127.0.0.1 or [::1] is matched on any port (RFC 8252 §7.3).',
    examples: [['https://app.example.com/callback']],
  }),
  scopes: Type.Array(Type.Union(SCOPES.map((scope) => Type.Literal(scope))), {
    minItems: 1,
    maxItems: SCOPES.length,
    description: 'Scopes the app may ask for.',
  }),
  type: Type.Union([Type.Literal('public'), Type.Literal('confidential')], {
    description:
      '`public` (no secret, PKCE only: browser and native apps) or `confidential` (a server holding a secret, or a key pair with `jwks`).',
  }),
  jwks: Type.Optional(JwkSetInput()),
});

/**
 * A JWK Set as sent: its shape only. What each key may hold (public members only, the accepted algorithms
 * and sizes) is checked by client-keys.ts, whose 400s name the key and member refused.
 */
function JwkSetInput() {
  return Type.Object(
    {
      keys: Type.Array(Type.Object({ kty: Type.String({ maxLength: 10 }) }, { additionalProperties: true }), {
        minItems: 1,
        maxItems: MAX_CLIENT_KEYS,
      }),
    },
    {
      description: `Confidential apps only: the public keys (a JWK Set) the app signs its client assertions with (\`private_key_jwt\`, RFC 7523) instead of holding a secret. RSA (2048 to 8192 bits), EC P-256 or OKP Ed25519; algorithms ${CLIENT_ASSERTION_ALGS.join(', ')}; at most ${MAX_CLIENT_KEYS} keys, each with its own \`kid\` when there are several. A private member (\`d\`, \`p\`, \`q\`…) or a symmetric key (\`kty: oct\`) is a 400. Such an app gets no \`clientSecret\`.`,
      examples: [{ keys: [{ kty: 'EC', crv: 'P-256', kid: 'key-1', x: '…', y: '…' }] }],
    },
  );
}

const AuthMethod = Type.Union(
  [Type.Literal('none'), Type.Literal('client_secret_basic'), Type.Literal('private_key_jwt')],
  {
    description:
      'How the app authenticates at the token, revocation and introspection endpoints: `none` (public, PKCE only), `client_secret_basic` (its secret, with HTTP Basic or `client_secret` in the body) or `private_key_jwt` (a JWT signed with a key of its `jwks`). Only that method is accepted from it.',
  },
);

/** A stored JWK Set: public members only. */
const PublicJwkSet = Type.Object({
  keys: Type.Array(Type.Record(Type.String(), Type.String())),
});

const Registered = Type.Object({
  clientId: Type.String({ examples: ['app_3kT9xQ2mN7pR4sV8wY1z'] }),
  clientSecret: Type.Optional(
    Type.String({
      description: 'Confidential apps registered without `jwks` only. Shown once: only its hash is kept.',
    }),
  ),
  tokenEndpointAuthMethod: AuthMethod,
});

const AppView = Type.Object({
  clientId: Type.String(),
  name: Type.String(),
  type: Type.Union([Type.Literal('public'), Type.Literal('confidential')]),
  tokenEndpointAuthMethod: AuthMethod,
  jwks: Type.Optional(PublicJwkSet),
  redirectUris: Type.Array(Type.String()),
  scopes: Type.Array(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
});

/** The dashboard's own routes: an app's token or an API key may not manage apps. */
function dashboardOnly(request: FastifyRequest): Principal {
  const principal = principalOf(request);
  if (principal.kind !== 'session') throw errors.forbidden('Only the dashboard (a signed-in session) can manage apps.');
  return principal;
}

/**
 * Registering apps (operator API and dashboard) and revoking a user's authorization of an app.
 * `GET`/`PATCH /api/user/authorized-apps` (limits and spend) belong to billing.
 */
export function registerAppRoutes(app: App, ctx: OAuthDeps, tokens: AccessTokenResolver): void {
  async function register(input: NewClient, ownerUserId: string | null) {
    const owner = ownerUserId === null ? null : { userId: ownerUserId, dialect: ctx.dialect };
    const registered = await registerClient(ctx.db, ctx.clock, input, owner);
    // The CORS allow-list (src/ops/cors.ts) holds the origins of every redirect URI.
    ctx.bus.publish(CLIENTS_CHANGED_CHANNEL, registered.clientId);
    return registered;
  }

  app.post(
    '/api/admin/apps',
    {
      schema: {
        tags: ['admin'],
        summary: 'Register an OAuth app',
        security: [{ admin: [] }],
        body: NewApp,
        response: { 201: Registered },
      },
      config: { admin: true },
    },
    async (request, reply) => reply.code(201).send(await register(request.body as NewClient, null)),
  );

  /** Deletes an app (the operator's, or `ownerUserId`'s own only): its authorizations, tokens and keys end. */
  async function remove(clientId: string, ownerUserId?: string) {
    const keys = ctx.keys;
    const deleted = await deleteClient(
      ctx.db,
      ctx.dialect,
      clientId,
      (trx) => keys.revokeAppKeys({ clientId }, trx),
      ownerUserId,
    );
    if (!deleted) throw errors.notFound('App');
    for (const keyId of deleted.keyIds) keys.forget(keyId);
    for (const userId of deleted.userIds) tokens.revoked({ app: { userId, clientId } });
    ctx.bus.publish(CLIENTS_CHANGED_CHANNEL, clientId);
    return { success: true as const };
  }

  /** Replaces a `private_key_jwt` app's keys (the operator's, or `ownerUserId`'s own only). */
  async function rotate(clientId: string, jwks: unknown, ownerUserId?: string) {
    const replaced = await replaceClientJwks(ctx.db, clientId, jwks, ownerUserId);
    if (!replaced) throw errors.notFound('App');
    return { clientId, ...replaced };
  }
  const rotation = {
    description:
      "Replaces the public keys of an app that authenticates with `private_key_jwt`; its next client assertion is checked against the new set. To rotate without downtime, send the old and the new key together, move the app's server to the new key, then send the new key alone. An app with a secret (or a public app) is a 400: the method is chosen at registration.",
    params: Type.Object({ clientId: Type.String({ maxLength: 100 }) }),
    body: Type.Object({ jwks: JwkSetInput() }),
    response: { 200: Type.Object({ clientId: Type.String(), jwks: PublicJwkSet }) },
  };

  app.put(
    '/api/admin/apps/:clientId/jwks',
    {
      schema: {
        tags: ['admin'],
        summary: "Replace an OAuth app's public keys",
        security: [{ admin: [] }],
        ...rotation,
      },
      config: { admin: true },
    },
    async (request) =>
      rotate((request.params as { clientId: string }).clientId, (request.body as { jwks: unknown }).jwks),
  );

  app.put(
    '/api/user/apps/:clientId/jwks',
    {
      schema: {
        tags: ['user'],
        summary: 'Replace the public keys of an OAuth app the signed-in user registered (dashboard)',
        ...rotation,
        description: `${rotation.description} Another user's app, or the operator's, is a 404.`,
      },
      config: { auth: [] },
    },
    async (request) => {
      const { userId } = dashboardOnly(request);
      return rotate(
        (request.params as { clientId: string }).clientId,
        (request.body as { jwks: unknown }).jwks,
        userId,
      );
    },
  );

  app.delete(
    '/api/admin/apps/:clientId',
    {
      schema: {
        tags: ['admin'],
        summary: 'Delete an OAuth app',
        description:
          "Every user's authorization of the app, every token it holds and every API key it created stop working at once, in every instance.",
        security: [{ admin: [] }],
        params: Type.Object({ clientId: Type.String({ maxLength: 100 }) }),
        response: { 200: Type.Object({ success: Type.Literal(true) }) },
      },
      config: { admin: true },
    },
    async (request) => remove((request.params as { clientId: string }).clientId),
  );

  app.post(
    '/api/user/apps',
    {
      schema: {
        tags: ['user'],
        summary: 'Register an OAuth app owned by the signed-in user (dashboard)',
        description: `At most ${MAX_APPS_PER_OWNER} per user: beyond, a 400 until one is deleted.`,
        body: NewApp,
        response: { 201: Registered },
      },
      config: { auth: [] },
    },
    async (request, reply) => {
      const principal = dashboardOnly(request);
      return reply.code(201).send(await register(request.body as NewClient, principal.userId));
    },
  );

  app.delete(
    '/api/user/apps/:clientId',
    {
      schema: {
        tags: ['user'],
        summary: 'Delete an OAuth app the signed-in user registered (dashboard)',
        description:
          "Every user's authorization of the app, every token it holds and every API key it created stop working at once. Another user's app, or the operator's, is a 404.",
        params: Type.Object({ clientId: Type.String({ maxLength: 100 }) }),
        response: { 200: Type.Object({ success: Type.Literal(true) }) },
      },
      config: { auth: [] },
    },
    async (request) => remove((request.params as { clientId: string }).clientId, dashboardOnly(request).userId),
  );

  app.get(
    '/api/user/apps',
    {
      schema: {
        tags: ['user'],
        summary: 'The OAuth apps the signed-in user registered (dashboard)',
        response: {
          200: Type.Object({
            apps: Type.Array(AppView),
            loopbackAnyPort: Type.Boolean({
              description:
                "The server's `OAUTH_LOOPBACK_ANY_PORT`: when true, an http redirect URI on 127.0.0.1 or [::1] matches on any port; every other one matches exactly. The dashboard's form says which.",
            }),
          }),
        },
      },
      config: { auth: [] },
    },
    async (request) => ({
      apps: await listOwnedClients(ctx.db, dashboardOnly(request).userId),
      loopbackAnyPort: ctx.config.OAUTH_LOOPBACK_ANY_PORT,
    }),
  );

  app.delete(
    '/api/user/authorized-apps/:clientId',
    {
      schema: {
        tags: ['user'],
        summary: "Revoke an app's access to the signed-in user's account (dashboard)",
        description:
          'Every token the app holds for the user, and every API key it created for them, stops working at once; the app must ask for consent again.',
        params: Type.Object({ clientId: Type.String({ maxLength: 100 }) }),
        response: { 200: Type.Object({ success: Type.Literal(true) }) },
      },
      config: { auth: [] },
    },
    async (request) => {
      const principal = dashboardOnly(request);
      const { clientId } = request.params as { clientId: string };
      if (!(await revokeAuthorization(ctx.db, ctx.clock, principal.userId, clientId)))
        throw errors.notFound('Authorized app');
      tokens.revoked({ app: { userId: principal.userId, clientId } });
      // The keys the app created for this user end with its authorization, in every process (hole 2). Were
      // this step to fail, they would still be refused: a key of an app lives only while its authorization stands.
      const keys = ctx.keys;
      for (const keyId of await keys.revokeAppKeys({ userId: principal.userId, clientId })) keys.forget(keyId);
      return { success: true as const };
    },
  );
}
