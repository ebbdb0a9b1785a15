import type { Kysely, Migration } from 'kysely';

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
  /** Replicate's status: `starting`, `processing`, `succeeded`, `failed`, `canceled`. */
  status: string;
  /** JSON of the latest output seen (null until there is one). */
  output: string | null;
  error: string | null;
  /** `metrics.predict_time` in whole microseconds (no floating point in storage). */
  predict_time_us: number | null;
  /** Micro-credits the finalizer computed (0 for a failed or canceled prediction). */
  charge: number | null;
  /** Micro-credits the hold's settlement actually captured. */
  captured: number | null;
  created_at: number;
  updated_at: number;
  /** Last time reconciliation asked Replicate about it. */
  checked_at: number | null;
  finalized_at: number | null;
  settled_at: number | null;
}

export interface PredictionsTables {
  predictions: PredictionsTable;
}

export const predictionsMigrations: Record<string, Migration> = {
  '0800_predictions': {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('predictions')
        .addColumn('id', 'text', (c) => c.primaryKey())
        .addColumn('replicate_id', 'text', (c) => c.notNull().unique())
        .addColumn('user_id', 'text', (c) => c.notNull())
        .addColumn('app_id', 'text')
        .addColumn('key_id', 'text')
        .addColumn('model', 'text', (c) => c.notNull())
        .addColumn('upstream_model', 'text', (c) => c.notNull())
        .addColumn('hold_id', 'text', (c) => c.notNull())
        .addColumn('held', 'bigint', (c) => c.notNull())
        .addColumn('price_request', 'bigint', (c) => c.notNull())
        .addColumn('price_second', 'bigint', (c) => c.notNull())
        .addColumn('price_image', 'bigint', (c) => c.notNull())
        .addColumn('status', 'text', (c) => c.notNull())
        .addColumn('output', 'text')
        .addColumn('error', 'text')
        .addColumn('predict_time_us', 'bigint')
        .addColumn('charge', 'bigint')
        .addColumn('captured', 'bigint')
        .addColumn('created_at', 'bigint', (c) => c.notNull())
        .addColumn('updated_at', 'bigint', (c) => c.notNull())
        .addColumn('checked_at', 'bigint')
        .addColumn('finalized_at', 'bigint')
        .addColumn('settled_at', 'bigint')
        .execute();
      await db.schema
        .createIndex('predictions_user_time')
        .on('predictions')
        .columns(['user_id', 'created_at'])
        .execute();
      // Reconciliation scans the open ones (and the claimed-but-unsettled ones) oldest first.
      await db.schema
        .createIndex('predictions_open')
        .on('predictions')
        .columns(['finalized_at', 'created_at'])
        .execute();
      await db.schema
        .createIndex('predictions_unsettled')
        .on('predictions')
        .columns(['settled_at', 'finalized_at'])
        .execute();
    },
  },
};
