import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { Db } from '../platform/db/connect.ts';
import { getOrCreateSecret } from '../platform/secrets.ts';

/** A private JSON Web Key as oidc-provider's `jwks` option takes it. */
export type PrivateJwk = Record<string, string>;

/**
 * The authorization server's signing keys, generated on first start and kept in `instance_secrets`, so a
 * restart or a second instance signs with the same keys (issue 2: "Persisted signing keys"). Tokens are
 * opaque, so today the keys sign nothing a client must verify; they still must not change under it.
 */
export async function loadSigningKeys(db: Db): Promise<{ keys: PrivateJwk[] }> {
  const stored = await getOrCreateSecret(db, 'oauth_jwks', () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'ES256', use: 'sig' };
    return JSON.stringify({ keys: [jwk] });
  });
  return JSON.parse(stored);
}
