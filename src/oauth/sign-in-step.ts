import type { InteractionDetails } from 'oidc-provider';
import type { SessionSignIn } from '../accounts/sessions.ts';
import { interactionPath } from './provider.ts';

/**
 * What the sign-in step of an authorization does with the browser's dashboard sign-in, before it shows the
 * sign-in form: a signed-in user is not asked for a password again when their sign-in meets what the app asked.
 *
 * Security invariants kept here:
 * - A sign-in answers the step only if it is younger than the app's `max_age` (OpenID Connect Core §3.1.2.1),
 *   measured from when the password was given (the session's start: sessions are never extended); the login is
 *   dated then, so the ID token's `auth_time` is true.
 * - `prompt=login` asks for a password given for this very request, and only a session that began with the
 *   creation of its account through this interaction's own "Create an account" link gives it (the sign-up
 *   returned to exactly this interaction's page, `signedUpFor`). A session that existed before the interaction,
 *   however recent, does not; nor one whose sign-up returned elsewhere (another interaction, in another tab or
 *   for another app, or the dashboard), nor a sign-in on `/signin` since. An interaction's uid is random and
 *   learnt only once it exists, so such a session began during it; and its page answers only the browser whose
 *   cookie names it, so a sign-up elsewhere cannot satisfy it.
 * - The step finishes only as the account the sign-in is for. When the interaction's provider session holds
 *   another account it cannot take a new one (oidc-provider refuses the resume): a sign-up made for this
 *   interaction restarts the authorization without `prompt=login`, which it met (its `max_age` kept, which the
 *   new session meets or not on its own); any other sign-in is asked for the password.
 */
export type SignInStep =
  /** The step is done: finish the interaction with this login. */
  | { kind: 'finish'; accountId: string; ts: number }
  /** The step is done, but the provider session holds another account: start the authorization again. */
  | { kind: 'restart' }
  /** Show the sign-in form. */
  | { kind: 'ask' };

/** The sign-in step of interaction `details` for the browser's dashboard sign-in (`signIn`, null: none) at `now`. */
export function signInStep(details: InteractionDetails, signIn: SessionSignIn | null, now: number): SignInStep {
  if (!signIn) return { kind: 'ask' };
  const maxAge = details.params.max_age === undefined ? Infinity : Number(details.params.max_age) * 1000;
  if (!(now - signIn.signedInAt <= maxAge)) return { kind: 'ask' };
  const madeForThis = signIn.signedUpFor === interactionPath(details.uid);
  if (details.prompt.reasons.includes('login_prompt') && !madeForThis) return { kind: 'ask' };
  const sessionAccount = details.session?.accountId;
  if (sessionAccount && sessionAccount !== signIn.userId) return madeForThis ? { kind: 'restart' } : { kind: 'ask' };
  return { kind: 'finish', accountId: signIn.userId, ts: Math.floor(signIn.signedInAt / 1000) };
}
