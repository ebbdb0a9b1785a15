import Type from 'typebox';
import { ApiErrorSchema } from '#wire/errors.ts';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { WebhooksDeps } from './deps.ts';
import type { WebhookMetrics } from './metrics.ts';
import { asDb } from '../platform/db/own-tables.ts';
import { ApiError } from '../platform/errors.ts';
import { applyPredictionUpdate, settlePrediction, type PredictionUpdate } from '../predictions/finalize.ts';
import { REPLICATE_WEBHOOK_PATH } from '../predictions/routes.ts';
import { parseSigningSecrets, verifyWebhook } from './standard-webhooks.ts';
import { webhooksDb } from './schema.ts';

/** Largest delivery accepted; Replicate's bodies carry output URLs and logs, far below this. */
const WEBHOOK_BODY_LIMIT = 4 * 1024 * 1024;
const PROVIDER = 'replicate';

const Ack = Type.Object({
  received: Type.Literal(true),
  predictionId: Type.String({ description: "The prediction id the delivery carried (Replicate's id)" }),
  status: Type.Optional(Type.String({ description: 'The status delivered (first delivery only)' })),
  charged: Type.Optional(
    Type.Boolean({ description: "Whether this delivery finalized the prediction's billing (first delivery only)" }),
  ),
  duplicate: Type.Optional(Type.Literal(true, { description: 'Present when this webhook-id was already processed' })),
});

/** The acknowledgment of contract §2.5. */
export type WebhookAck =
  | { received: true; predictionId: string; status: string; charged: boolean }
  | { received: true; duplicate: true; predictionId: string };

// A Replicate id or status is a plain word; a control character (a NUL, which PostgreSQL refuses in any text
// value) means the body is not a prediction notice.
const CONTROL_CHARACTER = /[\u0000-\u001f\u007f]/;

/**
 * Reads a verified body as a prediction notice; 400 when it is not JSON with a string `id` and `status`
 * free of control characters.
 */
export function parseNotice(body: Buffer): PredictionUpdate {
  let notice: any;
  try {
    notice = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(body));
  } catch {
    throw new ApiError('WEBHOOK_INVALID', 'The webhook body is not valid JSON.');
  }
  const valid =
    notice !== null &&
    typeof notice === 'object' &&
    !Array.isArray(notice) &&
    typeof notice.id === 'string' &&
    notice.id.length > 0 &&
    notice.id.length <= 200 &&
    !CONTROL_CHARACTER.test(notice.id) &&
    typeof notice.status === 'string' &&
    notice.status.length > 0 &&
    notice.status.length <= 50 &&
    !CONTROL_CHARACTER.test(notice.status);
  if (!valid)
    throw new ApiError('WEBHOOK_INVALID', 'The webhook body must be a prediction with a string id and status.');
  return {
    id: notice.id,
    status: notice.status,
    output: notice.output,
    error: notice.error,
    metrics: notice.metrics,
    started_at: notice.started_at,
  };
}

/**
 * Records one verified delivery and applies it, exactly once per `webhook-id`.
 *
 * Idempotency invariant: the delivery's row is inserted (`ON CONFLICT DO NOTHING`) in the same transaction
 * as the prediction update and its final-billing claim. Concurrent copies, in one process or several, race
 * on the primary key: PostgreSQL makes every other copy wait for the first to commit and then insert
 * nothing; SQLite serialises the transactions. A copy whose insert did nothing changes nothing and is
 * answered as a duplicate. The hold is settled after commit; reconciliation re-runs a settlement that did
 * not finish (see predictions/finalize.ts).
 */
