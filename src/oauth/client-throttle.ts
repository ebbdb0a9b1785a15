import type { FastifyRequest } from 'fastify';
import type { OAuthDeps } from './deps.ts';
import { ApiError } from '../platform/errors.ts';

/**
 * The client a token, revocation or introspection request names: HTTP Basic first, else `client_id` in the
 * form, else the issuer of its client assertion.
 */
export function requestClientId(request: FastifyRequest): string | null {
  const basic = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(request.headers.authorization ?? '');
  if (basic) {
    const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    try {
      if (colon > 0) return decodeURIComponent(decoded.slice(0, colon).replaceAll('+', ' ')).slice(0, 200);
    } catch {}
    return null;
  }
  const body = request.body as Record<string, unknown> | undefined;
  const id = body?.client_id ?? assertionIssuer(body?.client_assertion);
  return typeof id === 'string' && id ? id.slice(0, 200) : null;
}

/**
 * The `iss` a `private_key_jwt` client assertion claims, unverified (client_id is optional beside one): only
 * to count the request against an app. A forged claim is a failure, counted per address as any other.
 */
function assertionIssuer(assertion: unknown): unknown {
  if (typeof assertion !== 'string' || assertion.length > 8192) return undefined;
  try {
    return JSON.parse(Buffer.from(assertion.split('.')[1] ?? '', 'base64url').toString('utf8'))?.iss;
  } catch {
    return undefined;
  }
}

/**
 * Whether the request carries client credentials (a secret in HTTP Basic or the form, or a client assertion).
 * A 2xx to such a request means the app proved itself; one without them came from a public app, or from
 * anyone at all in its name: its client_id is public, and revocation and introspection answer 200 for any
 * token, made-up ones included (RFC 7009 §2.2, RFC 7662 §2.2).
 */
export function presentsClientCredentials(request: FastifyRequest): boolean {
  // oidc-provider refuses a Basic header without a secret, but takes an empty client_secret or
  // client_assertion in the form for none at all: those prove nothing, so they do not count here.
  if (/^Basic /i.test(request.headers.authorization ?? '')) return true;
  const body = request.body as Record<string, unknown> | undefined;
  const given = (value: unknown) => typeof value === 'string' && value !== '';
  return given(body?.client_secret) || given(body?.client_assertion);
}

/** Answers given after the app proved itself with its secret (see {@link markClientProven}). */
const provenAnswers = new WeakSet<object>();

/**
 * Marks `response` as the answer to a request whose app authenticated with its secret before the grant was
 * refused (oidc-provider's `grant.error` listener calls it for `invalid_grant`, which only the grant
 * handlers raise, after client authentication). Such a refusal is an app's stale token for a user who has
 * revoked it, not a guess at the secret or at a token, so it is not counted against the app's address.
 */
export function markClientProven(response: object): void {
  provenAnswers.add(response);
}

function secondsLeftInMinute(now: number): number {
  return Math.max(1, Math.ceil((60_000 - (now % 60_000)) / 1000));
}

function limited(message: string, seconds: number): ApiError {
  return new ApiError('RATE_LIMITED', `${message} Retry after ${seconds} s.`, {
    headers: { 'retry-after': String(seconds) },
    details: { retryAfter: seconds },
  });
}

