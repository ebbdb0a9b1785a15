import Type, { type Static } from 'typebox';

/** The model catalogue's settings: the rate at which imported USD prices become credits. Part of the one configuration schema (src/config.ts). */
export const ModelsConfigSection = Type.Object({
  CREDITS_PER_USD: Type.Number({
    exclusiveMinimum: 0,
    default: 100,
    description: 'Credits per US dollar when provider prices are imported.',
  }),
});

/** This section, parsed. */
export type ModelsConfig = Static<typeof ModelsConfigSection>;
