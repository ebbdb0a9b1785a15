import type { Feature } from '../platform/feature.ts';
import type { BillingDeps, MeteringDeps } from './deps.ts';
import { createBilling, type Billing } from './service.ts';
import { createBillingMetrics, type BillingMetrics } from './metrics.ts';
import { registerWalletRoutes } from './routes/wallet.ts';
import { registerBillingAdminRoutes } from './routes/admin.ts';

/** Billing as the features built after it use it. */
export interface BillingFeature extends Feature {
  /** The money core: wallets, ledger, holds, spending limits (src/billing/service.ts). */
  billing: Billing;
  /** Billing's metrics, which the meter records into. */
  metrics: BillingMetrics;
}

/**
 * Billing: wallets, the double-entry ledger, holds, spending limits and the restriction errors. The sweep of
 * expired holds is its job: each process's timer runs it, and `POST /api/admin/cron/release-expired-holds`.
 */
export function createBillingFeature(deps: BillingDeps): BillingFeature {
  const billing = createBilling(deps);
  const metrics = createBillingMetrics(deps.metrics.registry, deps.db);
  const metering: MeteringDeps = { ...deps, billing, billingMetrics: metrics };
  return {
    name: 'billing',
    billing,
    metrics,
    observeError: (error) => metrics.countRefusal(error),
    jobs: [
      {
        name: 'release-expired-holds',
        description: 'Releases open holds past their expiry (each claimed atomically; safe in several processes).',
        run: () => billing.releaseExpiredHolds(),
      },
    ],
    register(app) {
      registerWalletRoutes(app, metering);
      registerBillingAdminRoutes(app, metering);
    },
  };
}
