import Type from 'typebox';
import type { App } from '../../platform/http/server.ts';
import type { MeteringDeps } from '../deps.ts';
import { errors } from '../../platform/errors.ts';
import { creditsToMicros, microsToCredits, CREDITS_RULE } from '../../platform/money.ts';
import { LEDGER_DIFFERENCE_KINDS } from '../verify.ts';

const admin = { admin: true } as const;
const security = [{ admin: [] }];

/**
 * Gives or takes a user's credits: a positive amount is a grant, a negative one an adjustment (which never
 * takes more than the user has available). The CLI's `grant-credits` calls the same code.
 */
export async function operatorCredit(
  ctx: MeteringDeps,
  userId: string,
  credits: number,
  reason?: string,
  idempotencyKey?: string,
): Promise<{ balance: number; replayed: boolean }> {
  const micros = creditsToMicros(credits);
  if (micros === null || micros === 0)
    throw errors.invalid(`amount must be a non-zero number of credits ${CREDITS_RULE}.`);
  const billing = ctx.billing;
  const idempotency = idempotencyKey === undefined ? undefined : { key: idempotencyKey };
  const result =
    micros > 0
      ? await billing.grant(userId, micros, reason ?? 'Operator grant', idempotency)
      : await billing.adjust(userId, micros, reason ?? 'Operator adjustment', idempotency);
  return { balance: microsToCredits(result.balance), replayed: result.replayed === true };
}

/** What an `Idempotency-Key` may be: what Stripe's and the IETF draft's keys are (a UUID, a request id). */
export const IdempotencyKey = Type.String({
  minLength: 1,
  maxLength: 255,
  pattern: '^[\\x21-\\x7e]+$',
  description:
    "Makes a retry safe: the same key with the same request (user, amount, reason) answers the first request's `balance` again, with `Idempotent-Replayed: true`, and moves no credits; the same key with another request is refused with 422 `IDEMPOTENCY_KEY_REUSED`. Printable ASCII, up to 255 characters (a UUID, for example). Keys are kept.",
});

/** The operator's billing routes: credits and the ledger check. */
export function registerBillingAdminRoutes(app: App, ctx: MeteringDeps): void {
  app.post(
    '/api/admin/users/:id/credits',
    {
      schema: {
        tags: ['admin'],
        summary: 'Grant credits to a user (a negative amount is an adjustment)',
        security,
        params: Type.Object({ id: Type.String({ maxLength: 100 }) }),
        headers: Type.Object({ 'idempotency-key': Type.Optional(IdempotencyKey) }),
        body: Type.Object(
          {
            amount: Type.Number({
              description: `Credits ${CREDITS_RULE} either way, not zero; negative takes credits back (never below the available amount).`,
            }),
            reason: Type.Optional(Type.String({ minLength: 1, maxLength: 500 })),
          },
          { additionalProperties: false },
        ),
        response: { 200: Type.Object({ balance: Type.Number() }) },
      },
      config: admin,
    },
    async (request, reply) => {
      const { amount, reason } = request.body as { amount: number; reason?: string };
      const key = (request.headers as { 'idempotency-key'?: string })['idempotency-key'];
      const { balance, replayed } = await operatorCredit(
        ctx,
        (request.params as { id: string }).id,
        amount,
        reason,
        key,
      );
      if (replayed) reply.header('idempotent-replayed', 'true');
      return { balance };
    },
  );

  const Difference = Type.Object({
    kind: Type.Enum(LEDGER_DIFFERENCE_KINDS),
    subject: Type.String(),
    recorded: Type.Number(),
    computed: Type.Number(),
  });
  app.get(
    '/api/admin/ledger/verify',
    {
      schema: {
        tags: ['admin'],
        summary: 'Recompute every balance from the ledger and report differences',
        security,
        response: {
          200: Type.Object({
            ok: Type.Boolean(),
            wallets: Type.Integer(),
            entries: Type.Integer(),
            differences: Type.Array(Difference),
            negativeAvailable: Type.Array(Type.Object({ userId: Type.String(), available: Type.Number() })),
            expiredOpenHolds: Type.Array(
              Type.Object({
                holdId: Type.String(),
                userId: Type.String(),
                amount: Type.Number(),
                expiresAt: Type.String({ format: 'date-time' }),
              }),
            ),
          }),
        },
      },
      config: admin,
    },
    async () => ctx.billing.verify(),
  );
}
