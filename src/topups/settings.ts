import type Stripe from 'stripe';
import type { PlatformConfig } from '../platform/config.ts';
import type { TopupsConfig } from './config.ts';

type Config = PlatformConfig & TopupsConfig;
import { ApiError, errors } from '../platform/errors.ts';
import { ConfigError } from '../platform/config.ts';
import { groupThousands, MAX_CREDITS, MAX_MICROS } from '../platform/money.ts';

/** Micro-credits per credit, times the minor units (cents) per unit of currency. */
const MICROS_PER_CREDIT_PER_MINOR = 1_000_000 / 100;

/** How top-ups are sold, read once from the configuration. Amounts are in whole units of `currency`. */
export interface TopupSettings {
  enabled: boolean;
  currency: string;
  amounts: number[];
  minAmount: number;
  maxAmount: number;
  creditsPerUnit: number;
  /** Micro-credits below which the dashboard warns. */
  lowBalance: number;
}

/**
 * Reads the top-up settings; top-ups are on only with both Stripe secrets. Amounts that could never be sold
 * stop the start: a minimum above the maximum, or a top-up of more credits than an amount can be (MAX_CREDITS),
 * which no wallet could take.
 */
export function topupSettings(config: Config): TopupSettings {
  const min = config.TOPUP_MIN_AMOUNT;
  const max = config.TOPUP_MAX_AMOUNT;
  if (min > max)
    throw new ConfigError(
      `Invalid configuration:\n  TOPUP_MIN_AMOUNT (${min}) is above TOPUP_MAX_AMOUNT (${max}): no custom top-up could be bought.`,
    );
  const largest = Math.max(max, ...config.TOPUP_AMOUNTS.split(' ').map(Number));
  if (!(largest * 100 * config.TOPUP_CREDITS_PER_UNIT * MICROS_PER_CREDIT_PER_MINOR <= MAX_MICROS))
    throw new ConfigError(
      `Invalid configuration:\n  TOPUP_CREDITS_PER_UNIT (${config.TOPUP_CREDITS_PER_UNIT}) times the largest top-up (TOPUP_MAX_AMOUNT or TOPUP_AMOUNTS: ${largest}) is more than ${groupThousands(MAX_CREDITS)} credits, the most an amount can be (and a wallet hold): lower one of them.`,
    );
  return {
    enabled: Boolean(config.STRIPE_SECRET_KEY && config.STRIPE_WEBHOOK_SECRET),
    // Stripe answers currencies in lower case; the top-ups' rows and the price checks compare with them.
    currency: config.TOPUP_CURRENCY.toLowerCase(),
    amounts: config.TOPUP_AMOUNTS.split(' ').map(Number),
    minAmount: config.TOPUP_MIN_AMOUNT,
    maxAmount: config.TOPUP_MAX_AMOUNT,
    creditsPerUnit: config.TOPUP_CREDITS_PER_UNIT,
    lowBalance: Math.round(config.LOW_BALANCE_CREDITS * 1_000_000),
  };
}

/** What the operator must set; the page and the refusals say it. */
export const HOW_TO_ENABLE =
  'Top-ups are off on this Tollgate: the operator enables them by setting STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET (see the README, "Top-ups").';

/** The refusal (403) of a top-up route while Stripe is not configured: a state of the deployment, not a fault. */
export function topupsDisabled(): ApiError {
  return new ApiError('TOPUPS_DISABLED', HOW_TO_ENABLE);
}

/**
 * Checks a requested amount (whole or with cents) against the offered amounts and the custom bounds, and
 * prices it: the minor units Stripe charges and the micro-credits bought, both exact integers.
 */
export function priceOf(settings: TopupSettings, amount: number): { amountMinor: number; credits: number } {
  const amountMinor = Math.round(amount * 100);
  const bounds = {
    amounts: settings.amounts,
    minAmount: settings.minAmount,
    maxAmount: settings.maxAmount,
    currency: settings.currency,
  };
  if (!Number.isFinite(amount) || Math.abs(amountMinor - amount * 100) > 1e-6) {
    throw errors.invalid('The amount must be a number of currency units with at most 2 decimals.', {
      ...bounds,
      param: 'amount',
    });
  }
  if (!settings.amounts.includes(amount) && (amount < settings.minAmount || amount > settings.maxAmount)) {
    const range = `between ${settings.minAmount} and ${settings.maxAmount} ${settings.currency.toUpperCase()}`;
    throw errors.invalid(`The amount must be one of ${settings.amounts.join(', ')} or ${range}.`, {
      ...bounds,
      param: 'amount',
    });
  }
  return { amountMinor, credits: amountMinor * settings.creditsPerUnit * MICROS_PER_CREDIT_PER_MINOR };
}

/** The `stripe` package's class. */
export type StripePackage = typeof Stripe;

/**
 * The `stripe` package, loaded only where top-ups are configured (either secret set): importing it costs
 * ~37 MB of resident memory, which a deployment without top-ups should not carry.
 */
export async function loadStripe(config: Config): Promise<StripePackage | null> {
  if (!config.STRIPE_SECRET_KEY && !config.STRIPE_WEBHOOK_SECRET) return null;
  return (await import('stripe')).default;
}

/**
 * The Stripe client: the official package, pointed at `STRIPE_API_BASE` when set (tests run a local server
 * that speaks the endpoints used). Requests carry idempotency keys, so the package's own retries are safe.
 */
export function stripeClient(config: Config, StripeClass: StripePackage | null): Stripe | null {
  if (!config.STRIPE_SECRET_KEY || !StripeClass) return null;
  const base = config.STRIPE_API_BASE ? new URL(config.STRIPE_API_BASE) : null;
  const https = base?.protocol === 'https:';
  return new StripeClass(config.STRIPE_SECRET_KEY, {
    maxNetworkRetries: 2,
    timeout: 20_000,
    appInfo: { name: 'Tollgate' },
    ...(base
      ? {
          host: base.hostname,
          port: base.port || (https ? 443 : 80),
          protocol: https ? ('https' as const) : ('http' as const),
        }
      : {}),
  });
}

/** Turns a failure of a Stripe call into the catalogue's 502, keeping Stripe's own message (never the key). */
export function paymentProviderError(error: unknown): ApiError {
  // The package's errors all carry a `type` naming their Stripe class (StripeCardError, …); matched by shape
  // so that this module does not load the package.
  const type = error instanceof Error ? (error as { type?: unknown }).type : undefined;
  // Stripe answered and said no (a declined card, a bad parameter): its own words. Anything else (the package's
  // StripeConnectionError, a network failure) never reached Stripe, and "refused" would send the user hunting
  // in the Stripe dashboard for a request Stripe never saw.
  const refused = typeof type === 'string' && type.startsWith('Stripe') && type !== 'StripeConnectionError';
  return new ApiError(
    'PAYMENT_PROVIDER_ERROR',
    refused
      ? `Stripe refused the request: ${(error as Error).message}`
      : 'Stripe could not be reached; try again in a moment.',
    { cause: error },
  );
}
