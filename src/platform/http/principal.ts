import type { FastifyRequest } from 'fastify';
import { ApiError, errors } from '../errors.ts';
import { constantTimeEqual } from '../crypto.ts';

/**
 * Who is calling, whatever the credential: an app's OAuth token, an API key or the user's own dashboard
 * session all become one of these (decisions.md "Who is calling"). The scopes are plain strings here: the
 * OAuth feature declares the scopes (src/oauth/scopes.ts), the keys feature the permissions
 * (src/keys/permissions.ts), and a route names those it needs in `config.auth`.
 */
export interface Principal {
  kind: 'oauth' | 'api_key' | 'session';
  userId: string;
  /** The OAuth client acting for the user: the token's client, or the app that created the key. */
  appId: string | null;
  /** The API key used, when the credential is a key. */
  keyId: string | null;
  scopes: ReadonlySet<string>;
  /**
   * API key only, when its owner limited it to some models: the catalogue ids and `<vendor>/*` wildcards it may
   * call (the keys feature's; the models feature's `allowed.ts` applies them). Absent: every model.
   */
  models?: readonly string[];
  /** Session only: the CSRF token that writes must echo in `x-csrf-token`. */
  csrfToken?: string;
}

/** Turns a credential into a principal, or null when it is unknown, expired or revoked. */
export type CredentialResolver = (credential: string) => Promise<Principal | null>;

/**
 * The credential resolvers, given by the features that own each credential (keys, oauth, accounts) through
 * the composition root. The platform only knows how to pick one.
 */
export interface CredentialResolvers {
  /** Whether a bearer (or `x-api-key`) credential is an API key, by its form; anything else is an access token. */
  isApiKey(credential: string): boolean;
  apiKey: CredentialResolver;
  accessToken: CredentialResolver;
  session: CredentialResolver;
  /** The permissions an API key can carry (the keys feature's list), so that a key's 403 names only those. */
  keyPermissions: readonly string[];
}

declare module 'fastify' {
  interface FastifyRequest {
    principal?: Principal;
  }
}

// The scheme name is case-insensitive and may be followed by several spaces (RFC 9110 §11.1, RFC 6750 §2.1):
// clients that send `bearer …` are as right as those that send `Bearer …`.
const BEARER = /^Bearer +([\x21-\x7e]{1,4096})$/i;

/** The session cookie's name. */
export const SESSION_COOKIE = 'tg_session';

/** How a route reads credentials beyond `Authorization: Bearer` and the session cookie. */
export interface CredentialOptions {
  /**
   * Also accept the credential in `x-api-key` (Anthropic's clients send it there): an `ak_…` key or an
   * OAuth access token, resolved exactly as a bearer one. `Authorization` wins when both are sent.
   */
  apiKeyHeader?: boolean;
}

/**
 * The dashboard session the request's signed session cookie names, or null (no cookie, a forged or unsigned one,
 * or a session that ended). Reads nothing else: no bearer token, no key.
 */
export async function sessionOfCookie(request: FastifyRequest, resolve: CredentialResolver): Promise<Principal | null> {
  const cookie = request.cookies?.[SESSION_COOKIE];
  if (!cookie) return null;
  const unsigned = request.unsignCookie(cookie);
  return unsigned.valid && unsigned.value ? resolve(unsigned.value) : null;
}

/**
 * The challenge a 401 must carry (RFC 9110 §11.6.1), as RFC 6750 §3 words it for bearer credentials: no error
 * code when none was sent, `invalid_request` for a malformed one, `invalid_token` for one that was refused
 * (unknown, expired or revoked), so that a client knows to get a new token rather than retry.
 */
export function bearerChallenge(error: unknown, sent: 'none' | 'malformed' | 'credential'): unknown {
  if (!(error instanceof ApiError) || error.status !== 401) return error;
  const code = { none: '', malformed: ', error="invalid_request"', credential: ', error="invalid_token"' }[sent];
  return new ApiError(error.code, error.message, {
    details: error.details,
    status: error.status,
    headers: { ...error.headers, 'www-authenticate': `Bearer realm="tollgate"${code}` },
    cause: error.cause,
  });
}

/**
 * The credential of an `Authorization: Bearer <credential>` header, the scheme in any case and one or more
 * spaces before it (RFC 9110 §11.1, RFC 6750 §2.1); null when the header is not of that form.
 */
export function bearerCredential(header: string): string | null {
  return BEARER.exec(header)?.[1] ?? null;
}

// Module-level, so that a call does not allocate a new function for it.
function refusedCredential(error: unknown): never {
  throw bearerChallenge(error, 'credential');
}

