import type { Feature } from '../platform/feature.ts';
import { keysMigrations } from './migrations.ts';
import { createKeyAuthenticator, type KeyAuthenticator } from './authenticate.ts';
import { registerKeyRoutes } from './routes.ts';

declare module '../platform/context.ts' {
  interface Services {
    /** `ak_…` authentication of this process (see src/keys/authenticate.ts). */
    keys: KeyAuthenticator;
  }
}

/** User API keys (`ak_…`): the contract's §4.1–4.3 endpoints and key authentication. */
export const keysFeature: Feature = {
  name: 'keys',
  migrations: keysMigrations,
  register(app, ctx) {
    const keyAuth = createKeyAuthenticator(ctx);
    ctx.auth.apiKey = (value) => keyAuth.resolve(value);
    ctx.services.keys = keyAuth;
    // Let the last `lastUsed` writes land before the database closes.
    ctx.onClose.push(() => keyAuth.settled());
    registerKeyRoutes(app, ctx, keyAuth);
  },
};
