import type { Provider } from 'oidc-provider';
import type { Feature } from '../platform/feature.ts';
import { oauthMigrations } from './migrations.ts';
import { createAdapterFactory, deleteExpiredPayloads } from './adapter.ts';
import { createAccessTokenResolver, type AccessTokenResolver } from './bearer.ts';
import { buildProvider } from './provider.ts';
import { loadSigningKeys } from './signing-keys.ts';
import { registerEndpointRoutes } from './endpoint-routes.ts';
import { registerInteractionRoutes } from './interaction-routes.ts';
import { registerAppRoutes } from './apps-routes.ts';
import { registerAuthorizedAppRoutes } from './authorized-apps-routes.ts';
import { endProviderSession, hasProviderSessionCookie } from './browser-account.ts';

declare module '../platform/context.ts' {
  interface Services {
    /** OAuth access-token resolution of this process (see src/oauth/bearer.ts). */
    oauth: AccessTokenResolver;
  }
}

/** OAuth 2.1 authorization server (oidc-provider), apps and their authorizations. */
export const oauthFeature: Feature = {
  name: 'oauth',
  migrations: oauthMigrations,
  jobs: [
    {
      name: 'oauth-expired',
      description: 'Deletes expired OAuth codes, tokens, sessions and interactions.',
      run: async (ctx) => ({ deleted: await deleteExpiredPayloads(ctx.db) }),
    },
  ],
  async register(app, ctx) {
    const jwks = await loadSigningKeys(ctx.db, ctx.secrets.encryptionKey);
    // The provider is built on first use, not here: its issuer is PUBLIC_BASE_URL, which is only known
    // once the server listens when the port is chosen by the system (PORT=0, as in tests).
    let provider: Promise<Provider> | undefined;
    const getProvider = () => (provider ??= Promise.resolve().then(() => buildProvider(ctx, adapter, jwks)));

    const tokens = createAccessTokenResolver(ctx, async (value) => (await getProvider()).AccessToken.find(value));
    const adapter = createAdapterFactory(ctx.db, (event) => tokens.revoked(event));
    ctx.auth.accessToken = (value) => tokens.resolve(value);
    ctx.services.oauth = tokens;
    ctx.onClose.push(() => tokens.settled());

    // One account per browser: a dashboard sign-in, sign-up or sign-out ends the provider session too. A
    // browser without the provider's cookie has none, and oidc-provider is not loaded for it.
    ctx.services.browserSessions.onAccountChange(async (request, reply) => {
      if (hasProviderSessionCookie(request)) await endProviderSession(await getProvider(), request, reply);
    });

    registerEndpointRoutes(app, ctx, getProvider);
    registerInteractionRoutes(app, ctx, getProvider);
    registerAppRoutes(app, ctx, tokens);
    registerAuthorizedAppRoutes(app, ctx);
  },
};
