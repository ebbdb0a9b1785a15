import type { Feature } from '../platform/feature.ts';
import { accountsMigrations } from './migrations.ts';
import { registerAccountRoutes } from './routes.ts';
import { resolveSession } from './sessions.ts';
import { protectFormPages } from './form-pages.ts';
import { createBrowserSessions } from './browser-sessions.ts';

/** Accounts: users (Argon2id passwords), dashboard sessions, the sign-up/sign-in pages and `/api/user/me`. */
export const accountsFeature: Feature = {
  name: 'accounts',
  migrations: accountsMigrations,
  register(app, ctx) {
    ctx.auth.session = (token) => resolveSession(ctx.db, ctx.clock, token);
    protectFormPages(app, ctx);
    ctx.services.browserSessions = createBrowserSessions(ctx);
    registerAccountRoutes(app, ctx);
  },
};
