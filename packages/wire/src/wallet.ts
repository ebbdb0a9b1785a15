import Type, { type Static } from 'typebox';

/** `GET /api/wallet/balance` (decisions.md "Reads…"): credits the user owns, holds, and can spend. */
export const BalanceSchema = Type.Object({
  balance: Type.Number({ description: 'Credits the user owns (available + reserved).' }),
  reserved: Type.Number({ description: 'Credits held by calls in flight.' }),
  available: Type.Number({ description: 'Credits that can be spent now.' }),
  currency: Type.Literal('credits'),
});

/** The wallet balance in credits. */
export type Balance = Static<typeof BalanceSchema>;

/** One movement of the wallet (`GET /api/wallet/transactions`). */
export const TransactionSchema = Type.Object({
  id: Type.String({ examples: ['txn_3kT9xQ2mN7pR4sV8wY1z'] }),
  type: Type.Union(
    [
      Type.Literal('grant'),
      Type.Literal('topup'),
      Type.Literal('adjustment'),
      Type.Literal('hold'),
      Type.Literal('capture'),
      Type.Literal('release'),
      Type.Literal('expiry'),
      Type.Literal('refund'),
      Type.Literal('dispute'),
    ],
    { description: 'The kind of movement.' },
  ),
  amount: Type.Number({
    description:
      'Change of the balance in credits (+ grant, top-up, refund of a charge, won dispute; − capture, refunded or disputed top-up; 0 for hold, release, expiry).',
  }),
  held: Type.Number({ description: 'Change of the reserved credits (+ hold; − settle, release, expiry).' }),
  balanceAfter: Type.Number({ description: 'Balance just after this movement.' }),
  description: Type.String(),
  createdAt: Type.String({ format: 'date-time' }),
  holdId: Type.Optional(Type.String()),
});

/** One movement of the wallet. */
export type Transaction = Static<typeof TransactionSchema>;

/** `GET /api/wallet/transactions`: one page of movements, newest first. */
export const TransactionsPageSchema = Type.Object({
  transactions: Type.Array(TransactionSchema),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
});

/** One page of wallet movements; `nextCursor` asks for the next (null on the last). */
export type TransactionsPage = Static<typeof TransactionsPageSchema>;
