import Type from 'typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Provider } from 'oidc-provider';
import type { App } from '../platform/http/server.ts';
import { nonJsonResponse } from '../platform/http/openapi.ts';
import type { OAuthDeps } from './deps.ts';
import { SCOPES } from './scopes.ts';
import { STRICT_PAGE_CSP } from '../platform/http/page.ts';
import { CLIENT_AUTH_METHODS, OAUTH_ROUTES, OIDC_CLAIMS } from './provider.ts';
import { CLIENT_ASSERTION_ALGS } from './client-keys.ts';
import { clientThrottle, presentsClientCredentials, requestClientId } from './client-throttle.ts';
import { endStaleProviderSession, hasProviderSessionCookie } from './browser-account.ts';
import { keepBodyBytes, withBodyReplayed } from './body-replay.ts';

const AUTH_METHODS = [...CLIENT_AUTH_METHODS];
/** RFC 8414 §2: listed because `private_key_jwt` is among the methods (what a client assertion is signed with). */
const AUTH_SIGNING_ALGS = [...CLIENT_ASSERTION_ALGS];

/** RFC 8414 authorization server metadata, as Tollgate publishes it. */
const Metadata = Type.Object({
  issuer: Type.String(),
  authorization_endpoint: Type.String(),
  token_endpoint: Type.String(),
  revocation_endpoint: Type.String(),
  introspection_endpoint: Type.String(),
  jwks_uri: Type.String(),
  scopes_supported: Type.Array(Type.String()),
  response_types_supported: Type.Array(Type.String()),
  response_modes_supported: Type.Array(Type.String()),
  grant_types_supported: Type.Array(Type.String()),
  code_challenge_methods_supported: Type.Array(Type.String()),
  token_endpoint_auth_methods_supported: Type.Array(Type.String()),
  revocation_endpoint_auth_methods_supported: Type.Array(Type.String()),
  introspection_endpoint_auth_methods_supported: Type.Array(Type.String()),
  token_endpoint_auth_signing_alg_values_supported: Type.Array(Type.String()),
  revocation_endpoint_auth_signing_alg_values_supported: Type.Array(Type.String()),
  introspection_endpoint_auth_signing_alg_values_supported: Type.Array(Type.String()),
  authorization_response_iss_parameter_supported: Type.Boolean(),
});

/** OpenID Connect Discovery 1.0 metadata: the RFC 8414 document plus the OpenID Connect fields. */
const OpenIdMetadata = Type.Intersect([
  Metadata,
  Type.Object({
    userinfo_endpoint: Type.String(),
    subject_types_supported: Type.Array(Type.String()),
    id_token_signing_alg_values_supported: Type.Array(Type.String()),
    claims_supported: Type.Array(Type.String()),
    claims_parameter_supported: Type.Boolean(),
    request_parameter_supported: Type.Boolean(),
    request_uri_parameter_supported: Type.Boolean(),
  }),
]);

/** The metadata document of the authorization server whose issuer is `issuer`. */
export function authorizationServerMetadata(issuer: string) {
  return {
    issuer,
    authorization_endpoint: issuer + OAUTH_ROUTES.authorization,
    token_endpoint: issuer + OAUTH_ROUTES.token,
    revocation_endpoint: issuer + OAUTH_ROUTES.revocation,
    introspection_endpoint: issuer + OAUTH_ROUTES.introspection,
    jwks_uri: issuer + OAUTH_ROUTES.jwks,
    scopes_supported: [...SCOPES],
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: ['authorization_code', 'refresh_token'],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: AUTH_METHODS,
    revocation_endpoint_auth_methods_supported: AUTH_METHODS,
    introspection_endpoint_auth_methods_supported: AUTH_METHODS,
    token_endpoint_auth_signing_alg_values_supported: AUTH_SIGNING_ALGS,
    revocation_endpoint_auth_signing_alg_values_supported: AUTH_SIGNING_ALGS,
    introspection_endpoint_auth_signing_alg_values_supported: AUTH_SIGNING_ALGS,
    authorization_response_iss_parameter_supported: true,
  };
}

/**
 * The OpenID Connect discovery document of the provider whose issuer is `issuer` (the same issuer and
 * endpoints as the OAuth metadata, so either document leads a client to the same server).
 */