/**
 * Throttling of the client-authenticated OAuth endpoints (token, revocation, introspection), where a busy
 * server-side app exchanges codes and refreshes tokens for all its users from one address.
 *
 * Security invariants:
 * - failures of a request that carries client credentials (a wrong client secret or assertion, or any 4xx to
 *   one), or that names no app, are counted per app *and* client address: past
 *   `OAUTH_CLIENT_FAILURES_PER_MINUTE`, that address is refused for that app until the minute ends. Keyed by
 *   address too, because client ids are public: counting per app alone would let anyone lock a busy app out by
 *   sending failures in its name;
 * - failures of a request without client credentials (a public app's invalid or replayed code or refresh token)
 *   count against that app's rate per address, with its successes, not against the failure throttle: such a
 *   request guesses nothing (codes and refresh tokens carry 256 random bits, and there is no secret), while the
 *   users of a public app behind one address (an office, a carrier's NAT) each bring their own stale tokens, and
 *   30 of them a minute locked every other user of the app at that address out of signing in;
 * - except a refused grant of a confidential app that presented its right secret ({@link markClientProven}):
 *   a server-side app refreshes for thousands of users from one address, and the tokens of those who revoked
 *   it are refused; counted per address, 30 of them would lock every other user out for the minute. Only the
 *   app can send these, so they count against its own rate, like successes;
 * - successful answers of an app that proved itself (its secret or key) count only against the app's
 *   generous `RATE_LIMIT_OAUTH_CLIENT_PER_MINUTE`, which a stranger cannot use up; nothing is counted per
 *   address, so one app's server can serve any number of users;
 * - successful answers without client credentials (a public app's) count against that rate per app *and*
 *   address: anyone can send them in a public app's name (revoking or introspecting made-up tokens is a 200,
 *   and any of its users can refresh their own token in a loop), and counted per app alone 6,000 of them a
 *   minute locked every user of the app out of the token endpoint;
 * - a refused request never reaches oidc-provider: it costs no client lookup and no grant lookup;
 * - an answer is counted once it is given, so requests already in flight when the count is reached still go
 *   ahead (as many as were sent at once). Unlike the sign-in throttle, which counts a password guess before
 *   checking it, nothing checked here can be guessed: client secrets (`tgs_`), codes and refresh tokens carry
 *   256 random bits. Counting first would instead refuse a busy app's server whenever more than
 *   `OAUTH_CLIENT_FAILURES_PER_MINUTE` of its requests were in flight at once, though none of them failed.
 */
export function clientThrottle(ctx: OAuthDeps) {
  const failures = ctx.config.OAUTH_CLIENT_FAILURES_PER_MINUTE;
  const successes = ctx.config.RATE_LIMIT_OAUTH_CLIENT_PER_MINUTE;
  const failureKey = (clientId: string | null, address: string) => `oauth-fail:${clientId ?? '-'}:${address}`;
  const successKey = (clientId: string, authenticated: boolean, address: string) =>
    authenticated ? `oauth-ok:${clientId}` : `oauth-ok:${clientId}:${address}`;
  return {
    /**
     * Throws 429 RATE_LIMITED when this app (from this address) must wait; `authenticated` says whether the
     * request carries client credentials ({@link presentsClientCredentials}).
     */
    async admit(clientId: string | null, address: string, authenticated: boolean): Promise<void> {
      const { windows } = ctx.throttles;
      const now = ctx.clock.now();
      if (failures > 0 && (await windows.peek(failureKey(clientId, address), now)) >= failures) {
        throw limited(
          `Too many failed requests for this app from your address (at most ${failures} a minute).`,
          secondsLeftInMinute(now),
        );
      }
      if (
        successes > 0 &&
        clientId &&
        (await windows.peek(successKey(clientId, authenticated, address), now)) >= successes
      ) {
        throw limited(
          `This app reached its ${successes} token requests a minute${authenticated ? '' : ' from your address'}.`,
          secondsLeftInMinute(now),
        );
      }
    },
    /** Counts the answer oidc-provider gave (`response`, to know whether the app proved itself first). */
    async record(
      clientId: string | null,
      address: string,
      authenticated: boolean,
      status: number,
      response: object,
    ): Promise<void> {
      const { windows } = ctx.throttles;
      const now = ctx.clock.now();
      // A success, or a refusal only the app could have asked for: the app's own rate, not its address's; and a
      // public app's refusal, which guesses nothing: its rate at this address (see the invariants above).
      const refused = status >= 400 && status < 500;
      const ownRate =
        (status >= 200 && status < 300) ||
        provenAnswers.has(response) ||
        (refused && !authenticated && clientId !== null);
      if (ownRate) {
        if (clientId && successes > 0)
          await windows.take(successKey(clientId, authenticated, address), 1, successes, now);
      } else if (refused && failures > 0) await windows.take(failureKey(clientId, address), 1, failures, now);
    },
  };
}
