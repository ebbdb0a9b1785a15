import type { Feature } from '../platform/feature.ts';
import type { CredentialResolver } from '../platform/http/principal.ts';
import type { AccountsDeps } from './deps.ts';
import { registerAccountRoutes } from './routes.ts';
import { resolveSession } from './sessions.ts';
import { protectFormPages } from './form-pages.ts';
import { createBrowserSessions, type BrowserSessions } from './browser-sessions.ts';

/** Accounts as the features built after it use them. */
export interface AccountsFeature extends Feature {
  /** The account a browser is signed in to, and what ends with it (src/accounts/browser-sessions.ts). */
  browserSessions: BrowserSessions;
  /** Dashboard session tokens (the `tg_session` cookie) into principals, for the server's authentication. */
  resolveSession: CredentialResolver;
}

/** Accounts: users (Argon2id passwords), dashboard sessions, the sign-up/sign-in pages and `/api/user/me`. */
export function createAccountsFeature(deps: AccountsDeps): AccountsFeature {
  const browserSessions = createBrowserSessions(deps);
  return {
    name: 'accounts',
    browserSessions,
    resolveSession: (token) => resolveSession(deps.db, deps.clock, token),
    // A path next to the pages that is none of them (`/signin/`, a method they do not take) is a page too.
    errorEnvelopes: { '/signin/': 'page', '/signup/': 'page', '/signout/': 'page' },
    register(app) {
      protectFormPages(app, deps);
      registerAccountRoutes(app, deps, browserSessions);
    },
  };
}