export function openIdConfiguration(issuer: string) {
  return {
    ...authorizationServerMetadata(issuer),
    userinfo_endpoint: issuer + OAUTH_ROUTES.userinfo,
    subject_types_supported: ['public'],
    // The signing keys are P-256 (signing-keys.ts) and clients default to ES256 (provider.ts).
    id_token_signing_alg_values_supported: ['ES256'],
    claims_supported: [
      ...new Set([...Object.values(OIDC_CLAIMS).flat(), 'iss', 'aud', 'exp', 'iat', 'auth_time', 'nonce', 'at_hash']),
    ],
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
  };
}

/** RFC 6749 §5.1: a successful token response (the refresh token with `offline_access`, the ID token with `openid`). */
const TokenResponse = Type.Object({
  access_token: Type.String({ description: 'Opaque bearer token for the API.' }),
  token_type: Type.String({ description: '`Bearer` (oidc-provider writes it `bearer`; compare case-insensitively).' }),
  expires_in: Type.Integer({ description: 'Seconds the access token lives (3600).' }),
  scope: Type.String({ description: 'The scopes granted, space-separated.' }),
  refresh_token: Type.Optional(Type.String({ description: 'With `offline_access`; rotated on every use.' })),
  id_token: Type.Optional(Type.String({ description: 'With `openid`: an ES256-signed JWT.' })),
});