/** Resolves the request's credential into a principal; 401 (with its challenge) when there is none or it is not valid. */
export async function authenticate(
  request: FastifyRequest,
  registry: CredentialResolvers,
  options: CredentialOptions = {},
): Promise<Principal> {
  const header = request.headers.authorization;
  if (header !== undefined) {
    const match = BEARER.exec(header);
    if (!match)
      throw bearerChallenge(errors.unauthenticated('The Authorization header must be "Bearer <token>".'), 'malformed');
    const alsoSent = options.apiKeyHeader ? request.headers['x-api-key'] : undefined;
    return resolveCredential(match[1], registry, bearerRefusal(match[1], alsoSent)).catch(refusedCredential);
  }
  const apiKey = options.apiKeyHeader ? request.headers['x-api-key'] : undefined;
  if (apiKey !== undefined) {
    const match = typeof apiKey === 'string' ? API_KEY_HEADER.exec(apiKey) : null;
    if (!match)
      throw bearerChallenge(
        errors.unauthenticated('The x-api-key header must hold one API key (ak_…) or access token.'),
        'malformed',
      );
    return resolveCredential(match[1], registry, 'The x-api-key credential is invalid, expired or revoked.').catch(
      refusedCredential,
    );
  }
  const principal = await sessionOfCookie(request, registry.session);
  if (principal) {
    const isWrite = !['GET', 'HEAD', 'OPTIONS'].includes(request.method);
    // Compared in constant time, as every other secret is; a session without a token takes no write at all.
    const echoed = request.headers['x-csrf-token'];
    const expected = principal.csrfToken;
    if (isWrite && (!expected || typeof echoed !== 'string' || !constantTimeEqual(echoed, expected))) {
      throw new ApiError('PERMISSION_DENIED', 'A dashboard write needs the x-csrf-token header of the session.');
    }
    return principal;
  }
  // A credential sent where this route does not look for it (Anthropic's clients send x-api-key on every call):
  // said so, rather than that none was sent.
  if (request.headers['x-api-key'] !== undefined)
    throw bearerChallenge(
      errors.unauthenticated(
        'This route does not read x-api-key (only the Anthropic Messages routes do): send the credential as "Authorization: Bearer <token>".',
      ),
      'malformed',
    );
  throw bearerChallenge(errors.unauthenticated(), 'none');
}

const API_KEY_HEADER = /^([\x21-\x7e]{1,4096})$/;

/**
 * What a refused `Authorization` credential is told, naming the header the client sent it in. On a route that also
 * reads `x-api-key` (Anthropic's clients send it, some with an `Authorization` beside it), a client that sent both
 * is told that Authorization was the one read: "the bearer token is invalid" sent it looking at a key it never
 * saw refused.
 */
function bearerRefusal(credential: string, apiKeyHeader: string | string[] | undefined): string {
  if (apiKeyHeader === undefined) return 'The bearer token (Authorization header) is invalid, expired or revoked.';
  if (apiKeyHeader === credential)
    return 'The credential sent in both x-api-key and Authorization is invalid, expired or revoked.';
  return 'The bearer token (Authorization header) is invalid, expired or revoked; the x-api-key header sent with it was not read, since Authorization comes first: send one credential.';
}

/** An API key (by the keys feature's form) or else an OAuth access token; 401 `refusal` when neither resolves. */
async function resolveCredential(
  credential: string,
  registry: CredentialResolvers,
  refusal: string,
): Promise<Principal> {
  const resolver = registry.isApiKey(credential) ? registry.apiKey : registry.accessToken;
  const principal = await resolver(credential);
  if (!principal) throw errors.unauthenticated(refusal);
  return principal;
}

/**
 * Throws 403 unless the principal holds at least one of `anyOf`. An API key is told only of the permissions a
 * key can carry (`keyPermissions`): asked for one it cannot have ("read"), its owner would create a key the
 * dashboard then refuses.
 */
export function requireScope(principal: Principal, anyOf: readonly string[], keyPermissions?: readonly string[]): void {
  if (anyOf.length === 0 || anyOf.some((scope) => principal.scopes.has(scope))) return;
  const quoted = (names: readonly string[]) => names.map((s) => `"${s}"`).join(' or ');
  if (principal.kind !== 'api_key') throw errors.forbidden(`This call needs the scope ${quoted(anyOf)}.`);
  const carried = keyPermissions ? anyOf.filter((scope) => keyPermissions.includes(scope)) : anyOf;
  if (carried.length === 0)
    throw errors.forbidden(
      `An API key cannot make this call, which needs the OAuth scope ${quoted(anyOf)}: use an app's access token that holds it, or the dashboard.`,
    );
  throw errors.forbidden(`This call needs the permission ${quoted(carried)}.`);
}
