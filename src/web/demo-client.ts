import type { AppContext } from '../platform/context.ts';
import { ensureFirstPartyPublicClient } from '../oauth/clients.ts';

/** The OAuth client of the demo app at `/demo/`: public (PKCE, no secret), like any browser app. */
export const DEMO_CLIENT_ID = 'app_demo';
/** What the demo asks for: the profile and the wallet for the restriction dialog, chat, and refresh tokens. */
export const DEMO_SCOPES = ['read', 'billing:read', 'ai:chat', 'offline_access'];

/** What the demo page reads from `/demo/config.json`. */
export interface DemoConfig {
  clientId: string;
  baseUrl: string;
  redirectUri: string;
}

/**
 * Registers the demo's OAuth client on first use, or adds this deployment's redirect URI to it when
 * `PUBLIC_BASE_URL` has changed since. Done lazily (not at start) so the redirect URI is the address the
 * server really answers on. Only ever widens `app_demo` to the gateway's own `/demo/` page.
 */
export function demoClientRegistrar(ctx: AppContext): () => Promise<DemoConfig> {
  let ensuredFor: string | null = null;
  return async () => {
    const baseUrl = ctx.config.PUBLIC_BASE_URL;
    const redirectUri = `${baseUrl}/demo/`;
    if (ensuredFor !== redirectUri) {
      await ensureFirstPartyPublicClient(ctx.db, ctx.clock, {
        clientId: DEMO_CLIENT_ID,
        name: 'Echo Chat (Tollgate demo)',
        scopes: DEMO_SCOPES,
        redirectUri,
      });
      ctx.bus.publish('oauth:clients-changed', DEMO_CLIENT_ID);
      ensuredFor = redirectUri;
    }
    return { clientId: DEMO_CLIENT_ID, baseUrl, redirectUri };
  };
}
