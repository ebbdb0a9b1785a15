import Type, { type Static } from 'typebox';

/**
 * Who may create an account, and the sign-in throttle's settings. Part of the one configuration schema
 * (src/config.ts).
 */
export const AccountsConfigSection = Type.Object({
  SIGNUP: Type.Union([Type.Literal('open'), Type.Literal('closed')], {
    default: 'open',
    description:
      'Whether anyone reaching the service may create an account (`open`), or only the operator (`closed`: `POST /api/admin/users` or `tollgate create-user`). Closed, the sign-up API answers 403 `SIGNUP_CLOSED`, the `/signup` page says to ask the operator, and no page links to it.',
  }),
  SIGNIN_FREE_FAILURES_PER_ACCOUNT: Type.Integer({
    minimum: 1,
    default: 5,
    description:
      'Sign-in attempts an account may fail before each further one must wait a growing delay (1 s, 2 s, 4 s… up to `SIGNIN_MAX_DELAY_SECONDS`); a success clears them.',
  }),
  SIGNIN_FREE_FAILURES_PER_ADDRESS: Type.Integer({
    minimum: 1,
    default: 20,
    description:
      "Failed sign-ins one client address may make (into any accounts) before each further attempt must wait a growing delay; they are forgotten at the same rate, this many an hour, and an account's own typos are forgiven when it signs in.",
  }),
  SIGNIN_MAX_DELAY_SECONDS: Type.Integer({
    minimum: 0,
    default: 900,
    description:
      'Longest wait the sign-in throttle imposes; 0 turns the throttle off. Failures are forgotten after a day without any.',
  }),
});

/** This section, parsed. */
export type AccountsConfig = Static<typeof AccountsConfigSection>;
