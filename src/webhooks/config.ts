import Type, { type Static } from 'typebox';

/** The inbound webhooks' settings: Replicate's signing secret. Part of the one configuration schema (src/config.ts). */
export const WebhooksConfigSection = Type.Object({
  REPLICATE_WEBHOOK_SECRET: Type.Optional(
    Type.String({
      pattern: '^whsec_[A-Za-z0-9+/=]+( whsec_[A-Za-z0-9+/=]+)*$',
      description:
        'Replicate webhook signing secret(s) `whsec_…`, space-separated during a rotation. Unset: the webhook refuses every delivery.',
    }),
  ),
});

/** This section, parsed. */
export type WebhooksConfig = Static<typeof WebhooksConfigSection>;
