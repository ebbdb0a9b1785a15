import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AccountsDeps } from './deps.ts';
import { sha256Hex } from '../platform/crypto.ts';
import { ApiError } from '../platform/errors.ts';
import { verifyCredentials, type PublicUser } from './users.ts';
import { signInDevice } from './device-cookie.ts';

const HOUR_MS = 60 * 60_000;

/** "2 minutes", "1 second": the wait in the words a person reads. */
export function waitText(seconds: number): string {
  if (seconds < 60) return `${seconds} second${seconds === 1 ? '' : 's'}`;
  const minutes = Math.ceil(seconds / 60);
  return `${minutes} minute${minutes === 1 ? '' : 's'}`;
}

/**
 * Checks an email and password under the brute-force throttle; every sign-in form (the JSON endpoint, the
 * `/signin` page and the OAuth sign-in page) goes through here. Answers the user, null for a wrong
 * password, or throws 429 RATE_LIMITED (with Retry-After and `retryAfter`) while the account or the
 * address must wait.
 *
 * Security invariants:
 * - an attempt is counted *before* the password hash is computed, so parallel guesses cannot slip past
 *   the count, and a refused attempt costs no hash;
 * - failures are counted per account (whatever address they come from: rotating forwarded addresses do
 *   not help) and per client address (spraying one password over many accounts does not either); each
 *   past the free ones makes the next attempt wait twice as long, up to `SIGNIN_MAX_DELAY_SECONDS`;
 * - a success clears its account and gives its address back every attempt that account had counted at that
 *   address (its own, and the typos before it; not those made elsewhere, which that address never counted), so
 *   people signing in from one office address never add up to a wait, however many of them mistype first; the
 *   failures that stay counted are those on accounts that do not sign in, a spray's; and an address's failures
 *   (and an account's share of them) leak away at the rate it is allowed them (`SIGNIN_FREE_FAILURES_PER_ADDRESS`
 *   an hour);
 * - accounts are keyed by the SHA-256 of the normalized email, so the counters (in Redis, maybe) hold no
 *   address book; an unknown email is throttled exactly like a known one, revealing nothing;
 * - a browser that signed in to the account before (its signed device cookie, see `SignInDevice`) is not
 *   held back by its address's count, nor adds to it: a spray from a shared address does not lock out the people
 *   behind it who signed in there before; the per-account count applies to it as to anyone.
 */
export async function checkSignIn(
  ctx: AccountsDeps,
  request: FastifyRequest,
  reply: FastifyReply,
  email: string,
  password: string,
): Promise<PublicUser | null> {
  const device = signInDevice(request, reply, ctx.config.PUBLIC_BASE_URL.startsWith('https://'));
  const maxDelayMs = ctx.config.SIGNIN_MAX_DELAY_SECONDS * 1000;
  const emailHash = sha256Hex(email.trim().toLowerCase());
  const accountHash = emailHash.slice(0, 32);
  if (maxDelayMs === 0) return remembered(await verifyCredentials(ctx.db, email, password));
  const { backoff } = ctx.throttles;
  const account = `signin:account:${emailHash}`;
  const address = `signin:address:${request.ip}`;
  const perAccount = ctx.config.SIGNIN_FREE_FAILURES_PER_ACCOUNT;
  const perAddress = ctx.config.SIGNIN_FREE_FAILURES_PER_ADDRESS;
  const knownDevice = device.knows(accountHash, ctx.clock.now());

  const forAccount = await backoff.attempt(account, perAccount, maxDelayMs, ctx.clock.now());
  if (!forAccount.allowed) throw throttled(forAccount.retryAfterSeconds, 'for this account');
  // What this account counted at this address, so that a success gives back exactly that there.
  const pair = `signin:pair:${accountHash}:${request.ip}`;
  if (!knownDevice) {
    const forAddress = await backoff.attempt(address, perAddress, maxDelayMs, ctx.clock.now(), HOUR_MS / perAddress);
    if (!forAddress.allowed) {
      await backoff.refund(account, perAccount);
      throw throttled(forAddress.retryAfterSeconds, 'from your network');
    }
    await backoff.attempt(pair, Number.MAX_SAFE_INTEGER, 0, ctx.clock.now(), HOUR_MS / perAddress);
  }

  const user = await verifyCredentials(ctx.db, email, password);
  if (user) {
    await backoff.reset(account);
    // Only what this account counted at this address goes back there: its typos made elsewhere, or from a known
    // device (counted at no address), would otherwise let an account holder erase a spray's failures here.
    const atAddress = await backoff.reset(pair);
    if (atAddress > 0) await backoff.refund(address, perAddress, atAddress);
  }
  return remembered(user);

  function remembered(user: PublicUser | null): PublicUser | null {
    if (user) device.remember(accountHash, ctx.clock.now());
    return user;
  }
}

function throttled(seconds: number, where: string): ApiError {
  return new ApiError(
    'RATE_LIMITED',
    `Too many failed sign-ins ${where}. Wait ${waitText(seconds)} before trying again.`,
    {
      headers: { 'retry-after': String(seconds) },
      details: { retryAfter: seconds },
    },
  );
}

/**
 * For the HTML sign-in pages: the message to show when `error` is the throttle's 429 (after setting its
 * status and Retry-After on `reply`), else null.
 */
export function throttleMessage(error: unknown, reply: FastifyReply): string | null {
  if (!(error instanceof ApiError) || error.code !== 'RATE_LIMITED') return null;
  reply.code(error.status).headers(error.headers);
  return error.message;
}
