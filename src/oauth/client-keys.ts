import { createPublicKey, type KeyObject } from 'node:crypto';
import { errors } from '../platform/errors.ts';

/**
 * The public keys a confidential app registers to authenticate with `private_key_jwt` (RFC 7523 §2.2,
 * OpenID Connect Core §9) instead of a shared secret: the app signs a short JWT with its private key for
 * each token, revocation or introspection request, and Tollgate checks it against these keys. Nothing secret
 * is stored on Tollgate's side, and the app rotates by replacing the set.
 *
 * Only an inline JWK Set is accepted, never a `jwks_uri`: fetching a URL a dashboard user chose would let
 * any user make the server send requests wherever it can reach (SSRF toward internal addresses, cloud
 * metadata), and the cost of inline keys is small: rotation is one `PUT` of the new set (old and new key
 * side by side, then the new one alone).
 *
 * Security invariants (checked by {@link parseClientJwks} before anything is stored):
 * - public keys only: a member of a private or symmetric key (`d`, `p`, `q`, `dp`, `dq`, `qi`, `oth`, `k`,
 *   `priv`) or `kty: oct` is refused, so a pasted private key never lands in the database (or in a backup);
 * - only the signature algorithms oidc-provider verifies for `private_key_jwt` ({@link CLIENT_ASSERTION_ALGS}):
 *   RSA of 2048 to 8192 bits (RS256, PS256), EC P-256 (ES256), OKP Ed25519 (EdDSA); a key whose `alg`, `use`
 *   or `key_ops` says anything else is refused rather than silently never matching;
 * - bounded: at most {@link MAX_CLIENT_KEYS} keys, each parsed by Node as a real public key, stored with their
 *   public members only (so the stored set is bounded too, whatever else the request carried).
 */

/**
 * The JWS algorithms a client assertion may be signed with: oidc-provider's asymmetric defaults, HS256 left
 * out since Tollgate offers no `client_secret_jwt` (a shared secret again, stored only as a hash here).
 */
export const CLIENT_ASSERTION_ALGS = ['RS256', 'PS256', 'ES256', 'Ed25519', 'EdDSA'] as const;

/** Most keys in an app's set: the current key, the next one during a rotation, and room for a few more. */
export const MAX_CLIENT_KEYS = 5;

/** An RSA modulus smaller than this is refused (NIST SP 800-131A; oidc-provider's minimum too). */
const MIN_RSA_BITS = 2048;
/** A larger modulus costs every verification more for no gain, and bounds what one key may weigh. */
const MAX_RSA_BITS = 8192;

/** The members of a private or symmetric JWK (RFC 7518 §6.2.2, §6.3.2, §6.4; `priv` of the AKP draft). */
const PRIVATE_MEMBERS = ['d', 'p', 'q', 'dp', 'dq', 'qi', 'oth', 'k', 'priv'] as const;

/** The algorithms each accepted key type and curve can verify. */
const ALGS_OF: Record<string, readonly string[]> = {
  RSA: ['RS256', 'PS256'],
  'EC P-256': ['ES256'],
  'OKP Ed25519': ['Ed25519', 'EdDSA'],
};

/** A public JWK as stored: its public members only. */
export type PublicJwk = Record<string, string>;

/** An app's public key set as stored in `oauth_clients.jwks` and handed to oidc-provider. */
export interface PublicJwkSet {
  keys: PublicJwk[];
}

/** A refusal of the key at `where` (`jwks.keys[0]`), named in `param` as the other refusals name their field. */
function invalidKey(where: string, message: string) {
  return errors.invalid(message, { param: where });
}

function stringMember(jwk: Record<string, unknown>, name: string, where: string, maxLength = 2048): string {
  const value = jwk[name];
  if (typeof value !== 'string' || !value || value.length > maxLength)
    throw invalidKey(where, `${where}.${name} must be a non-empty string of at most ${maxLength} characters.`);
  return value;
}

function optionalMember(jwk: Record<string, unknown>, name: string, where: string): string | undefined {
  return jwk[name] === undefined ? undefined : stringMember(jwk, name, where, 200);
}

