import type { FastifyReply, FastifyRequest } from 'fastify';

/** The cookie a browser earns by signing in here: the accounts it signed in to, and when, signed with `COOKIE_SECRET`. */
export const DEVICE_COOKIE = 'tg_device';

/** How long a sign-in vouches for its browser. */
export const DEVICE_TTL_MS = 90 * 86_400_000;

/** Most accounts one browser's cookie remembers (the most recent sign-ins). */
const MAX_ACCOUNTS = 10;

/**
 * What a sign-in form knows of the browser it serves: whether that browser signed in to an account before, and a
 * way to remember a new sign-in. OWASP's device cookies ("Slow down online guessing attacks with device cookies"):
 * the per-address throttle, which stops one address from spraying passwords over many accounts, then does not stop
 * a person behind a shared address (an office, a campus, a carrier's NAT, a proxy without `TRUST_PROXY`) from
 * signing in to an account that browser has signed in to, however many failures strangers at that address made.
 *
 * Security invariants: the cookie is signed (an edited or made-up one vouches for nothing) and HttpOnly; an entry
 * vouches only for its own account (the SHA-256 of the normalized email, as the throttle keys it), for
 * {@link DEVICE_TTL_MS}; it lifts only the per-address throttle, never the per-account one, so a stolen cookie
 * gives no more guesses at its account than anyone has.
 */
export interface SignInDevice {
  /** Whether this browser signed in to `account` within {@link DEVICE_TTL_MS} of `now`. */
  knows(account: string, now: number): boolean;
  /** Records a sign-in to `account` at `now`: the cookie is set again, this account first. */
  remember(account: string, now: number): void;
}

interface Entry {
  account: string;
  at: number;
}

/** The device of the browser making `request`, whose renewed cookie goes out on `reply`. */
export function signInDevice(request: FastifyRequest, reply: FastifyReply, secure: boolean): SignInDevice {
  const entries = entriesOf(request);
  return {
    knows: (account, now) => entries.some((entry) => entry.account === account && now - entry.at < DEVICE_TTL_MS),
    remember(account, now) {
      const kept = entries.filter((entry) => entry.account !== account && now - entry.at < DEVICE_TTL_MS);
      const value = [{ account, at: now }, ...kept]
        .slice(0, MAX_ACCOUNTS)
        .map((entry) => `${entry.account}.${Math.floor(entry.at / 1000)}`)
        .join('~');
      reply.setCookie(DEVICE_COOKIE, value, {
        path: '/',
        httpOnly: true,
        sameSite: 'lax',
        secure,
        signed: true,
        maxAge: DEVICE_TTL_MS / 1000,
      });
    },
  };
}

/** The entries of the request's device cookie; none when it is absent, unsigned or altered. */
function entriesOf(request: FastifyRequest): Entry[] {
  const cookie = request.cookies[DEVICE_COOKIE];
  const unsigned = cookie ? request.unsignCookie(cookie) : null;
  if (!unsigned?.valid || !unsigned.value) return [];
  return unsigned.value.split('~').flatMap((text) => {
    const [account, seconds] = text.split('.');
    const at = Number(seconds) * 1000;
    return /^[0-9a-f]{32}$/.test(account ?? '') && Number.isSafeInteger(at) ? [{ account: account!, at }] : [];
  });
}
