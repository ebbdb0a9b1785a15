import type { Kysely } from 'kysely';
import type { Db } from '../platform/db/connect.ts';
import { ownTables } from '../platform/db/own-tables.ts';

/**
 * A Replicate-style asynchronous prediction made through `POST /api/v1/predictions`: who asked, which
 * model at which prices, the hold covering its worst case, and how far its billing has gone.
 *
 * Billing moves in two recorded steps so that it happens exactly once even across processes and crashes:
 * `finalized_at` is set by the one writer that claims the prediction (webhook or reconciliation) together
 * with the `charge` it computed; `settled_at` is set once the hold has been settled for that charge.
 */
export interface PredictionsTable {
  /** Our id, `pred_…`: the one users see. */
  id: string;
  /** Replicate's id: the one its webhooks and `GET /predictions/:id` carry. Unique. */
  replicate_id: string;
  user_id: string;
  app_id: string | null;
  key_id: string | null;
  /** Public model id (`<vendor>/<model>`) and what it maps to upstream. */
  model: string;
  upstream_model: string;
  hold_id: string;
  /** Micro-credits held for the worst case. */
  held: number;
  /** Pricing snapshot at creation, micro-credits: per call, per compute second, per output image. */
  price_request: number;
  price_second: number;
  price_image: number;
  /**
   * Compute seconds the hold covers (the model's `maxPredictSeconds`, or 120) and outputs it covers (asked in the
   * input): no prediction is charged for more of either. Null on predictions made before they were recorded.
   */
  held_seconds: number | null;
  outputs_asked: number | null;
  /** Replicate's status: `starting`, `processing`, `succeeded`, `failed`, `canceled`. */
  status: string;
  /** JSON of the latest output seen (null until there is one). */
  output: string | null;
  error: string | null;
  /** `metrics.predict_time` in whole microseconds (no floating point in storage). */
  predict_time_us: number | null;
  /** Micro-credits the finalizer computed (0 for a failed one, or one canceled other than by its caller). */
  charge: number | null;
  /** Micro-credits the hold's settlement actually captured. */
  captured: number | null;
  created_at: number;
  updated_at: number;
  /** Last time reconciliation asked Replicate about it. */
  checked_at: number | null;
  finalized_at: number | null;
  settled_at: number | null;
  /**
   * When the caller asked to cancel it (`POST /api/v1/predictions/:id/cancel`), or null. A prediction the caller
   * canceled is charged for what it used, as a stream the client cuts is; one Replicate canceled costs nothing.
   */
  cancel_requested_at: number | null;
}

/** The tables this feature owns: only its view (`predictionsDb`) sees them (tooling: src/testing/all-tables.ts). */
export interface PredictionsTables {
  predictions: PredictionsTable;
}

/** Predictions' view of the database: its own tables, and only those (see `ownTables`). */
export type PredictionsDb = Kysely<PredictionsTables>;

/** `db` (the shared connection, or a transaction handed over as `Db`) seen with predictions' own tables. */
export function predictionsDb(db: Db): PredictionsDb {
  return ownTables<PredictionsTables>(db);
}
