import type { FastifyRequest } from 'fastify';
import type { AutoTopup, Topup } from '#wire/topups.ts';
import { principalOf } from '../../platform/http/server.ts';
import { errors } from '../../platform/errors.ts';
import { microsToCredits } from '../../platform/money.ts';
import type { Principal } from '../../platform/http/principal.ts';
import type { TopupsTable } from '../schema.ts';
import type { AutoTopupState } from '../auto.ts';

/** The security of the money routes: the dashboard's session cookie (the OpenAPI names it `session`). */
export const sessionSecurity = [{ session: [] }];

/**
 * Security invariant: buying credits and charging a saved card are the user's own acts. Only the dashboard
 * session (CSRF-checked on writes by the authentication step) reaches these routes; an app's token or an API
 * key, whatever its scopes, gets 403.
 */
export function sessionOnly(request: FastifyRequest): Principal {
  const principal = principalOf(request);
  if (principal.kind !== 'session') {
    throw errors.forbidden(
      'Top-ups and auto top-up are managed from the Tollgate dashboard (a signed-in session); an app token or API key cannot use them.',
    );
  }
  return principal;
}

/** A top-up as the API shows it. */
export function topupView(row: TopupsTable): Topup {
  return {
    id: row.id,
    kind: row.kind,
    status: row.status,
    amount: row.amount_minor / 100,
    currency: row.currency,
    credits: microsToCredits(row.credits),
    refunded: microsToCredits(row.refunded),
    disputed: microsToCredits(row.disputed),
    receiptUrl: row.receipt_url,
    failureReason: row.failure_reason,
    createdAt: new Date(row.created_at).toISOString(),
    creditedAt: row.credited_at === null ? null : new Date(row.credited_at).toISOString(),
  };
}

/** Auto top-up as the API shows it. */
export function autoTopupView(state: AutoTopupState): AutoTopup {
  return {
    enabled: state.enabled,
    threshold: microsToCredits(state.threshold),
    amount: state.amountMinor / 100,
    hasPaymentMethod: state.hasPaymentMethod,
    pending: state.inFlight !== null,
    failure: state.failure ? { reason: state.failure.reason, at: new Date(state.failure.at).toISOString() } : null,
  };
}
