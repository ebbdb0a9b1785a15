import type { Feature } from '../platform/feature.ts';
import type { Job } from '../platform/jobs.ts';
import type { Billing } from './service.ts';
import { billingMigrations, usageRecordsMigrations } from './migrations.ts';
import { billingFunctionMigrations } from './pg-functions.ts';
import { createBilling } from './service.ts';
import { registerWalletRoutes } from './routes/wallet.ts';
import { registerBillingAdminRoutes } from './routes/admin.ts';

/** The sweep of expired holds: each process's timer runs it, and `POST /api/admin/cron/release-expired-holds`. */
export const releaseExpiredHoldsJob: Job = {
  name: 'release-expired-holds',
  description: 'Releases open holds past their expiry (each claimed atomically; safe in several processes).',
  run: (ctx) => ctx.services.billing.releaseExpiredHolds(),
};

/**
 * Billing: wallets, the double-entry ledger, holds, spending limits, usage records and the restriction errors. Puts the
 * {@link Billing} service at `ctx.services.billing`.
 */
export const billingFeature: Feature = {
  name: 'billing',
  migrations: { ...billingMigrations, ...usageRecordsMigrations, ...billingFunctionMigrations },
  jobs: [releaseExpiredHoldsJob],
  register(app, ctx) {
    ctx.services.billing = createBilling(ctx);
    registerWalletRoutes(app, ctx);
    registerBillingAdminRoutes(app, ctx);
  },
};