/** One key of the set, checked and reduced to its public members. */
function parseKey(value: unknown, i: number): PublicJwk {
  const where = `jwks.keys[${i}]`;
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw invalidKey(where, `${where} must be a JSON Web Key (an object).`);
  const jwk = value as Record<string, unknown>;
  const found = PRIVATE_MEMBERS.filter((member) => jwk[member] !== undefined);
  if (found.length)
    throw invalidKey(
      where,
      `${where} holds private key material (${found.map((m) => `"${m}"`).join(', ')}): register the public key only and keep the private key on your server.`,
    );
  const kty = stringMember(jwk, 'kty', where, 10);
  if (kty === 'oct')
    throw invalidKey(
      where,
      `${where} is a symmetric key (kty "oct"): private_key_jwt needs a public key (RSA, EC or OKP).`,
    );

  const kept: PublicJwk = { kty };
  let family: string;
  if (kty === 'RSA') {
    kept.n = stringMember(jwk, 'n', where);
    kept.e = stringMember(jwk, 'e', where, 16);
    family = 'RSA';
  } else if (kty === 'EC' || kty === 'OKP') {
    kept.crv = stringMember(jwk, 'crv', where, 20);
    kept.x = stringMember(jwk, 'x', where, 200);
    if (kty === 'EC') kept.y = stringMember(jwk, 'y', where, 200);
    family = `${kty} ${kept.crv}`;
    if (!ALGS_OF[family])
      throw invalidKey(
        where,
        `${where} uses the curve "${kept.crv}"; accepted are EC P-256 (ES256) and OKP Ed25519 (EdDSA).`,
      );
  } else {
    throw invalidKey(where, `${where} has kty "${kty}"; accepted are RSA, EC (P-256) and OKP (Ed25519).`);
  }

  const alg = optionalMember(jwk, 'alg', where);
  if (alg !== undefined) {
    if (!(CLIENT_ASSERTION_ALGS as readonly string[]).includes(alg))
      throw invalidKey(
        where,
        `${where}.alg "${alg}" is not accepted; client assertions are signed with one of ${CLIENT_ASSERTION_ALGS.join(', ')}.`,
      );
    if (!ALGS_OF[family]!.includes(alg)) throw invalidKey(where, `${where}.alg "${alg}" does not fit a ${family} key.`);
    kept.alg = alg;
  }
  const use = optionalMember(jwk, 'use', where);
  if (use !== undefined && use !== 'sig')
    throw invalidKey(where, `${where}.use is "${use}"; a key for client assertions has use "sig" (or none).`);
  if (use) kept.use = use;
  const ops = jwk.key_ops;
  if (ops !== undefined && !(Array.isArray(ops) && ops.includes('verify')))
    throw invalidKey(where, `${where}.key_ops must include "verify" (or be left out).`);
  const kid = optionalMember(jwk, 'kid', where);
  if (kid) kept.kid = kid;

  let key: KeyObject;
  try {
    // Node parses the point or modulus for real: a key that is not on its curve, or garbled, is refused here
    // rather than at the app's first token request. (Each member's length was bounded above.)
    key = createPublicKey({ key: kept, format: 'jwk' });
  } catch {
    throw invalidKey(where, `${where} is not a valid ${family} public key.`);
  }
  const bits = key.asymmetricKeyDetails?.modulusLength;
  if (kty === 'RSA' && (bits === undefined || bits < MIN_RSA_BITS || bits > MAX_RSA_BITS))
    throw invalidKey(where, `${where} is an RSA key of ${bits} bits; use ${MIN_RSA_BITS} to ${MAX_RSA_BITS} bits.`);
  return kept;
}

/**
 * Checks a JWK Set given at registration or rotation and returns what is stored: its keys with their public
 * members only. Throws 400 INVALID_REQUEST naming the key and the member for anything refused (see the
 * invariants at the top of this file).
 */
export function parseClientJwks(value: unknown): PublicJwkSet {
  const keys = (value as { keys?: unknown } | null)?.keys;
  if (typeof value !== 'object' || value === null || !Array.isArray(keys))
    throw errors.invalid('jwks must be a JSON Web Key Set: { "keys": [ <public JWK>, … ] }.', { param: 'jwks' });
  if (keys.length === 0 || keys.length > MAX_CLIENT_KEYS)
    throw errors.invalid(`jwks must hold 1 to ${MAX_CLIENT_KEYS} keys; it holds ${keys.length}.`, { param: 'jwks' });
  const parsed = keys.map(parseKey);
  const kids = parsed.map((key) => key.kid).filter((kid) => kid !== undefined);
  if (new Set(kids).size !== kids.length)
    throw errors.invalid('Each key in jwks needs its own kid.', { param: 'jwks' });
  if (parsed.length > 1 && kids.length !== parsed.length)
    throw errors.invalid('With more than one key in jwks, each needs a kid (the assertion header names it).', {
      param: 'jwks',
    });
  return { keys: parsed };
}
