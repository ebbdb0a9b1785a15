import type { AppContext } from '../platform/context.ts';
import type { Billing } from '../billing/service.ts';
import { ApiError } from '../platform/errors.ts';

/**
 * The billing service predictions hold and settle through. Its `settleHold` and `releaseHold` act at most
 * once per hold (a second call answers `settled/released: false`): the second guard behind a prediction's
 * own final-billing claim.
 */
export function billingOf(ctx: AppContext): Billing {
  const billing = ctx.services.billing as Billing | undefined;
  if (!billing) throw new ApiError('SERVICE_UNAVAILABLE', 'Billing is not available.');
  return billing;
}
