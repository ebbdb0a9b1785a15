import type { AccountsDeps } from '../accounts/deps.ts';
import type { BrowserSessions } from '../accounts/browser-sessions.ts';
import type { Billing } from '../billing/service.ts';
import type { KeyAuthenticator } from '../keys/authenticate.ts';

/**
 * What the OAuth feature is built from: the platform and the shared throttles (OAuth clients, the sign-in
 * page), the browser's sessions (one account per browser), billing (an app's spending limits, set on
 * consent) and key authentication (revoking an app revokes the keys it created).
 */
export interface OAuthDeps extends AccountsDeps {
  browserSessions: BrowserSessions;
  billing: Billing;
  keys: KeyAuthenticator;
}
