import type { AppContext } from '../platform/context.ts';

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
      await ctx.db
        .insertInto('oauth_clients')
        .values({
          client_id: DEMO_CLIENT_ID,
          name: 'Echo Chat (Tollgate demo)',
          type: 'public',
          client_secret_hash: null,
          redirect_uris: JSON.stringify([redirectUri]),
          scopes: DEMO_SCOPES.join(' '),
          owner_user_id: null,
          created_at: ctx.clock.now(),
        })
        .onConflict((oc) => oc.column('client_id').doNothing())
        .execute();
      const row = await ctx.db
        .selectFrom('oauth_clients')
        .select('redirect_uris')
        .where('client_id', '=', DEMO_CLIENT_ID)
        .executeTakeFirstOrThrow();
      const uris = JSON.parse(row.redirect_uris) as string[];
      if (!uris.includes(redirectUri)) {
        await ctx.db
          .updateTable('oauth_clients')
          .set({ redirect_uris: JSON.stringify([...uris, redirectUri]) })
          .where('client_id', '=', DEMO_CLIENT_ID)
          .execute();
      }
      ctx.bus.publish('oauth:clients-changed', DEMO_CLIENT_ID);
      ensuredFor = redirectUri;
    }
    return { clientId: DEMO_CLIENT_ID, baseUrl, redirectUri };
  };
}
