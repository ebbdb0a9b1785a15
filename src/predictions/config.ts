import Type, { type Static } from 'typebox';

/** The predictions' settings: how long a prediction's hold lives. Part of the one configuration schema (src/config.ts). */
export const PredictionsConfigSection = Type.Object({
  PREDICTION_HOLD_TTL_SECONDS: Type.Integer({
    minimum: 60,
    maximum: 86400,
    default: 86400,
    description:
      "Lifetime of a prediction hold, from when the prediction is stored; while Replicate answers the create it is a synchronous call's HOLD_TTL_SECONDS.",
  }),
});

/** This section, parsed. */
export type PredictionsConfig = Static<typeof PredictionsConfigSection>;
