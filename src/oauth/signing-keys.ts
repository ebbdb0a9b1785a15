import { generateKeyPairSync, randomUUID } from 'node:crypto';
import type { Db } from '../platform/db/connect.ts';
import { decrypt, encrypt } from '../platform/crypto.ts';
import { getOrCreateSecret, replaceSecret } from '../platform/secrets.ts';

/** A private JSON Web Key as oidc-provider's `jwks` option takes it. */
export type PrivateJwk = Record<string, string>;

/** The `instance_secrets` row that keeps the signing keys. */
export const SIGNING_KEYS_SECRET = 'oauth_jwks';

/**
 * The authorization server's signing keys, generated on first start and kept in `instance_secrets`, so a
 * restart or a second instance signs with the same keys.
 *
 * Security invariant: the private keys are stored sealed with `ENCRYPTION_KEY` (AES-256-GCM), which is kept
 * outside the database (environment or key file), like the API keys it seals. They sign ID tokens, so a
 * copy of the database alone must not be able to forge a "Sign in with Tollgate" identity. A row an earlier
 * version stored in clear is sealed in place on the first start that reads it.
 */
export async function loadSigningKeys(db: Db, encryptionKey: Buffer): Promise<{ keys: PrivateJwk[] }> {
  const stored = await getOrCreateSecret(db, SIGNING_KEYS_SECRET, () => {
    const { privateKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    const jwk = { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'ES256', use: 'sig' };
    return encrypt(encryptionKey, JSON.stringify({ keys: [jwk] }));
  });
  if (!stored.startsWith('{')) return JSON.parse(decrypt(encryptionKey, stored));
  // Stored in clear by an earlier version: seal it. Instances upgrading together write the same keys.
  await replaceSecret(db, SIGNING_KEYS_SECRET, stored, encrypt(encryptionKey, stored));
  return JSON.parse(stored);
}
