import type { Provider } from 'oidc-provider';
import type { Feature } from '../platform/feature.ts';
import type { ErrorEnvelope } from '../platform/http/error-envelope.ts';
import type { CredentialResolver } from '../platform/http/principal.ts';
import type { OAuthDeps } from './deps.ts';
import { createAdapterFactory, deleteExpiredPayloads } from './adapter.ts';
import { createAccessTokenResolver, type AccessTokenResolver } from './bearer.ts';
import { buildProvider, interactionPath, OAUTH_ROUTES } from './provider.ts';
import { loadSigningKeys } from './signing-keys.ts';
import { registerEndpointRoutes } from './endpoint-routes.ts';
import { registerInteractionRoutes, SCOPE_DESCRIPTIONS } from './interaction-routes.ts';
import { registerAppRoutes } from './apps-routes.ts';
import { registerAuthorizedAppRoutes } from './authorized-apps-routes.ts';
import { endProviderSession, hasProviderSessionCookie } from './browser-account.ts';

/** OAuth as the composition root and the features built after it use it. */
export interface OAuthFeature extends Feature {
  /** OAuth access-token resolution of this process (see src/oauth/bearer.ts). */
  tokens: AccessTokenResolver;
  /** Access tokens into principals, for the server's authentication. */
  resolveAccessToken: CredentialResolver;
}

/** OAuth 2.1 authorization server (oidc-provider), apps and their authorizations. */
export async function createOAuthFeature(deps: OAuthDeps): Promise<OAuthFeature> {
  const jwks = await loadSigningKeys(deps.db, deps.secrets.encryptionKey);
  // The provider is built on first use, not here: its issuer is PUBLIC_BASE_URL, which is only known
  // once the server listens when the port is chosen by the system (PORT=0, as in tests).
  let provider: Promise<Provider> | undefined;
  const getProvider = () => (provider ??= Promise.resolve().then(() => buildProvider(deps, adapter, jwks)));

  const tokens = createAccessTokenResolver(deps, async (value) => (await getProvider()).AccessToken.find(value));
  const adapter = createAdapterFactory(deps.db, (event) => tokens.revoked(event));
  deps.onClose.push(() => tokens.settled());

  // One account per browser: a dashboard sign-in, sign-up or sign-out ends the provider session too. A
  // browser without the provider's cookie has none, and oidc-provider is not loaded for it.
  deps.browserSessions.onAccountChange(async (request, reply) => {
    if (hasProviderSessionCookie(request)) await endProviderSession(await getProvider(), request, reply);
  });

  return {
    name: 'oauth',
    tokens,
    // What is refused before a route is chosen (a request the HTTP parser cannot read) is still RFC 6749's body on
    // the endpoints OAuth clients call, as their routes answer (config.envelope 'oauth').
    errorEnvelopes: Object.fromEntries(
      [
        OAUTH_ROUTES.token,
        OAUTH_ROUTES.revocation,
        OAUTH_ROUTES.introspection,
        OAUTH_ROUTES.jwks,
        OAUTH_ROUTES.userinfo,
      ]
        .map((path): [string, ErrorEnvelope] => [path, 'oauth'])
        // A path under the sign-in and consent pages that is none of them is a page too (error-page.ts).
        .concat([[interactionPath(''), 'page']]),
    ),
    resolveAccessToken: (value) => tokens.resolve(value),
    // The document names each route's scopes, so a generated client or Swagger UI knows what to ask an app's user
    // for. The URLs are relative to the document's server (OpenAPI: relative references resolve against it).
    scopedSecurityScheme: {
      name: 'oauth2',
      scheme: {
        type: 'oauth2',
        description:
          "An app's access token, from the authorization code flow with PKCE (S256), as OAuth 2.1 requires; a route needs one of the scopes its requirements list. Discovery: `/.well-known/oauth-authorization-server` and `/.well-known/openid-configuration`.",
        flows: {
          authorizationCode: {
            authorizationUrl: OAUTH_ROUTES.authorization,
            tokenUrl: OAUTH_ROUTES.token,
            refreshUrl: OAUTH_ROUTES.token,
            scopes: SCOPE_DESCRIPTIONS,
          },
        },
      },
    },
    jobs: [
      {
        name: 'oauth-expired',
        description: 'Deletes expired OAuth codes, tokens, sessions and interactions.',
        run: async () => ({ deleted: await deleteExpiredPayloads(deps.db) }),
      },
    ],
    register(app) {
      registerEndpointRoutes(app, deps, getProvider);
      registerInteractionRoutes(app, deps, getProvider);
      registerAppRoutes(app, deps, tokens);
      registerAuthorizedAppRoutes(app, deps);
    },
  };
}
