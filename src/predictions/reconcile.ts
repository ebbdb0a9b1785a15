import type { Job } from '../platform/jobs.ts';
import type { PredictionsDeps } from './deps.ts';
import { asDb } from '../platform/db/own-tables.ts';
import { applyPredictionUpdate, settlePrediction } from './finalize.ts';
import { replicateClientOf } from './routes.ts';
import { predictionsDb } from './schema.ts';

/** A prediction not final this long after its creation is asked about: its final webhook may be lost. */
export const RECONCILE_AFTER_MS = 10 * 60_000;
/** A prediction still running is asked about again at most this often. */
export const RECHECK_EVERY_MS = 5 * 60_000;
/** A claim not settled this long after it was made is settled again (the claimer crashed or billing failed). */
export const RESETTLE_AFTER_MS = 60_000;
/** Predictions looked at per run, oldest first; the next run takes the rest. */
const BATCH = 100;

/**
 * Finishes what webhooks did not: (1) claims that were never settled are settled (billing's settle acts once
 * per hold, so this cannot double-charge); (2) predictions with no final status after
 * {@link RECONCILE_AFTER_MS} are read from Replicate (`GET /predictions/:id`) and, when Replicate says they
 * are done, finalized through the same exactly-once claim a webhook uses. Safe in several processes at once.
 */
export async function reconcilePredictions(
  ctx: PredictionsDeps,
): Promise<{ resettled: number; checked: number; finalized: number; failed: number }> {
  const now = ctx.clock.now();
  const result = { resettled: 0, checked: 0, finalized: 0, failed: 0 };

  const unsettled = await predictionsDb(ctx.db)
    .selectFrom('predictions')
    .select('id')
    .where('settled_at', 'is', null)
    .where('finalized_at', '<=', now - RESETTLE_AFTER_MS)
    .orderBy('finalized_at')
    .limit(BATCH)
    .execute();
  for (const { id } of unsettled) {
    try {
      await settlePrediction(ctx, id);
      result.resettled++;
    } catch (error) {
      result.failed++;
      ctx.log.error({ err: error, predictionId: id }, 'reconciliation could not settle a prediction');
    }
  }

  const client = replicateClientOf(ctx);
  if (!client) return result;
  const open = await predictionsDb(ctx.db)
    .selectFrom('predictions')
    .select(['id', 'replicate_id'])
    .where('finalized_at', 'is', null)
    .where('created_at', '<=', now - RECONCILE_AFTER_MS)
    .where((eb) => eb.or([eb('checked_at', 'is', null), eb('checked_at', '<=', now - RECHECK_EVERY_MS)]))
    .orderBy('created_at')
    .limit(BATCH)
    .execute();
  for (const { id, replicate_id } of open) {
    try {
      const upstream = await client.get(replicate_id);
      result.checked++;
      const applied = await predictionsDb(ctx.db)
        .transaction()
        .execute(async (trx) => {
          await trx.updateTable('predictions').set({ checked_at: now }).where('id', '=', id).execute();
          return applyPredictionUpdate(asDb(trx), upstream, now);
        });
      if (applied.finalized) {
        result.finalized++;
        ctx.log.info(
          { predictionId: id, replicateId: replicate_id, status: upstream.status },
          'reconciliation finalized a prediction whose final webhook did not come',
        );
        await settlePrediction(ctx, id);
      }
    } catch (error) {
      result.failed++;
      ctx.log.warn({ err: error, predictionId: id }, 'reconciliation could not read a prediction from Replicate');
    }
  }
  return result;
}

/** The `reconcile-predictions` job: each process's timer and `POST /api/admin/cron/reconcile-predictions`. */
export function reconcilePredictionsJob(ctx: PredictionsDeps): Job {
  return {
    name: 'reconcile-predictions',
    description:
      'Settle claimed predictions left unsettled, and ask Replicate about predictions whose final webhook has not come.',
    run: () => reconcilePredictions(ctx),
  };
}
