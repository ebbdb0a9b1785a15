import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AppContext } from '../platform/context.ts';
import { SESSION_COOKIE } from '../platform/http/principal.ts';
import {
  endSession,
  resolveSession,
  SESSION_TTL_MS,
  sessionSignIn,
  startSession,
  type SessionSignIn,
} from './sessions.ts';

/** Something else a browser is signed in to that must end when its account changes (the OAuth provider's session). */
export type BrowserSessionEnder = (request: FastifyRequest, reply: FastifyReply) => Promise<void>;

/**
 * The account a browser is signed in to (issue 14, "one account per browser"). The dashboard session is
 * the browser's one sign-in; other features that keep their own per-browser session (the OAuth provider)
 * register an ender, and every sign-in, sign-up and sign-out ends those too, so no session of a previous
 * user outlives the change.
 */
export interface BrowserSessions {
  /** The user of this browser's dashboard session, or null when it has none (or it expired). */
  userOf(request: FastifyRequest): Promise<string | null>;
  /**
   * The user of this browser's dashboard session, when they signed in to it (epoch ms) and, if the session
   * began with their sign-up, the page that sign-up returned to; or null. How old a sign-in is matters to an
   * app that bounds it (OpenID Connect's `max_age`), what it was for to one that asks for a fresh one (`prompt=login`).
   */
  signInOf(request: FastifyRequest): Promise<SessionSignIn | null>;
  /**
   * Signs the browser in as `userId`: ends its previous dashboard session and every registered session,
   * then starts a new dashboard session and sets its cookie. `signedUpFor`: the account was made just now, by a
   * sign-up that returns to that page.
   */
  signIn(
    request: FastifyRequest,
    reply: FastifyReply,
    userId: string,
    signedUpFor?: string,
  ): Promise<{ token: string; csrfToken: string }>;
  /**
   * Starts a dashboard session for `userId` (ending the previous one) but leaves the registered sessions
   * alone: for the OAuth sign-in page, whose provider session takes the same account in the same step.
   */
  startDashboardSession(
    request: FastifyRequest,
    reply: FastifyReply,
    userId: string,
  ): Promise<{ token: string; csrfToken: string }>;
  /** Signs the browser out: its dashboard session and every registered session end, and the cookie is cleared. */
  signOut(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  /** Adds a session that a sign-in or sign-out ends (called at registration). */
  onAccountChange(ender: BrowserSessionEnder): void;
}

/** The browser sessions of this service (the accounts feature offers them as `browserSessions`). */
export function createBrowserSessions(ctx: AppContext): BrowserSessions {
  const enders: BrowserSessionEnder[] = [];
  const cookieOptions = {
    path: '/',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: ctx.config.PUBLIC_BASE_URL.startsWith('https://'),
    signed: true,
    maxAge: SESSION_TTL_MS / 1000,
  };

  function tokenOf(request: FastifyRequest): string | null {
    const cookie = request.cookies[SESSION_COOKIE];
    const unsigned = cookie ? request.unsignCookie(cookie) : null;
    return unsigned?.valid && unsigned.value ? unsigned.value : null;
  }

  async function endDashboardSession(request: FastifyRequest) {
    const token = tokenOf(request);
    if (token) await endSession(ctx.db, token);
  }

  async function endOthers(request: FastifyRequest, reply: FastifyReply) {
    for (const end of enders) await end(request, reply);
  }

  async function startDashboardSession(
    request: FastifyRequest,
    reply: FastifyReply,
    userId: string,
    signedUpFor: string | null = null,
  ) {
    await endDashboardSession(request);
    const session = await startSession(ctx.db, ctx.clock, userId, signedUpFor);
    reply.setCookie(SESSION_COOKIE, session.token, cookieOptions);
    return session;
  }

  return {
    async userOf(request) {
      const token = tokenOf(request);
      if (!token) return null;
      return (await resolveSession(ctx.db, ctx.clock, token))?.userId ?? null;
    },
    async signInOf(request) {
      const token = tokenOf(request);
      return token ? sessionSignIn(ctx.db, ctx.clock, token) : null;
    },
    async signIn(request, reply, userId, signedUpFor) {
      await endOthers(request, reply);
      return startDashboardSession(request, reply, userId, signedUpFor ?? null);
    },
    startDashboardSession,
    async signOut(request, reply) {
      await endOthers(request, reply);
      await endDashboardSession(request);
      reply.clearCookie(SESSION_COOKIE, { path: '/' });
    },
    onAccountChange(ender) {
      enders.push(ender);
    },
  };
}
