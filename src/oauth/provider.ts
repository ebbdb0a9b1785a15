import type { Adapter, ClientInstance, Provider } from 'oidc-provider';
import { loadOidcProvider } from './load-provider.ts';
import type { AppContext } from '../platform/context.ts';
import { constantTimeEqual, sha256Hex } from '../platform/crypto.ts';
import { SCOPES } from './scopes.ts';
import { escapeHtml, renderPage } from '../platform/http/page.ts';
import { errorPageHtml } from '../platform/http/error-page.ts';
import { logFailure, toApiError } from '../platform/http/server.ts';
import { findUser } from '../accounts/users.ts';
import { latestGrantId } from './authorizations.ts';
import { markClientProven } from './client-throttle.ts';
import type { PrivateJwk } from './signing-keys.ts';
import type { OAuthConfig } from './config.ts';
import { loopbackRedirectMatches } from './clients.ts';
import { CLIENT_ASSERTION_ALGS } from './client-keys.ts';

/** Where each endpoint of the authorization server lives (decisions.md "OAuth": under `/api/oauth`). */
export const OAUTH_ROUTES = {
  authorization: '/api/oauth/authorize',
  token: '/api/oauth/token',
  revocation: '/api/oauth/revoke',
  introspection: '/api/oauth/introspect',
  jwks: '/api/oauth/jwks',
  userinfo: '/api/oauth/userinfo',
} as const;

/** The cookie that names the browser's provider session (see browser-account.ts). */
export const OAUTH_SESSION_COOKIE = 'tg_oauth_session';

/**
 * Which user claims each OpenID Connect scope releases (OpenID Connect Core §5.4, limited to what Tollgate
 * knows about a user). Email addresses are not verified by Tollgate, so `email_verified` is always false:
 * an app must not treat the address as proof of ownership.
 */
export const OIDC_CLAIMS = {
  openid: ['sub'],
  profile: ['name', 'picture'],
  email: ['email', 'email_verified'],
} as const;

/** The path of an interaction's pages (sign-in, consent). */
export const interactionPath = (uid: string) => `/api/oauth/interaction/${uid}`;

const MINUTE = 60;
const DAY = 24 * 60 * MINUTE;

/** Lifetimes in seconds. Access tokens are short so that a leaked one does little; refresh tokens rotate. */
export const OAUTH_TTL = {
  AccessToken: 60 * MINUTE,
  AuthorizationCode: MINUTE,
  RefreshToken: 30 * DAY,
  Grant: 365 * DAY,
  Session: 14 * DAY,
  Interaction: 30 * MINUTE,
  IdToken: 60 * MINUTE,
} as const;

/**
 * How apps may authenticate at the token, revocation and introspection endpoints; the discovery documents
 * list exactly these (endpoint-routes.ts). Each app has one of them (clients.ts, findClientMetadata).
 */
export const CLIENT_AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post', 'private_key_jwt'] as const;

/** The longest a client assertion may live, `exp` minus now (RFC 7523 §3: "a reasonably short time"). */
export const MAX_CLIENT_ASSERTION_SECONDS = 300;

/**
 * Security invariants of `private_key_jwt` (RFC 7523 §3, OpenID Connect Core §9, RFC 9700 §2.5), kept by
 * oidc-provider's jwt_client_auth with this configuration, the adapter and this check:
 * - the signature verifies against a key of the app's registered `jwks` (public keys only, client-keys.ts),
 *   with one of {@link CLIENT_ASSERTION_ALGS} (no `none`, no HS256);
 * - `iss` and `sub` are the app's client_id, and `aud` is checked: the issuer (`PUBLIC_BASE_URL`), the token
 *   endpoint's URL or the URL of the endpoint called; an assertion made for another server is refused;
 * - `jti` is single-use: oidc-provider records each one in the `ReplayDetection` model until the assertion's
 *   `exp` (plus the clock tolerance), which the adapter stores in the database (insert-once: two requests
 *   racing with the same `jti` cannot both pass), so a second instance or a restart refuses a replay too;
 * - `exp` is required and short: at most {@link MAX_CLIENT_ASSERTION_SECONDS} ahead (this function), which
 *   also bounds how long each replay record is kept;
 * - an app registered with keys cannot authenticate with a secret, nor one with a secret with an assertion:
 *   oidc-provider accepts only the app's registered `token_endpoint_auth_method` (`invalid_client` otherwise).
 */
async function assertShortLivedAssertion(_ctx: unknown, claims: { exp?: unknown }): Promise<void> {
  const secondsLeft = Number(claims.exp) - Math.floor(Date.now() / 1000);
  if (!(secondsLeft <= MAX_CLIENT_ASSERTION_SECONDS)) {
    const { errors: oidcErrors } = await loadOidcProvider();
    throw new oidcErrors.InvalidClientAuth(
      `the client_assertion must expire within ${MAX_CLIENT_ASSERTION_SECONDS} seconds (exp)`,
    );
  }
}

