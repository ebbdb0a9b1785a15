/**
 * Thin React wrappers of the SDK's web components. React (18 or 19) is a peer dependency of this entry only.
 * The components return React's `ReactElement`, so a consumer's TSX accepts them as components with either
 * version's types.
 */
import { createElement, useEffect, useRef, type ReactElement } from 'react';
import { defineTollgateElements } from './index.ts';
import type { RestrictionDialogElement, RestrictionInput } from './restriction-dialog.ts';
import type { SignInDialogElement } from './signin-dialog.ts';
import type { Restriction } from './errors.ts';
import type { TollgateClient } from './client.ts';

/** Props of {@link RestrictionDialog}. */
export interface RestrictionDialogProps {
  /** The restriction to show; null keeps the dialog closed. */
  error: RestrictionInput;
  /** The app's OAuth client_id. */
  appId: string;
  gatewayUrl: string;
  getToken: () => string | null | Promise<string | null>;
  onRetry?: (restriction: Restriction) => void;
  onClose?: () => void;
}

/** `<tollgate-restriction-dialog>` for React: opens when `error` is set. */
export function RestrictionDialog(props: RestrictionDialogProps): ReactElement {
  const ref = useRef<RestrictionDialogElement>(null);
  useEffect(() => {
    defineTollgateElements();
    const element = ref.current;
    if (!element) return;
    element.appId = props.appId;
    element.gatewayUrl = props.gatewayUrl;
    element.getToken = props.getToken;
    element.onretry = props.onRetry ?? null;
    const onClose = () => props.onClose?.();
    element.addEventListener('tollgate-close', onClose);
    element.error = props.error;
    return () => element.removeEventListener('tollgate-close', onClose);
  }, [props.error, props.appId, props.gatewayUrl, props.getToken, props.onRetry, props.onClose]);
  return createElement('tollgate-restriction-dialog', { ref });
}

/** Props of {@link SignInDialog}. */
export interface SignInDialogProps {
  client: Pick<TollgateClient, 'signIn'>;
  appName: string;
  open: boolean;
  onClose?: () => void;
}

/** `<tollgate-signin-dialog>` for React: shown while `open`; Continue starts the OAuth redirect. */
export function SignInDialog(props: SignInDialogProps): ReactElement {
  const ref = useRef<SignInDialogElement>(null);
  useEffect(() => {
    defineTollgateElements();
    const element = ref.current;
    if (!element) return;
    element.client = props.client;
    element.appName = props.appName;
    const onClose = () => props.onClose?.();
    element.addEventListener('tollgate-close', onClose);
    if (props.open) element.show();
    else element.close();
    return () => element.removeEventListener('tollgate-close', onClose);
  }, [props.open, props.client, props.appName, props.onClose]);
  return createElement('tollgate-signin-dialog', { ref });
}
