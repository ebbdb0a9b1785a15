import Type, { type Static } from 'typebox';

/** The Responses API's settings: how long and how much is stored. Part of the one configuration schema (src/config.ts). */
export const ResponsesConfigSection = Type.Object({
  RESPONSES_RETENTION_DAYS: Type.Integer({
    minimum: 1,
    maximum: 3650,
    default: 30,
    description:
      'Days a Responses API answer made with `store: true` is kept (job `expire-responses` deletes it after).',
  }),
  RESPONSES_STORE_MAX_BYTES: Type.Integer({
    minimum: 1024,
    maximum: 104857600,
    default: 1048576,
    description:
      'Largest conversation (input items, JSON bytes) a `store: true` response keeps; more is a 413 `PAYLOAD_TOO_LARGE`.',
  }),
});

/** This section, parsed. */
export type ResponsesConfig = Static<typeof ResponsesConfigSection>;