export async function acceptDelivery(
  ctx: WebhooksDeps,
  webhookId: string,
  notice: PredictionUpdate,
): Promise<WebhookAck> {
  const now = ctx.clock.now();
  const outcome = await webhooksDb(ctx.db)
    .transaction()
    .execute(async (trx) => {
      const inserted = await trx
        .insertInto('webhook_deliveries')
        .values({
          provider: PROVIDER,
          webhook_id: webhookId,
          prediction_id: notice.id,
          status: notice.status,
          charged: 0,
          received_at: now,
        })
        .onConflict((oc) => oc.columns(['provider', 'webhook_id']).doNothing())
        .returning('webhook_id')
        .executeTakeFirst();
      if (!inserted) {
        const first = await trx
          .selectFrom('webhook_deliveries')
          .select('prediction_id')
          .where('provider', '=', PROVIDER)
          .where('webhook_id', '=', webhookId)
          .executeTakeFirst();
        return { duplicate: true as const, predictionId: first?.prediction_id ?? notice.id };
      }
      const applied = await applyPredictionUpdate(asDb(trx), notice, now);
      if (applied.finalized) {
        await trx
          .updateTable('webhook_deliveries')
          .set({ charged: 1 })
          .where('provider', '=', PROVIDER)
          .where('webhook_id', '=', webhookId)
          .execute();
      }
      return { duplicate: false as const, ...applied };
    });
  if (outcome.duplicate) return { received: true, duplicate: true, predictionId: outcome.predictionId };
  if (outcome.predictionId === null) {
    ctx.log.warn(
      { webhookId, replicateId: notice.id, status: notice.status },
      'Replicate webhook for an unknown prediction acknowledged without effect',
    );
  } else if (outcome.finalized) {
    await settlePrediction(ctx, outcome.predictionId);
  }
  return { received: true, predictionId: notice.id, status: notice.status, charged: outcome.finalized };
}

/**
 * `POST /api/webhooks/replicate`: Replicate's prediction notices (contract §4.6, decisions.md "Names").
 *
 * The route lives in its own encapsulated scope whose only body parser keeps the raw bytes, because the
 * signature covers the exact bytes sent: nothing is parsed, let alone recorded, before {@link verifyWebhook}
 * accepted the delivery.
 */
export async function registerReplicateWebhook(
  app: FastifyInstance,
  ctx: WebhooksDeps,
  metrics: WebhookMetrics,
): Promise<void> {
  const keys = parseSigningSecrets(ctx.config.REPLICATE_WEBHOOK_SECRET);
  const unconfigured =
    'REPLICATE_WEBHOOK_SECRET is not set, so POST /api/webhooks/replicate refuses every delivery (503): unverified traffic is never accepted.';
  // Said where it matters: a server that listens with Replicate configured (its predictions' notices would
  // be refused). Not for a deployment without Replicate, and not for the one-shot CLI commands (no listen).
  if (keys.length === 0 && ctx.config.REPLICATE_API_TOKEN)
    app.addHook('onListen', async () => ctx.log.warn(unconfigured));

  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: WEBHOOK_BODY_LIMIT }, (_request, body, done) =>
      done(null, body),
    );

    scope.post(
      REPLICATE_WEBHOOK_PATH,
      {
        bodyLimit: WEBHOOK_BODY_LIMIT,
        schema: {
          tags: ['webhooks'],
          summary: 'Receive a Replicate prediction notice (Standard Webhooks signature)',
          description:
            "Verified with REPLICATE_WEBHOOK_SECRET over the raw body; recorded once per webhook-id. A terminal status finalizes the prediction's billing once.",
          headers: Type.Object({
            'webhook-id': Type.Optional(Type.String()),
            'webhook-timestamp': Type.Optional(Type.String()),
            'webhook-signature': Type.Optional(Type.String()),
          }),
          response: { 200: Ack, 400: ApiErrorSchema, 401: ApiErrorSchema, 503: ApiErrorSchema },
        },
      },
      async (request: FastifyRequest) => {
        const count = (outcome: string) => metrics.webhookDeliveries.inc({ outcome });
        if (keys.length === 0) {
          // Logged once per request by the error handler, as a warning naming the setting (no stack).
          count('unconfigured');
          throw new ApiError(
            'SERVICE_UNAVAILABLE',
            'The Replicate webhook is not configured (REPLICATE_WEBHOOK_SECRET).',
            { missingSetting: 'REPLICATE_WEBHOOK_SECRET' },
          );
        }
        const body = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const verdict = verifyWebhook({ headers: request.headers, body }, keys, ctx.clock.now());
        if (!verdict.ok) {
          request.log.warn(
            { reason: verdict.reason, webhookId: request.headers['webhook-id'] },
            'Replicate webhook refused',
          );
          count(verdict.status === 400 ? 'invalid' : 'unverified');
          throw new ApiError(verdict.status === 400 ? 'WEBHOOK_INVALID' : 'WEBHOOK_UNVERIFIED', verdict.reason);
        }
        let notice;
        try {
          notice = parseNotice(body);
        } catch (error) {
          count('invalid');
          throw error;
        }
        const ack = await acceptDelivery(ctx, verdict.id, notice);
        count('duplicate' in ack ? 'duplicate' : ack.charged ? 'finalized' : 'recorded');
        return ack;
      },
    );
  });
}
