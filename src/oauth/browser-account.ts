import type { FastifyReply, FastifyRequest } from 'fastify';
import type { InteractionDetails, Provider, SessionInstance } from 'oidc-provider';
import { OAUTH_ROUTES, OAUTH_SESSION_COOKIE } from './provider.ts';

/**
 * One account per browser (issue 14): oidc-provider keeps its own session per browser (a row of the
 * `Session` model, named by the signed `tg_oauth_session` cookie), which would otherwise outlive the
 * dashboard session and hand a later user's authorization to the previous user's account.
 *
 * Security invariants kept here:
 * - a sign-in, sign-up or sign-out of the browser destroys its provider session (accounts' browser
 *   sessions call {@link endProviderSession});
 * - an authorization request whose provider session is for another account than the browser's dashboard
 *   session (or for an account while the dashboard is signed out) starts from an empty provider session
 *   ({@link endStaleProviderSession}), so the user is asked again and no code is issued for the old account.
 */

/** Whether the request carries a provider session cookie at all (no need to load oidc-provider otherwise). */
export function hasProviderSessionCookie(request: FastifyRequest): boolean {
  return request.cookies[OAUTH_SESSION_COOKIE] !== undefined;
}

/**
 * The provider session this browser's cookie names, if it still exists. The cookie is read through
 * oidc-provider's own cookie jar, so its signature is checked with the provider's keys: a made-up id
 * names nothing.
 */
async function providerSessionOf(
  provider: Provider,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<SessionInstance | undefined> {
  const id = provider.createContext(request.raw, reply.raw).cookies.get(provider.cookieName('session'));
  return typeof id === 'string' && id ? provider.Session.find(id) : undefined;
}

/** Destroys this browser's provider session and clears its cookie (sign-in, sign-up, sign-out). */
export async function endProviderSession(
  provider: Provider,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const session = await providerSessionOf(provider, request, reply);
  if (session) await session.destroy();
  reply.clearCookie(OAUTH_SESSION_COOKIE, { path: '/' });
  reply.clearCookie(`${OAUTH_SESSION_COOKIE}.sig`, { path: '/' });
}

/**
 * Before an authorization request reaches oidc-provider: destroys the provider session when its account
 * is not the browser's dashboard user. oidc-provider then starts a fresh session and prompts for sign-in,
 * which the interaction pages answer with the dashboard user (after consent) or the sign-in form.
 */
export async function endStaleProviderSession(
  provider: Provider,
  request: FastifyRequest,
  reply: FastifyReply,
  dashboardUserId: string | null,
): Promise<void> {
  const session = await providerSessionOf(provider, request, reply);
  if (session?.accountId && session.accountId !== dashboardUserId) await session.destroy();
}

/**
 * This browser's interaction `uid` once the provider session it began with has ended (the browser signed in or
 * up to another account since: oidc-provider's interactionDetails refuses it then), or undefined. Its cookie
 * must name it, as for any interaction page. Such an interaction can never finish: only its request parameters
 * serve, to start the authorization again ({@link restartUrl}).
 */
export async function interactionOfEndedSession(
  provider: Provider,
  request: FastifyRequest,
  reply: FastifyReply,
  uid: string,
): Promise<InteractionDetails | undefined> {
  const cookie = provider.createContext(request.raw, reply.raw).cookies.get(provider.cookieName('interaction'));
  return cookie === uid ? provider.Interaction.find(uid) : undefined;
}

/**
 * The authorization request of an interaction, as a URL to start it again (after the user switched
 * accounts). `met` names what the sign-in that led here has just satisfied, dropped from the request:
 * `prompt=login` (`login`), `max_age`.
 */
export function restartUrl(details: InteractionDetails, met: ReadonlyArray<'login' | 'max_age'> = []): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(details.params)) {
    if (typeof value !== 'string') continue;
    if (met.includes('max_age') && name === 'max_age') continue;
    if (met.includes('login') && name === 'prompt') {
      const rest = value.split(' ').filter((prompt) => prompt && prompt !== 'login');
      if (rest.length) query.set(name, rest.join(' '));
      continue;
    }
    query.set(name, value);
  }
  return `${OAUTH_ROUTES.authorization}?${query}`;
}
