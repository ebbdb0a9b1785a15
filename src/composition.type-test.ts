/**
 * Compile-time proof that the composition is explicit (checked by `tsc`, never run): a feature cannot be
 * built without the APIs it declares, so building it before them, or forgetting one, does not compile.
 */
import type { AppContext } from './platform/context.ts';
import type { Config } from './config.ts';
import { createKeysFeature } from './keys/feature.ts';
import { createBillingFeature } from './billing/feature.ts';
import { createGatewayFeature } from './gateway/feature.ts';

export function compositionOrderIsTyped(base: AppContext & { config: Config }): void {
  // @ts-expect-error keys are built with billing (a key's spending limits): not without it.
  createKeysFeature(base);
  // @ts-expect-error billing counts tokens in the rate limits that ops builds: not without them.
  createBillingFeature(base);
  // @ts-expect-error the gateway meters through billing and reads the catalogue and the providers.
  createGatewayFeature({ ...base, billing: null as never });
}