/** Only a client may introspect or revoke its own tokens. */
async function sameClientOnly(_ctx: unknown, client: ClientInstance, token: { clientId: string }): Promise<boolean> {
  return token.clientId === client.clientId;
}

/** The claims of a user, before oidc-provider keeps those the granted scopes release. */
function userClaims(user: { id: string; email: string; name: string; image: string | null }) {
  return {
    sub: user.id,
    name: user.name,
    ...(user.image ? { picture: user.image } : {}),
    email: user.email,
    email_verified: false,
  };
}

/**
 * Builds the oidc-provider instance with Tollgate's policy (decisions.md "OAuth", RFC 9700):
 * - the authorization code flow only (`response_type=code`), with PKCE S256 required of every client
 *   (oidc-provider 9 knows no `plain`); no implicit, password or client-credentials grant;
 * - exact redirect URIs (clients are `web`, see clients.ts), but for the port of an http loopback IP one when
 *   `OAUTH_LOOPBACK_ANY_PORT` is on (RFC 8252 §7.3);
 * - opaque access tokens (no resource indicators, so no JWT access tokens): revocation is immediate;
 * - refresh tokens only for `offline_access`, rotated on every use; oidc-provider revokes the whole grant
 *   when a rotated (consumed) refresh token or a used code comes back, and the adapter does the same for
 *   two uses that race;
 * - OpenID Connect for "Sign in with Tollgate" (decisions.md "Added 2026-11-23"): an app allowed `openid`
 *   gets an ES256-signed ID token with the code flow, and `profile` / `email` release the claims of
 *   {@link OIDC_CLAIMS} at the userinfo endpoint; no logout, session management or other OIDC extras.
 *   A request without `openid` is plain OAuth 2.1, as before.
 */
