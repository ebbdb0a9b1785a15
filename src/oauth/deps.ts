import type { AccountsDeps } from '../accounts/deps.ts';
import type { BrowserSessions } from '../accounts/browser-sessions.ts';
import type { Billing } from '../billing/service.ts';
import type { KeyAuthenticator } from '../keys/authenticate.ts';
import type { PlatformConfig } from '../platform/config.ts';
import type { AccountsConfig } from '../accounts/config.ts';
import type { BillingConfig } from '../billing/config.ts';
import type { OAuthConfig } from './config.ts';

/**
 * What the OAuth feature is built from: the platform and the shared throttles (OAuth clients, the sign-in
 * page), the browser's sessions (one account per browser), billing (an app's spending limits, set on
 * consent) and key authentication (revoking an app revokes the keys it created).
 */
export interface OAuthDeps extends AccountsDeps {
  config: PlatformConfig & AccountsConfig & OAuthConfig & BillingConfig;
  browserSessions: BrowserSessions;
  billing: Billing;
  keys: KeyAuthenticator;
}
