import type { MeteringDeps } from './deps.ts';
import { errors } from '../platform/errors.ts';
import { operatorCredit } from './routes/admin.ts';
import { userIdByEmail } from '../accounts/users.ts';

/**
 * `tollgate grant-credits`: the operator's `POST /api/admin/users/:id/credits` from the shell, through the
 * same code. The user is named by id (`--user usr_…`) or email; `--amount` is credits (`--amount=-2` for an
 * adjustment); `--idempotency-key` is the route's `Idempotency-Key`, for a script that may run it twice.
 */
export async function grantCreditsFromCli(
  ctx: MeteringDeps,
  options: { user?: string; email?: string; amount?: string; reason?: string; 'idempotency-key'?: string },
): Promise<{ userId: string; balance: number; replayed?: true }> {
  if (!options.user === !options.email) throw new Error('name the user with exactly one of --user usr_… or --email');
  const amount = Number(options.amount);
  if (!options.amount?.trim() || !Number.isFinite(amount))
    throw new Error('--amount must be a number of credits, for example --amount 10 or --amount=-2.5');
  let userId = options.user;
  if (options.email) {
    const id = await userIdByEmail(ctx.db, options.email);
    if (!id) throw errors.notFound('User');
    userId = id;
  }
  const key = options['idempotency-key'];
  if (key !== undefined && !/^[\x21-\x7e]{1,255}$/.test(key))
    throw new Error('--idempotency-key must be 1 to 255 printable ASCII characters, for example a UUID');
  const { balance, replayed } = await operatorCredit(ctx, userId!, amount, options.reason, key);
  return { userId: userId!, balance, ...(replayed ? { replayed: true as const } : {}) };
}