export async function buildProvider(
  ctx: AppContext & { config: OAuthConfig },
  adapter: (model: string) => Adapter,
  jwks: { keys: PrivateJwk[] },
): Promise<Provider> {
  // oidc-provider and its dependencies take tens of MB once loaded; imported here, on the first OAuth
  // request, a process that serves only API keys never pays for them.
  const { default: Provider } = await loadOidcProvider();
  const provider = new Provider(ctx.config.PUBLIC_BASE_URL, {
    adapter,
    jwks,
    cookies: {
      keys: [ctx.secrets.cookieSecret],
      names: { session: OAUTH_SESSION_COOKIE, interaction: 'tg_oauth_interaction', resume: 'tg_oauth_resume' },
      // Lax keeps the cookies off cross-site POSTs, which is what makes the sign-in and consent forms
      // immune to cross-site request forgery: a forged POST arrives without its interaction cookie.
      long: { httpOnly: true, sameSite: 'lax' },
      short: { httpOnly: true, sameSite: 'lax' },
    },
    routes: OAUTH_ROUTES,
    scopes: [...SCOPES],
    claims: Object.fromEntries(Object.entries(OIDC_CLAIMS).map(([scope, claims]) => [scope, [...claims]])),
    responseTypes: ['code'],
    clientAuthMethods: [...CLIENT_AUTH_METHODS],
    enabledJWA: { clientAuthSigningAlgValues: [...CLIENT_ASSERTION_ALGS] },
    assertJwtClientAuthClaimsAndHeader: assertShortLivedAssertion,
    clientDefaults: {
      grant_types: ['authorization_code'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      id_token_signed_response_alg: 'ES256',
    },
    pkce: { required: () => true },
    rotateRefreshToken: true,
    issueRefreshToken: async (_ctx: unknown, client: any, code: { scopes: Set<string> }) =>
      client.grantTypeAllowed('refresh_token') && code.scopes.has('offline_access'),
    // Tokens live their own lifetime; signing out of the authorization page must not cut an app off.
    expiresWithSession: async () => false,
    ttl: { ...OAUTH_TTL },
    features: {
      devInteractions: { enabled: false },
      dPoP: { enabled: false },
      userinfo: { enabled: true },
      rpInitiatedLogout: { enabled: false },
      pushedAuthorizationRequests: { enabled: false },
      resourceIndicators: { enabled: false },
      introspection: { enabled: true, allowedPolicy: sameClientOnly },
      revocation: { enabled: true, allowedPolicy: sameClientOnly },
    },
    interactions: { url: async (_ctx: unknown, interaction: { uid: string }) => interactionPath(interaction.uid) },
    // oidc-provider's default, plus the user's grant to the app from an earlier browser session (see
    // latestGrantId): the session is the signed-in account's, so its grant is theirs to reuse.
    async loadExistingGrant(koa: any) {
      const { oidc } = koa;
      const grantId =
        oidc.result?.consent?.grantId ??
        oidc.session.grantIdFor(oidc.client.clientId) ??
        (oidc.session.accountId ? await latestGrantId(ctx.db, oidc.session.accountId, oidc.client.clientId) : null);
      return grantId ? oidc.provider.Grant.find(grantId) : undefined;
    },
    async findAccount(_ctx: unknown, sub: string) {
      const user = await findUser(ctx.db, sub);
      return user ? { accountId: user.id, claims: async () => userClaims(user) } : undefined;
    },
    // A browser app (public client) may call the token endpoint from the origins of its redirect URIs.
    clientBasedCORS(_ctx: unknown, origin: string, client: { clientAuthMethod: string; redirectUris: string[] }) {
      return client.clientAuthMethod === 'none' && client.redirectUris.some((uri) => URL.parse(uri)?.origin === origin);
    },
    async renderError(koa: any, out: Record<string, string>, error: unknown) {
      koa.type = 'html';
      // A failure of Tollgate's own (oidc-provider's "server_error": the database gone or its disk full, a
      // bug) is the page every other route shows for it (error-page.ts): a 503 saying when to try again, with
      // Retry-After, or the 500 with its request id, instead of "oops! something went wrong". It is shown, never
      // sent to the app's redirect_uri (oidc-provider redirects only its own OAuth errors): during an outage the
      // app's registration cannot always be read to check that URI, and reloading this page finishes the same
      // authorization once the database is back, which an error handed to the app would end (README "OAuth").
      if (out.error === 'server_error') {
        const failure = toApiError(error);
        koa.status = failure.status;
        for (const [name, value] of Object.entries(failure.headers)) koa.set(name, value);
        koa.body = errorPageHtml(failure, {
          method: koa.method,
          url: koa.originalUrl,
          id: String(koa.res.getHeader('x-request-id') ?? ''),
        });
        return;
      }
      koa.body = renderPage(
        'Authorization failed',
        `<h1>Authorization failed</h1><p class="error" role="alert">${escapeHtml(out.error_description ?? out.error)}</p><p class="hint">Error: <code>${escapeHtml(out.error)}</code>. Go back to the app and start again.</p>`,
      );
    },
  });
  provider.proxy = true;

  // Security invariant: only the SHA-256 of a client secret is stored (clients.ts), so the client's
  // `clientSecret` is that hash and the presented secret is hashed before the constant-time compare.
  provider.Client.prototype.compareClientSecret = function (this: ClientInstance, actual: string) {
    return typeof this.clientSecret === 'string' && constantTimeEqual(sha256Hex(actual), this.clientSecret);
  };

  // A native app (a CLI, a desktop app) listens for its callback on a port the system picks, so it cannot
  // register that port (RFC 8252 §7.3). oidc-provider's own relaxation comes only with `application_type:
  // 'native'`, which also relaxes `localhost` and changes other rules, so it is added here instead. Both the
  // authorization request and the error redirects go through this check; the token endpoint still wants the
  // very redirect_uri of the authorization request, port included.
  if (ctx.config.OAUTH_LOOPBACK_ANY_PORT) {
    const exactlyRegistered = provider.Client.prototype.redirectUriAllowed;
    provider.Client.prototype.redirectUriAllowed = function (this: ClientInstance, value: unknown) {
      return (
        exactlyRegistered.call(this, value) ||
        (typeof value === 'string' && loopbackRedirectMatches(value, this.redirectUris))
      );
    };
  }

  // OpenID Connect drops `offline_access` unless the request also says `prompt=consent`. For an OAuth 2.1
  // client asking for offline access that rule would silently withhold the refresh token, so such a
  // request is made to show the consent page, which it would in practice anyway.
  provider.use(async (koa, next) => {
    if (koa.path === OAUTH_ROUTES.authorization && koa.method === 'GET') {
      const query = { ...koa.query };
      const scopes = typeof query.scope === 'string' ? query.scope.split(' ') : [];
      if (scopes.includes('offline_access') && query.prompt === undefined) koa.query = { ...query, prompt: 'consent' };
    }
    await next();
  });

  // The token endpoint authenticates the client before any grant handler runs, and only those handlers raise
  // invalid_grant: such a refusal, to an app with a secret, went to the app itself (client-throttle.ts).
  provider.on('grant.error', (koa: any, error: { error?: string }) => {
    const method = koa.oidc?.client?.clientAuthMethod;
    if (error?.error === 'invalid_grant' && method !== undefined && method !== 'none') markClientProven(koa.res);
  });
  // The rule of every other route (server.ts): a full disk is one warning naming the route, not a stack.
  provider.on('server_error', (koa: { _matchedRoute?: string }, error: unknown) =>
    logFailure(ctx.log, error, { status: toApiError(error).status, route: koa._matchedRoute }, 'oauth server error'),
  );
  provider.on('error', (error: unknown) => ctx.log.error({ err: error }, 'oauth error'));
  return provider;
}
