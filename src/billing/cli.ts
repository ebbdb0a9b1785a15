import type { MeteringDeps } from './deps.ts';
import { errors } from '../platform/errors.ts';
import { operatorCredit } from './routes/admin.ts';
import { userIdByEmail } from '../accounts/users.ts';

/**
 * `tollgate grant-credits`: the operator's `POST /api/admin/users/:id/credits` from the shell, through the
 * same code. The user is named by id (`--user usr_…`) or email; `--amount` is credits (`--amount=-2` for an
 * adjustment).
 */
export async function grantCreditsFromCli(
  ctx: MeteringDeps,
  options: { user?: string; email?: string; amount?: string; reason?: string },
): Promise<{ userId: string; balance: number }> {
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
  const { balance } = await operatorCredit(ctx, userId!, amount, options.reason);
  return { userId: userId!, balance };
}
