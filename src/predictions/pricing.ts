import { errors } from '../platform/errors.ts';

/** Prices a prediction is billed at, in micro-credits (a snapshot of the model's pricing at creation). */
export interface PredictionPricing {
  request: number;
  second: number;
  image: number;
}

/** Worst-case compute seconds when the model sets none (decisions.md "Billing"). */
export const DEFAULT_MAX_PREDICT_SECONDS = 120;
/** Most outputs a single prediction may ask for; beyond it the hold would be meaningless. */
export const MAX_OUTPUTS = 64;

/** The statuses after which Replicate changes nothing more (`aborted` is Replicate's newer form of `canceled`). */
export const TERMINAL_STATUSES: ReadonlySet<string> = new Set(['succeeded', 'failed', 'canceled', 'aborted']);

/**
 * The inputs through which Replicate models ask for several outputs: each model names its own (FLUX and
 * SDXL `num_outputs`, Imagen and Ideogram `num_images` or `number_of_images`, some `batch_size`,
 * `num_samples` or `n`).
 */
export const OUTPUT_COUNT_INPUTS: readonly string[] = [
  'num_outputs',
  'num_images',
  'number_of_images',
  'batch_size',
  'num_samples',
  'n',
];

/**
 * How many outputs the input asks for: the product of every output-count input present (a model that
 * reads two of them, a batch of `batch_size` runs of `num_outputs` each, makes that many), each an integer
 * from 1 and the product at most {@link MAX_OUTPUTS}; 1 when none is given. Reading only `num_outputs` held
 * a `num_images: 8` prediction for one image.
 */
export function outputsAsked(input: Record<string, unknown>): number {
  let outputs = 1;
  for (const name of OUTPUT_COUNT_INPUTS) {
    const asked = input[name];
    if (asked === undefined || asked === null) continue;
    if (typeof asked !== 'number' || !Number.isInteger(asked) || asked < 1 || asked > MAX_OUTPUTS) {
      throw errors.invalid(`input.${name} must be an integer from 1 to ${MAX_OUTPUTS}.`);
    }
    outputs *= asked;
    if (outputs > MAX_OUTPUTS)
      throw errors.invalid(
        `The input asks for ${outputs} outputs (${OUTPUT_COUNT_INPUTS.filter((n) => input[n] != null).join(' × ')}); at most ${MAX_OUTPUTS} per prediction.`,
      );
  }
  return outputs;
}

/** The hold: `request + second × maxPredictSeconds + image × outputs asked`, in micro-credits. */
export function worstCaseCost(pricing: PredictionPricing, maxPredictSeconds: number | null, outputs: number): number {
  const amount =
    pricing.request + pricing.second * (maxPredictSeconds ?? DEFAULT_MAX_PREDICT_SECONDS) + pricing.image * outputs;
  if (!Number.isSafeInteger(amount))
    throw errors.invalid('The worst-case cost of this prediction is too large to hold.');
  return amount;
}

/**
 * `metrics.predict_time` (seconds, a float from Replicate) as whole microseconds, or null when it is unusable: absent,
 * not a number (a string, null) or negative. Storing and pricing whole microseconds keeps floats out of the
 * arithmetic. A time too long to count (1e308, or 1e309, which JSON reads as Infinity) counts as the longest one:
 * a longer reported time never costs less than a shorter one, and the hold's seconds cap it
 * ({@link billedPredictTimeMicros}).
 */
export function predictTimeMicros(metrics: unknown): number | null {
  const seconds = (metrics as { predict_time?: unknown } | null | undefined)?.predict_time;
  if (typeof seconds !== 'number' || Number.isNaN(seconds) || seconds < 0) return null;
  return Math.min(Math.round(seconds * 1_000_000), Number.MAX_SAFE_INTEGER);
}

/** What Tollgate itself knows of a prediction it bills, beside what Replicate reported. */
export interface BillingBounds {
  /** Compute seconds the hold covers, or null when not recorded (the whole hold still caps the charge). */
  heldSeconds: number | null;
  /** Microseconds between the create and the final update, as Tollgate's clock measured them. */
  measuredUs: number;
  /** Replicate says the prediction never started (`started_at: null`). */
  neverStarted: boolean;
}

/**
 * The compute time a final prediction is billed for, in microseconds: Replicate's `predict_time` when usable
 * ({@link predictTimeMicros}); otherwise the time Tollgate measured from the create to the final update, which
 * bounds what ran from above (a provider's garbage never makes a prediction free), or 0 for one canceled before
 * Replicate started it. Never more than the hold's seconds, as no more images than were asked are charged.
 */
export function billedPredictTimeMicros(status: string, reportedUs: number | null, bounds: BillingBounds): number {
  const used =
    reportedUs ?? (CANCELED_STATUSES.has(status) && bounds.neverStarted ? 0 : Math.max(0, bounds.measuredUs));
  return bounds.heldSeconds === null ? used : Math.min(used, bounds.heldSeconds * 1_000_000);
}

/**
 * Outputs a final prediction produced: the length of an array output, else 1; for a canceled one a missing
 * (null) output is none produced yet. A `succeeded` prediction with a null output still ran and Replicate bills
 * it (models priced per output, as FLUX, cost nothing else), so it counts the one output a success implies.
 */
export function outputsProduced(output: unknown, status: string): number {
  if (Array.isArray(output)) return output.length;
  if (output !== null && output !== undefined) return 1;
  return status === 'succeeded' ? 1 : 0;
}

/** Replicate's statuses of a prediction stopped before it finished (`aborted`: its newer form of `canceled`). */
export const CANCELED_STATUSES: ReadonlySet<string> = new Set(['canceled', 'aborted']);

/**
 * Whether a final prediction is charged: one that succeeded, and one the caller canceled (for what it used, as
 * a stream the client cuts is). One that failed, or that Replicate stopped on its own, costs nothing.
 */
export function isCharged(status: string, cancelRequested: boolean): boolean {
  return status === 'succeeded' || (cancelRequested && CANCELED_STATUSES.has(status));
}

/**
 * What a charged prediction ({@link isCharged}) costs: `request + second × predict_time + image × outputs`, where
 * `predictTimeUs` is the time billed ({@link billedPredictTimeMicros}) and the outputs are those produced
 * ({@link outputsProduced}), never more than the `outputsAsked` the hold covers (the images route caps at `n`
 * the same way).
 *
 * Rounding: the compute part is `second × predict_time` with predict_time taken to the microsecond, rounded
 * UP to a whole micro-credit (exact integer arithmetic, BigInt), so a fraction of a micro-credit is never lost
 * to the house's disadvantage and never more than one micro-credit is added. Any other prediction costs
 * nothing. The settlement caps the capture at the hold.
 */
export function actualCost(
  pricing: PredictionPricing,
  status: string,
  predictTimeUs: number,
  output: unknown,
  cancelRequested: boolean,
  outputsAsked: number | null,
): number {
  if (!isCharged(status, cancelRequested)) return 0;
  const produced = outputsProduced(output, status);
  const outputs = outputsAsked === null ? produced : Math.min(produced, outputsAsked);
  const compute = (BigInt(pricing.second) * BigInt(predictTimeUs) + 999_999n) / 1_000_000n;
  const total = BigInt(pricing.request) + compute + BigInt(pricing.image) * BigInt(outputs);
  return total > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(total);
}
