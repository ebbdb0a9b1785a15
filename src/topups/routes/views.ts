import type { FastifyRequest } from 'fastify';
import Type from 'typebox';
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

export const TopupSchema = Type.Object({
  id: Type.String({ examples: ['top_3kT9xQ2mN7pR4sV8wY1z'] }),
  kind: Type.Union([Type.Literal('checkout'), Type.Literal('auto')]),
  status: Type.Union([
    Type.Literal('pending'),
    Type.Literal('processing'),
    Type.Literal('succeeded'),
    Type.Literal('failed'),
    Type.Literal('expired'),
  ]),
  amount: Type.Number({ description: 'Price paid, in units of `currency`.' }),
  currency: Type.String(),
  credits: Type.Number({ description: 'Credits bought.' }),
  refunded: Type.Number({ description: 'Credits taken back by refunds.' }),
  disputed: Type.Number({ description: 'Credits taken back by an open or lost dispute.' }),
  receiptUrl: Type.Union([Type.String(), Type.Null()], { description: "Stripe's receipt, once paid." }),
  failureReason: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  creditedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

/** A top-up as the API shows it. */
export function topupView(row: TopupsTable) {
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

export const AutoTopupSchema = Type.Object({
  enabled: Type.Boolean(),
  threshold: Type.Number({ description: 'Credits: a charge that leaves fewer available starts one top-up.' }),
  amount: Type.Number({ description: 'Units of the currency each auto top-up buys.' }),
  hasPaymentMethod: Type.Boolean({ description: 'A payment method is saved (set up through Checkout in setup mode).' }),
  pending: Type.Boolean({ description: 'An auto top-up payment is in flight.' }),
  failure: Type.Union([Type.Object({ reason: Type.String(), at: Type.String({ format: 'date-time' }) }), Type.Null()], {
    description: 'Why auto top-up was turned off (a failed payment).',
  }),
});

/** Auto top-up as the API shows it. */
export function autoTopupView(state: AutoTopupState) {
  return {
    enabled: state.enabled,
    threshold: microsToCredits(state.threshold),
    amount: state.amountMinor / 100,
    hasPaymentMethod: state.hasPaymentMethod,
    pending: state.inFlight !== null,
    failure: state.failure ? { reason: state.failure.reason, at: new Date(state.failure.at).toISOString() } : null,
  };
}
