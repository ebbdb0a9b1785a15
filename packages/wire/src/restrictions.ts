/**
 * The two restrictions a client shows a dialog for (contract §2.2, §7.2): the error object inside the
 * OpenAI-style envelope when a spending limit (429) or the wallet (402) refuses a call. The server types the
 * details it raises with these, the SDK's parser and its restriction dialog read them; amounts are credits.
 */
import Type, { type Static } from 'typebox';

/** What a spending-limit refusal adds to `code`, `message` and `type`. */
export const SpendingLimitDetailsSchema = Type.Object({
  limitType: Type.String({ description: '`daily`, `weekly` (Monday 00:00 UTC), `monthly` or `total`.' }),
  limit: Type.Number({ description: 'The configured limit, in credits.' }),
  current: Type.Number({ description: 'Spent plus held in the period, in credits.' }),
  requested: Type.Number({ description: 'What the request would cost at most, in credits.' }),
  resetsAt: Type.Optional(
    Type.String({
      format: 'date-time',
      description: 'When the period resets; absent for a `total` limit, which never resets.',
    }),
  ),
});

/** The figures of a spending-limit refusal. */
export type SpendingLimitDetails = Static<typeof SpendingLimitDetailsSchema>;

/** The error object of a 429 `SPENDING_LIMIT_EXCEEDED`: an app's or a key's limit would be exceeded. */
export const SpendingLimitRefusalSchema = Type.Object({
  code: Type.Literal('SPENDING_LIMIT_EXCEEDED'),
  message: Type.String(),
  type: Type.String({ description: '`spending_limit_error`.' }),
  ...SpendingLimitDetailsSchema.properties,
});

/** A spending-limit refusal as sent. */
export type SpendingLimitRefusal = Static<typeof SpendingLimitRefusalSchema>;

/** What an insufficient-credits refusal adds to `code`, `message` and `type`. */
export const InsufficientCreditsDetailsSchema = Type.Object({
  available: Type.Number({ description: 'Credits the user has available (balance minus holds).' }),
  required: Type.Number({ description: 'Credits the request needs (when the wallet owes a debt: the debt).' }),
  owed: Type.Optional(
    Type.Number({
      description:
        'Credits the wallet owes (a refunded or disputed top-up already spent); calls are refused until it is repaid.',
    }),
  ),
});

/** The figures of an insufficient-credits refusal. */
export type InsufficientCreditsDetails = Static<typeof InsufficientCreditsDetailsSchema>;

/** The error object of a 402 `INSUFFICIENT_CREDITS`: the wallet holds fewer available credits than needed. */
export const InsufficientCreditsRefusalSchema = Type.Object({
  code: Type.Literal('INSUFFICIENT_CREDITS'),
  message: Type.String(),
  type: Type.String({ description: '`insufficient_credits_error`.' }),
  ...InsufficientCreditsDetailsSchema.properties,
});

/** An insufficient-credits refusal as sent. */
export type InsufficientCreditsRefusal = Static<typeof InsufficientCreditsRefusalSchema>;
