import { ApiError } from '../platform/errors.ts';
import { escapeHtml, renderPage } from '../platform/http/page.ts';
import type { AccountsConfig } from './config.ts';

/** Whether anyone may create an account here (`SIGNUP=open`), or only the operator (`closed`). */
export function signUpOpen(config: Pick<AccountsConfig, 'SIGNUP'>): boolean {
  return config.SIGNUP === 'open';
}

const CLOSED = 'Sign-up is closed on this service: its operator creates the accounts. Ask them for one, then sign in.';

/** The refusal of a sign-up while sign-up is closed (403 `SIGNUP_CLOSED`). */
export function signUpClosed(): ApiError {
  return new ApiError('SIGNUP_CLOSED', CLOSED);
}

/**
 * What a sign-in page says to someone without an account instead of linking to sign-up, when it is closed
 * (`/signin` and an OAuth app's sign-in page).
 */
export const NO_ACCOUNT_HINT = 'New here? Ask the operator of this service for an account.';

/** The `/signup` page while sign-up is closed: no form, what to do instead, and the way to sign in. */
export function signUpClosedPage(returnTo: string): string {
  return renderPage(
    'Sign-up is closed',
    `
<h1>Sign-up is closed</h1>
<p>${escapeHtml(CLOSED)}</p>
<p class="hint" style="margin-top:16px">Have an account? <a href="/signin?return_to=${encodeURIComponent(returnTo)}">Sign in</a></p>`,
  );
}
