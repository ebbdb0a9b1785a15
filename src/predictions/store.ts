import type { Selectable } from 'kysely';
import type { PredictionsDb } from './schema.ts';
import type { Principal } from '../platform/http/principal.ts';
import { microsToCredits } from '../platform/money.ts';
import type { PredictionsTable } from './schema.ts';
import { CANCELED_STATUSES } from './pricing.ts';

/** A stored prediction row. */
export type PredictionRow = Selectable<PredictionsTable>;

/**
 * The caller's prediction by our id, or null. Objects of other users are invisible (the route answers 404).
 * A dashboard session sees all of its user's predictions; an app's token or key sees only those made under
 * the same app (a user's own keys share `app_id = null` with the dashboard), as with API keys.
 */
export async function findCallerPrediction(
  db: PredictionsDb,
  principal: Principal,
  id: string,
): Promise<PredictionRow | null> {
  let query = db.selectFrom('predictions').selectAll().where('id', '=', id).where('user_id', '=', principal.userId);
  if (principal.kind !== 'session')
    query = principal.appId === null ? query.where('app_id', 'is', null) : query.where('app_id', '=', principal.appId);
  return (await query.executeTakeFirst()) ?? null;
}

/** A prediction by our id. */
export async function findPrediction(db: PredictionsDb, id: string): Promise<PredictionRow | null> {
  return (await db.selectFrom('predictions').selectAll().where('id', '=', id).executeTakeFirst()) ?? null;
}

/** A stored JSON column (a prediction's `output`) as its value; text that is not JSON as it is. */
export function parseJson(text: string | null): unknown {
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * The prediction as the API shows it: Replicate's shape (`id`, `model`, `status`, `output`, `error`,
 * `metrics`, `urls`) with our id, plus Tollgate's own fields: `replicate_id`, `held` and `cost` in credits
 * (`cost` is null until billing is final).
 */
export function predictionResource(row: PredictionRow, publicBaseUrl: string) {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    id: row.id,
    replicate_id: row.replicate_id,
    model: row.model,
    // Replicate's `aborted` (its deadline passed before it started) is a `canceled` to clients: the replicate
    // client's wait() and run() know only succeeded, failed and canceled as final, and polled `aborted` forever.
    status: CANCELED_STATUSES.has(row.status) ? 'canceled' : row.status,
    output: parseJson(row.output),
    error: row.error,
    metrics: row.predict_time_us === null ? {} : { predict_time: row.predict_time_us / 1_000_000 },
    created_at: iso(row.created_at)!,
    completed_at: iso(row.finalized_at),
    held: microsToCredits(row.held),
    cost: row.settled_at === null ? null : microsToCredits(row.captured ?? 0),
    urls: { get: `${publicBaseUrl}/api/v1/predictions/${row.id}` },
  };
}
