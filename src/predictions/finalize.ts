import type { Transaction } from 'kysely';
import type { PredictionsDeps } from './deps.ts';
import type { Db } from '../platform/db/connect.ts';
import { predictionsDb } from './schema.ts';
import { Meter } from '../billing/meter.ts';
import { actualCost, billedPredictTimeMicros, isCharged, predictTimeMicros, TERMINAL_STATUSES } from './pricing.ts';
import { findPrediction, parseJson } from './store.ts';

/** What Replicate says about a prediction, from a webhook body or a `GET /predictions/:id` answer. */
export interface PredictionUpdate {
  /** Replicate's id. */
  id: string;
  status: string;
  output?: unknown;
  error?: unknown;
  metrics?: unknown;
  /** When Replicate started running it (null: it never started; undefined: not said). */
  started_at?: unknown;
}

/** What {@link applyPredictionUpdate} did. */
export interface AppliedUpdate {
  /** Our id, or null when no prediction has this Replicate id. */
  predictionId: string | null;
  /** True only for the one update that claimed the prediction's final billing; settle it after commit. */
  finalized: boolean;
}

/**
 * Replicate's error as stored: text, at most 4,000 characters, a NUL (U+0000, which PostgreSQL refuses in any
 * text value, failing the whole update) shown as U+FFFD. A model's error message may hold any character.
 */
function errorText(error: unknown): string | null {
  if (error === null || error === undefined) return null;
  return (typeof error === 'string' ? error : JSON.stringify(error)).slice(0, 4000).replaceAll('\u0000', '\uFFFD');
}

/**
 * Applies an update inside the caller's transaction (the webhook's, which also records the delivery, or
 * reconciliation's), handed over as `Db`.
 *
 * Exactly-once invariant: a terminal status claims the prediction with `UPDATE … SET finalized_at … WHERE
 * finalized_at IS NULL`. The database lets one such update change the row (PostgreSQL re-checks the condition
 * after waiting on the row lock; SQLite serialises writers), so of any number of webhooks, copies, processes
 * and reconciliation runs, exactly one sees `finalized: true`, and the charge it computed is stored with the
 * claim. Updates after the claim change nothing, so a late `processing` cannot undo a final status.
 */
export async function applyPredictionUpdate(shared: Db, update: PredictionUpdate, now: number): Promise<AppliedUpdate> {
  const trx = predictionsDb(shared);
  const row = await trx.selectFrom('predictions').selectAll().where('replicate_id', '=', update.id).executeTakeFirst();
  if (!row) return { predictionId: null, finalized: false };
  if (row.finalized_at !== null) return { predictionId: row.id, finalized: false };

  const changes = {
    status: update.status,
    updated_at: now,
    ...(update.output !== undefined ? { output: JSON.stringify(update.output) } : {}),
    ...(update.error !== undefined ? { error: errorText(update.error) } : {}),
  };
  if (!TERMINAL_STATUSES.has(update.status)) {
    await trx
      .updateTable('predictions')
      .set(changes)
      .where('id', '=', row.id)
      .where('finalized_at', 'is', null)
      .execute();
    return { predictionId: row.id, finalized: false };
  }
  // Upstream usage is not trusted as sent: the time billed falls back on Tollgate's own measure, within the hold.
  const reportedUs = predictTimeMicros(update.metrics);
  const predictTimeUs = billedPredictTimeMicros(update.status, reportedUs, {
    heldSeconds: row.held_seconds,
    measuredUs: (now - row.created_at) * 1000,
    neverStarted: update.started_at === null,
  });
  const pricing = { request: row.price_request, second: row.price_second, image: row.price_image };
  const charge = actualCost(
    pricing,
    update.status,
    predictTimeUs,
    // A final notice without an output is billed on the output it leaves shown: the one seen before.
    update.output !== undefined ? update.output : parseJson(row.output),
    row.cancel_requested_at !== null,
    row.outputs_asked,
  );
  const claimed = await trx
    .updateTable('predictions')
    // The time shown is the time billed; an uncharged prediction shows only what Replicate reported.
    .set({
      ...changes,
      predict_time_us:
        reportedUs === null && !isCharged(update.status, row.cancel_requested_at !== null) ? null : predictTimeUs,
      charge,
      finalized_at: now,
    })
    .where('id', '=', row.id)
    .where('finalized_at', 'is', null)
    .executeTakeFirst();
  return { predictionId: row.id, finalized: Number(claimed.numUpdatedRows) === 1 };
}

/**
 * Settles the hold of a claimed prediction for the charge stored with the claim: `succeeded`, or canceled by
 * the caller, captures it (the rest is released); `failed`, or canceled by Replicate, releases everything. Runs after the claim committed; when it
 * does not complete (a crash, billing down), reconciliation runs it again later.
 *
 * The prediction's `settled_at` and its usage record are written in the settle's own transaction, by the
 * call that closes the hold: the charge, its usage row and the settled mark commit together or not at all,
 * and a repeated run (which finds the hold closed) writes neither twice.
 */
export async function settlePrediction(
  ctx: PredictionsDeps,
  predictionId: string,
): Promise<{ captured: number } | null> {
  const row = await findPrediction(ctx.db, predictionId);
  if (!row || row.finalized_at === null || row.settled_at !== null) return null;
  const charged = isCharged(row.status, row.cancel_requested_at !== null);
  const now = ctx.clock.now();
  let closed = false;
  const companionWrites = async (trx: Db, { captured }: { captured: number }) => {
    closed = true;
    await predictionsDb(trx)
      .updateTable('predictions')
      .set({ settled_at: now, captured })
      .where('id', '=', row.id)
      .execute();
  };
  // The meter writes the usage record with the close; only the close that acts writes it.
  const meter = Meter.resume(ctx, {
    owner: { userId: row.user_id, appId: row.app_id, keyId: row.key_id },
    kind: 'prediction',
    holdId: row.hold_id,
    held: row.held,
    latencyMs: Math.max(0, row.finalized_at! - row.created_at),
  });
  const model = { id: row.model };
  const captured = charged
    ? await meter.settle(
        {
          model,
          cost: row.charge ?? 0,
          promptTokens: 0,
          completionTokens: 0,
          status: row.status === 'succeeded' ? 'ok' : 'client_aborted',
        },
        { description: `Prediction ${row.model}`, companionWrites },
      )
    : (await meter.release(model, row.status === 'failed' ? 'failed' : 'canceled', { companionWrites }), 0);
  if (!closed) {
    // The hold was no longer open: settled by a concurrent run (which recorded it) or released.
    ctx.log.warn({ predictionId, holdId: row.hold_id }, 'prediction hold was no longer open at settlement');
    await predictionsDb(ctx.db)
      .updateTable('predictions')
      .set({ settled_at: now, captured: 0 })
      .where('id', '=', row.id)
      .where('settled_at', 'is', null)
      .execute();
    return null;
  }
  const outcome = { captured };
  return { captured: outcome.captured };
}
