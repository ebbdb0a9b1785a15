import type { Feature } from '../platform/feature.ts';
import type { CredentialResolver } from '../platform/http/principal.ts';
import type { KeysDeps } from './deps.ts';
import { createKeyAuthenticator, type KeyAuthenticator } from './authenticate.ts';
import { registerKeyRoutes } from './routes.ts';
import { registerKeyInfoRoute } from './key-info.ts';
import { registerKeyUpdateRoute } from './update.ts';
import { API_KEY_PREFIX } from './format.ts';

/** Keys as the composition root and the features built after it use them. */
export interface KeysFeature extends Feature {
  /** `ak_…` authentication of this process (see src/keys/authenticate.ts). */
  authenticator: KeyAuthenticator;
  /** `ak_…` values into principals, for the server's authentication. */
  resolveApiKey: CredentialResolver;
  /** Whether a credential has an API key's form (`ak_…`): the server sends those to {@link resolveApiKey}. */
  isApiKey(credential: string): boolean;
}

/** User API keys (`ak_…`): the contract's §4.1–4.3 endpoints, changing a key, and key authentication. */
export function createKeysFeature(deps: KeysDeps): KeysFeature {
  const authenticator = createKeyAuthenticator(deps);
  // Let the last `lastUsed` writes land before the database closes.
  deps.onClose.push(() => authenticator.settled());
  return {
    name: 'keys',
    authenticator,
    // Contract §7.1: the key routes answer `{ success: false, error }`, an unknown path under them too.
    errorEnvelopes: { '/api/user/api-keys': 'keys' },
    resolveApiKey: (value) => authenticator.resolve(value),
    isApiKey: (credential) => credential.startsWith(API_KEY_PREFIX),
    register(app) {
      registerKeyRoutes(app, deps, authenticator);
      registerKeyUpdateRoute(app, deps, authenticator);
      registerKeyInfoRoute(app, deps);
    },
  };
}
