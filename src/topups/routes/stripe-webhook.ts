import Type from 'typebox';
import { ApiErrorSchema } from '#wire/errors.ts';
import type Stripe from 'stripe';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { TopupRoutesDeps } from './deps.ts';
import { ApiError } from '../../platform/errors.ts';
import { HOW_TO_ENABLE, type StripePackage } from '../settings.ts';

/** Stripe's events are small; this leaves room for expanded objects. */
const WEBHOOK_BODY_LIMIT = 1024 * 1024;
/** Stripe's own default, and decisions.md's 5 minutes. */
const TOLERANCE_SECONDS = 300;
/** `t=<unix>,v1=<hex>[,v1=…]`: anything else is malformed (400), not merely unverified (401). */
const SIGNATURE_HEADER = /^t=\d+(,[a-z0-9_]+=[A-Za-z0-9+/=_-]+)+$/;

const Ack = Type.Object({
  received: Type.Literal(true),
  effect: Type.String({
    description:
      'What the event did: credited, processing, failed, expired, refunded, disputed, dispute_won, dispute_lost, auto_topup_saved, ignored.',
  }),
  topupId: Type.Optional(Type.String()),
  status: Type.Optional(
    Type.String({
      description:
        "With `ignored`: the top-up's status, which the event could not change (a success for a failed top-up, an expiry after the credit).",
    }),
  ),
  duplicate: Type.Optional(
    Type.Literal(true, { description: 'Present when this event id was already processed (by any instance).' }),
  ),
});

/**
 * `POST /api/webhooks/stripe`: Stripe's events about top-ups, refunds, disputes and auto top-up.
 *
 * Security invariant: the route's scope keeps the raw bytes (the signature covers them exactly), and nothing
 * is parsed, let alone recorded, before `stripe.webhooks.constructEvent` verified the signature with
 * STRIPE_WEBHOOK_SECRET (HMAC compared in constant time by the package) within 5 minutes of the clock.
 */
export async function registerStripeWebhook(
  app: FastifyInstance,
  ctx: TopupRoutesDeps,
  StripeClass: StripePackage | null,
): Promise<void> {
  const secret = ctx.config.STRIPE_WEBHOOK_SECRET;
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_request, body, done) =>
      done(null, body),
    );
    scope.post(
      '/api/webhooks/stripe',
      {
        bodyLimit: WEBHOOK_BODY_LIMIT,
        schema: {
          tags: ['webhooks'],
          summary: 'Receive a Stripe event (top-ups, refunds, disputes, auto top-up)',
          description:
            'Verified with STRIPE_WEBHOOK_SECRET over the raw body (Stripe-Signature); each event id is processed once, in the transaction of its ledger movement.',
          security: [],
          headers: Type.Object({ 'stripe-signature': Type.Optional(Type.String()) }),
          response: { 200: Ack, 400: ApiErrorSchema, 401: ApiErrorSchema, 409: ApiErrorSchema, 503: ApiErrorSchema },
        },
      },
      async (request: FastifyRequest) => {
        // Unconfigured: 503, so Stripe keeps the event and delivers it again once the operator sets the secrets.
        if (!secret || !StripeClass || !ctx.topups.settings.enabled)
          throw new ApiError('SERVICE_UNAVAILABLE', HOW_TO_ENABLE, {
            missingSetting: secret ? 'STRIPE_SECRET_KEY' : 'STRIPE_WEBHOOK_SECRET',
          });
        const header = request.headers['stripe-signature'];
        if (typeof header !== 'string' || !SIGNATURE_HEADER.test(header)) {
          throw new ApiError('WEBHOOK_INVALID', 'The Stripe-Signature header is missing or malformed.');
        }
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const now = ctx.clock.now();
        // The package refuses old signatures only; decisions.md refuses any more than 5 minutes away.
        if (Number(/^t=(\d+)/.exec(header)![1]) * 1000 - now > TOLERANCE_SECONDS * 1000) {
          throw new ApiError(
            'WEBHOOK_UNVERIFIED',
            "The Stripe signature's timestamp is more than 5 minutes in the future.",
          );
        }
        let event: Stripe.Event;
        try {
          event = StripeClass.webhooks.constructEvent(body, header, secret, TOLERANCE_SECONDS, undefined, now);
        } catch (error) {
          if (error instanceof StripeClass.errors.StripeSignatureVerificationError) {
            request.log.warn({ reason: error.message }, 'Stripe webhook refused');
            throw new ApiError(
              'WEBHOOK_UNVERIFIED',
              'The Stripe signature does not verify, or its timestamp is more than 5 minutes away.',
            );
          }
          throw new ApiError('WEBHOOK_INVALID', 'The Stripe event is not valid JSON.');
        }
        if (
          typeof event?.id !== 'string' ||
          typeof event.type !== 'string' ||
          typeof event.data?.object !== 'object' ||
          event.data.object === null
        ) {
          throw new ApiError('WEBHOOK_INVALID', 'The Stripe event lacks an id, a type or a data object.');
        }
        return ctx.topups.handleEvent(event);
      },
    );
  });
}
