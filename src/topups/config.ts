import Type, { type Static } from 'typebox';

/**
 * Stripe's zero-decimal currencies (isk excepted: the API keeps it in hundredths) and its three-decimal
 * ones (https://docs.stripe.com/currencies#minor-units).
 */
const UNSUPPORTED_CURRENCIES = [
  ...['bif', 'clp', 'djf', 'gnf', 'jpy', 'kmf', 'krw', 'mga', 'pyg', 'rwf', 'ugx', 'vnd', 'vuv', 'xaf', 'xof', 'xpf'],
  ...['bhd', 'jod', 'kwd', 'omr', 'tnd'],
];

/** A pattern matching `code` in any case: `jpy` → `[jJ][pP][yY]`. */
function anyCase(code: string): string {
  return [...code].map((c) => `[${c}${c.toUpperCase()}]`).join('');
}

/** The top-ups' settings: Stripe, the currency and amounts sold, the low-balance line. Part of the one configuration schema (src/config.ts). */
export const TopupsConfigSection = Type.Object({
  STRIPE_SECRET_KEY: Type.Optional(
    Type.String({
      pattern: '^(sk|rk)_[A-Za-z0-9_]+$',
      description:
        'Stripe secret (or restricted) key `sk_…`; with `STRIPE_WEBHOOK_SECRET` it turns self-serve top-ups on. Unset: top-ups are off (the routes answer 403 `TOPUPS_DISABLED`).',
    }),
  ),
  STRIPE_WEBHOOK_SECRET: Type.Optional(
    Type.String({
      pattern: '^whsec_[A-Za-z0-9+/=_]+$',
      description:
        'Signing secret `whsec_…` of the Stripe webhook endpoint `/api/webhooks/stripe` (or of `stripe listen`).',
    }),
  ),
  STRIPE_API_BASE: Type.Optional(
    Type.String({
      pattern: '^https?://[^/:]+(:[0-9]+)?$',
      description:
        'Stripe API address override (`http://127.0.0.1:12111`), for tests and stripe-mock. Unset: `https://api.stripe.com`.',
    }),
  ),
  TOPUP_CURRENCY: Type.String({
    // Stripe takes amounts in the currency's own minor unit; top-ups send hundredths, so a currency without
    // cents would be charged 100 times the price and one with thousandths a tenth of it. ISO 4217 codes are
    // case-insensitive (a pattern has no flags, so each letter matches either case); settings.ts lowers it.
    pattern: `^(?!(${UNSUPPORTED_CURRENCIES.map(anyCase).join('|')})$)[a-zA-Z]{3}$`,
    default: 'usd',
    description: `ISO currency of top-ups, in any case (used in lower case), with cents (amounts are sent to Stripe in hundredths): currencies without cents or with thousandths (${UNSUPPORTED_CURRENCIES.join(', ')}) are not supported.`,
  }),
  TOPUP_CREDITS_PER_UNIT: Type.Integer({
    minimum: 1,
    maximum: 1_000_000,
    default: 100,
    description:
      'Credits sold per unit of `TOPUP_CURRENCY` (the selling price; distinct from `CREDITS_PER_USD`, the cost rate of imported prices).',
  }),
  TOPUP_AMOUNTS: Type.String({
    pattern: '^[1-9][0-9]*( [1-9][0-9]*)*$',
    default: '5 10 25 50',
    description:
      'Top-up amounts the wallet page offers, in whole units of `TOPUP_CURRENCY` (1 or more), space-separated.',
  }),
  TOPUP_MIN_AMOUNT: Type.Integer({
    minimum: 1,
    default: 5,
    description: 'Smallest custom top-up (and auto top-up), in whole units of `TOPUP_CURRENCY`.',
  }),
  TOPUP_MAX_AMOUNT: Type.Integer({
    minimum: 1,
    default: 500,
    description: 'Largest custom top-up (and auto top-up), in whole units of `TOPUP_CURRENCY`.',
  }),
  AUTO_TOPUP_RECONCILE_SECONDS: Type.Integer({
    minimum: 0,
    default: 600,
    description:
      'An auto top-up still pending after this many seconds (its webhook lost, or the process died while starting it) is asked of Stripe by the `reconcile-auto-topups` job and credited or failed as its webhook would.',
  }),
  LOW_BALANCE_CREDITS: Type.Number({
    minimum: 0,
    default: 5,
    description:
      'The dashboard warns when the available credits fall below this (or below the auto top-up threshold when that is higher).',
  }),
});

/** This section, parsed. */
export type TopupsConfig = Static<typeof TopupsConfigSection>;
