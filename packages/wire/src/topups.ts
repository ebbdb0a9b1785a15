import Type, { type Static } from 'typebox';

/** A top-up as the API shows it. */
export const TopupSchema = Type.Object({
  id: Type.String({ examples: ['top_3kT9xQ2mN7pR4sV8wY1z'] }),
  kind: Type.Union([Type.Literal('checkout'), Type.Literal('auto')]),
  status: Type.Union([
    Type.Literal('pending'),
    Type.Literal('processing'),
    Type.Literal('succeeded'),
    Type.Literal('failed'),
    Type.Literal('expired'),
  ]),
  amount: Type.Number({ description: 'Price paid, in units of `currency`.' }),
  currency: Type.String(),
  credits: Type.Number({ description: 'Credits bought.' }),
  refunded: Type.Number({ description: 'Credits taken back by refunds.' }),
  disputed: Type.Number({ description: 'Credits taken back by an open or lost dispute.' }),
  receiptUrl: Type.Union([Type.String(), Type.Null()], { description: "Stripe's receipt, once paid." }),
  failureReason: Type.Union([Type.String(), Type.Null()]),
  createdAt: Type.String({ format: 'date-time' }),
  creditedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
});

/** A top-up (a Checkout payment or an auto top-up charge). */
export type Topup = Static<typeof TopupSchema>;

/** `GET /api/wallet/topups`: the offer (amounts, price, bounds) and a page of the top-ups. */
export const TopupsPageSchema = Type.Object({
  enabled: Type.Boolean({ description: 'Whether top-ups are on (Stripe configured).' }),
  message: Type.Optional(Type.String({ description: 'When off: how the operator turns them on.' })),
  currency: Type.String(),
  amounts: Type.Array(Type.Number(), { description: 'Amounts offered, in units of `currency`.' }),
  minAmount: Type.Number({ description: 'Smallest custom amount.' }),
  maxAmount: Type.Number({ description: 'Largest custom amount.' }),
  creditsPerUnit: Type.Number({ description: 'Credits bought per unit of `currency`.' }),
  lowBalance: Type.Number({ description: 'Credits below which the dashboard warns.' }),
  owed: Type.Number({
    description:
      'Credits the wallet owes (a refunded or disputed top-up already spent); calls are refused until a top-up repays it.',
  }),
  topups: Type.Array(TopupSchema, {
    description: 'A page of the top-ups, newest first (`limit`, 50 by default; `cursor` for the next).',
  }),
  nextCursor: Type.Union([Type.String(), Type.Null()], {
    description: 'Asks for the next page (`?cursor=…`); null on the last.',
  }),
});

/** The top-ups page of the wallet. */
export type TopupsPage = Static<typeof TopupsPageSchema>;

/** `POST /api/wallet/topups`: the top-up started and the Stripe Checkout page to send the user to. */
export const TopupStartedSchema = Type.Object({
  topup: TopupSchema,
  url: Type.String({ description: 'The Stripe Checkout page.' }),
});

/** A top-up started. */
export type TopupStarted = Static<typeof TopupStartedSchema>;

/** `GET` and `PUT /api/wallet/auto-topup`: auto top-up's settings and state. */
export const AutoTopupSchema = Type.Object({
  enabled: Type.Boolean(),
  threshold: Type.Number({ description: 'Credits: a charge that leaves fewer available starts one top-up.' }),
  amount: Type.Number({ description: 'Units of the currency each auto top-up buys.' }),
  hasPaymentMethod: Type.Boolean({ description: 'A payment method is saved (set up through Checkout in setup mode).' }),
  pending: Type.Boolean({ description: 'An auto top-up payment is in flight.' }),
  failure: Type.Union([Type.Object({ reason: Type.String(), at: Type.String({ format: 'date-time' }) }), Type.Null()], {
    description: 'Why auto top-up was turned off (a failed payment).',
  }),
});

/** Auto top-up's settings and state. */
export type AutoTopup = Static<typeof AutoTopupSchema>;
