/**
 * @tollgate/sdk: sign a user in to Tollgate with OAuth (authorization code + PKCE), call the gateway with
 * their token, and show why a request was refused. No framework needed; `@tollgate/sdk/react` wraps the
 * dialogs for React.
 */
import { defineRestrictionDialog } from './restriction-dialog.ts';
import { defineSignInDialog } from './signin-dialog.ts';

export { createTollgateClient, TollgateOAuthError } from './client.ts';
export type { TollgateClient, TollgateClientOptions, AuthorizationRequest } from './client.ts';
export {
  classifyResponse,
  readOrThrow,
  isSpendingLimitError,
  isInsufficientCreditsError,
  TollgateError,
  TollgateRestrictionError,
  TollgateRequestError,
} from './errors.ts';
export type {
  Restriction,
  SpendingLimitRestriction,
  InsufficientCreditsRestriction,
  OtherRestriction,
} from './errors.ts';
export { randomToken, s256Challenge } from './pkce.ts';
export { memoryStorage, type TollgateStorage } from './storage.ts';
export { readServerSentEvents, type ServerSentEvent } from './sse.ts';
export { formatCredits, formatDuration, resetsIn, percentOf } from './format.ts';
export { toRestriction, type RestrictionDialogElement, type RestrictionInput } from './restriction-dialog.ts';
export type { SignInDialogElement } from './signin-dialog.ts';
export type * from './types.ts';

/** Defines `<tollgate-restriction-dialog>` and `<tollgate-signin-dialog>` (browser only; safe to call twice). */
export function defineTollgateElements(): void {
  defineRestrictionDialog();
  defineSignInDialog();
}