/** RFC 7662 §2.2: an introspection answer (only `active: false` for a token that is not active or not the app's). */
const IntrospectionResponse = Type.Object(
  {
    active: Type.Boolean(),
    client_id: Type.Optional(Type.String()),
    sub: Type.Optional(Type.String()),
    scope: Type.Optional(Type.String()),
    exp: Type.Optional(Type.Integer()),
    iat: Type.Optional(Type.Integer()),
    iss: Type.Optional(Type.String()),
    token_type: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

/** OpenID Connect Core §5.3.2: the claims the granted scopes release (OIDC_CLAIMS). */
const UserinfoResponse = Type.Object({
  sub: Type.String({ description: "The user's id (`usr_…`)." }),
  name: Type.Optional(Type.String({ description: 'With `profile`.' })),
  picture: Type.Optional(Type.String({ description: 'With `profile`, when the user has one.' })),
  email: Type.Optional(Type.String({ description: 'With `email`.' })),
  email_verified: Type.Optional(
    Type.Boolean({ description: 'With `email`: always false (addresses are not verified).' }),
  ),
});

/** RFC 7517 §5: the public signing keys. */
const JwkSet = Type.Object({
  keys: Type.Array(
    Type.Object({ kty: Type.String(), kid: Type.Optional(Type.String()) }, { additionalProperties: true }),
  ),
});

/** The Content-Security-Policy of everything oidc-provider writes itself (its error page is a renderPage page). */
const PROVIDER_CSP = STRICT_PAGE_CSP;

/**
 * The oidc-provider endpoints under `/api/oauth`, declared as Fastify routes (so they are documented and
 * nothing else can claim their paths) that hand the request to oidc-provider: the browser endpoints from
 * their `onRequest` hook, untouched; the client-authenticated ones (token, revocation, introspection) from
 * `preHandler`, after Fastify read the form and the per-app throttle (client-throttle.ts) admitted it, with
 * RFC 6749 error bodies for what is refused before oidc-provider. Also serves the RFC 8414 metadata document.
 */
export function registerEndpointRoutes(app: App, ctx: OAuthDeps, getProvider: () => Promise<Provider>): void {
  let handler: ((req: FastifyRequest['raw'], res: FastifyReply['raw']) => Promise<void>) | undefined;
  let publicAddress: URL;
  async function forward(request: FastifyRequest, reply: FastifyReply) {
    await forwardAs(request, reply, request.raw);
  }
  /** Hands the request to oidc-provider as `raw` (the request itself, or a view that replays its body). */
  async function forwardAs(request: FastifyRequest, reply: FastifyReply, raw: FastifyRequest['raw']) {
    handler ??= (await getProvider()).callback();
    // Read with the provider, whose issuer it is (the test harness sets it once the server listens).
    publicAddress ??= new URL(ctx.config.PUBLIC_BASE_URL);
    // Security invariant: a hijacked reply skips Fastify's reply pipeline, so the headers the hooks set
    // for every answer (nosniff, framing, referrer, HSTS, request id…) are copied onto the raw response
    // here, before oidc-provider writes it; oidc-provider adds the hash of any inline script it emits
    // (its form_post page) to this policy's `script-src`.
    for (const [name, value] of Object.entries(reply.getHeaders())) {
      if (value !== undefined) reply.raw.setHeader(name, value as string | string[]);
    }
    reply.raw.setHeader('content-security-policy', PROVIDER_CSP);
    // oidc-provider runs with `proxy` on, so it takes the scheme and host of the URLs it writes (where the
    // browser goes after the sign-in page) and the Secure flag of its cookies from X-Forwarded-Proto and
    // X-Forwarded-Host, else Host. They are the public address's, never what the client or a proxy sent: an
    // https deployment behind a proxy without X-Forwarded-Proto got cookies without Secure and an http
    // redirect, one whose proxy sets Host to its upstream (nginx's default) sent the browser there.
    request.raw.headers['x-forwarded-proto'] = publicAddress.protocol.slice(0, -1);
    request.raw.headers['x-forwarded-host'] = publicAddress.host;
    reply.hijack();
    await handler(raw, reply.raw);
  }
  /** One account per browser: a provider session left by another account than the dashboard's is ended first. */
  async function oneAccountPerBrowser(request: FastifyRequest, reply: FastifyReply) {
    if (!hasProviderSessionCookie(request)) return;
    await endStaleProviderSession(await getProvider(), request, reply, await ctx.browserSessions.userOf(request));
  }
  const never = async () => undefined;
  const form = ['application/x-www-form-urlencoded'];

  // The client-authenticated endpoints are forwarded once Fastify has read the form (preHandler), so the
  // throttle knows the app before oidc-provider runs; oidc-provider then reads the bytes Fastify read again
  // (body-replay.ts), as it would read them from the client.
  const throttle = clientThrottle(ctx);
  async function forwardThrottled(request: FastifyRequest, reply: FastifyReply) {
    const clientId = request.method === 'POST' ? requestClientId(request) : null;
    const authenticated = presentsClientCredentials(request);
    if (request.method === 'POST') await throttle.admit(clientId, request.ip, authenticated);
    await forwardAs(request, reply, withBodyReplayed(request));
    if (request.method === 'POST')
      await throttle.record(clientId, request.ip, authenticated, reply.raw.statusCode, reply.raw);
  }
  // RFC 6749 error bodies for what Fastify refuses before oidc-provider (oversized form, rate limit…);
  // oidc-provider's own limit for a form is 56 KiB.
  const clientEndpoint = {
    preParsing: keepBodyBytes,
    preHandler: forwardThrottled,
    handler: never,
    config: { envelope: 'oauth' as const },
    bodyLimit: 56 * 1024,
  };

  app.route({
    method: 'GET',
    url: OAUTH_ROUTES.authorization,
    onRequest: [oneAccountPerBrowser, forward],
    handler: never,
    schema: {
      tags: ['oauth'],
      summary: 'Authorization endpoint (code flow with PKCE S256)',
      description:
        'Starts an authorization: `response_type=code`, `client_id`, the exact registered `redirect_uri` (on any port for an http 127.0.0.1 or [::1] one when `OAUTH_LOOPBACK_ANY_PORT` is on), `scope` (space-separated), `state`, `code_challenge` and `code_challenge_method=S256`. Shows the sign-in and consent pages, then redirects to `redirect_uri` with `code`, `state` and `iss` (or `error`). Asking for `offline_access` always shows the consent page and yields a refresh token.',
    },
    // A browser's navigation: what fails before oidc-provider (the database gone) is a page (error-page.ts).
    config: {
      envelope: 'page',
      documentedResponses: {
        200: nonJsonResponse(
          'With `response_mode=form_post` (accepted, though the metadata advertises only `query`), an HTML page whose form posts the answer to the `redirect_uri`.',
          ['text/html'],
        ),
        // oidc-provider (koa) sends a short HTML "Redirecting to <url>." body with the redirect; a client that
        // reads the body must find that content type documented.
        303: nonJsonResponse(
          "A redirect: to the sign-in or consent page, or back to the app's `redirect_uri` with `code`, `state` and `iss` (or `error` and `error_description`). The body is a short HTML text naming the `Location`.",
          ['text/html'],
        ),
        '4XX': nonJsonResponse(
          'An HTML page saying what is wrong, when the request cannot be sent back to the app (an unknown `client_id`, a `redirect_uri` that is not registered).',
          ['text/html'],
        ),
      },
    },
  });
  app.route({
    method: 'GET',
    url: `${OAUTH_ROUTES.authorization}/:uid`,
    onRequest: forward,
    handler: never,
    schema: { hide: true },
    config: { envelope: 'page' },
  });
  app.route({
    method: ['POST', 'OPTIONS'],
    url: OAUTH_ROUTES.token,
    ...clientEndpoint,
    schema: {
      tags: ['oauth'],
      summary: 'Token endpoint',
      consumes: form,
      description:
        '`grant_type=authorization_code` (with `code`, `redirect_uri`, `code_verifier`) or `grant_type=refresh_token`. Public apps send `client_id`; confidential apps authenticate with HTTP Basic or `client_secret` in the body, or, registered with `jwks`, with `client_assertion_type=urn:ietf:params:oauth:client-assertion-type:jwt-bearer` and a `client_assertion` signed by one of their keys (`private_key_jwt`: `iss` and `sub` the client id, `aud` the issuer, a single-use `jti`, `exp` at most 5 minutes ahead). Refresh tokens rotate: each use returns a new one, and using an old one again revokes the whole authorization.',
    },
    config: {
      ...clientEndpoint.config,
      documentedResponses: {
        200: { description: 'The tokens (RFC 6749 §5.1).', content: { 'application/json': { schema: TokenResponse } } },
      },
    },
  });
  app.route({
    method: ['POST', 'OPTIONS'],
    url: OAUTH_ROUTES.revocation,
    ...clientEndpoint,
    schema: {
      tags: ['oauth'],
      summary: 'Revoke an access or refresh token (RFC 7009)',
      consumes: form,
      description:
        'Revoking a refresh token revokes the whole grant. Revoking an access token revokes it and every token of its grant, refresh tokens included (RFC 7009 §2.1 allows it); the authorization itself stands, so the app can ask for a code again without a new consent. Takes effect on the next request. An unknown or already revoked token is answered 200 too (RFC 7009 §2.2).',
    },
    config: {
      ...clientEndpoint.config,
      documentedResponses: { 200: { description: 'Revoked (or nothing to revoke); no body.' } },
    },
  });
  app.route({
    method: ['POST', 'OPTIONS'],
    url: OAUTH_ROUTES.introspection,
    ...clientEndpoint,
    schema: {
      tags: ['oauth'],
      summary: 'Introspect a token (RFC 7662)',
      consumes: form,
      description: 'An app may introspect only its own tokens.',
    },
    config: {
      ...clientEndpoint.config,
      documentedResponses: {
        200: {
          description:
            "The token's state (RFC 7662 §2.2); `active: false` alone for any token not active or not the app's.",
          content: { 'application/json': { schema: IntrospectionResponse } },
        },
      },
    },
  });
  app.route({
    method: 'GET',
    url: OAUTH_ROUTES.jwks,
    onRequest: forward,
    handler: never,
    schema: { tags: ['oauth'], summary: "The authorization server's public signing keys" },
    config: {
      envelope: 'oauth',
      documentedResponses: {
        200: {
          description: 'A JWK Set (RFC 7517 §5).',
          content: { 'application/jwk-set+json': { schema: JwkSet } },
        },
      },
    },
  });
  app.route({
    method: ['GET', 'POST', 'OPTIONS'],
    url: OAUTH_ROUTES.userinfo,
    onRequest: forward,
    handler: never,
    schema: {
      tags: ['oauth'],
      summary: 'OpenID Connect userinfo',
      description:
        'With an access token granted `openid`: `sub`, and `name` / `picture` with `profile`, `email` / `email_verified` with `email` (Tollgate does not verify addresses, so `email_verified` is false). Errors are OAuth bearer errors (RFC 6750 §3.1: `invalid_token`, `insufficient_scope`), with `WWW-Authenticate`.',
    },
    config: {
      envelope: 'oauth',
      documentedResponses: {
        200: { description: "The user's claims.", content: { 'application/json': { schema: UserinfoResponse } } },
      },
    },
  });

  app.get(
    '/.well-known/oauth-authorization-server',
    {
      schema: {
        tags: ['oauth'],
        summary: 'OAuth 2.0 authorization server metadata (RFC 8414)',
        response: { 200: Metadata },
      },
    },
    async () => authorizationServerMetadata(ctx.config.PUBLIC_BASE_URL),
  );

  // The issuer is PUBLIC_BASE_URL itself, so this is where OpenID Connect discovery (and openid-client's
  // default discovery) looks: `${issuer}/.well-known/openid-configuration`.
  app.get(
    '/.well-known/openid-configuration',
    {
      schema: {
        tags: ['oauth'],
        summary: 'OpenID Connect discovery (Sign in with Tollgate)',
        response: { 200: OpenIdMetadata },
      },
    },
    async () => openIdConfiguration(ctx.config.PUBLIC_BASE_URL),
  );
}
