import Type, { type Static } from 'typebox';

/** The request-rate limits. Part of the one configuration schema (src/config.ts). */
export const OpsConfigSection = Type.Object({
  RATE_LIMIT_KEY_RPM: Type.Integer({
    minimum: 0,
    default: 600,
    description: 'Requests per minute per API key on `/api/v1/*`; 0 turns it off.',
  }),
  RATE_LIMIT_APP_RPM: Type.Integer({
    minimum: 0,
    default: 1200,
    description: 'Requests per minute per OAuth app and user on `/api/v1/*`; 0 turns it off.',
  }),
  RATE_LIMIT_KEY_TPM: Type.Integer({
    minimum: 0,
    default: 0,
    description: 'Tokens per minute per API key (and per app and user); 0 turns it off.',
  }),
  RATE_LIMIT_SIGNUP_PER_MINUTE: Type.Integer({
    minimum: 0,
    default: 10,
    description: 'Sign-ups per minute per client address (each costs a password hash); 0 turns it off.',
  }),
});

/** This section, parsed. */
export type OpsConfig = Static<typeof OpsConfigSection>;
