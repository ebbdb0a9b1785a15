import type { StoredToken } from 'oidc-provider';
import type { AppContext } from '../platform/context.ts';
import type { Principal } from '../platform/http/principal.ts';
import { grantExists, storedPayloadId, type RevocationEvent } from './adapter.ts';
import { oauthDb } from './schema.ts';

/** The bus channel on which every process hears that OAuth tokens are gone. */
export const REVOKED_CHANNEL = 'oauth:revoked';

/** How long a resolved access token is trusted without reading the database again. */
const CACHE_MS = 30_000;
/** `authorized_apps.last_used_at` is written at most this often per user and app. */
const LAST_USED_EVERY_MS = 60_000;
const CACHE_LIMIT = 10_000;

interface Cached {
  principal: Principal;
  grantId: string;
  until: number;
}

/** Resolves OAuth access tokens into principals (the server's `accessToken` resolver), and forgets revoked ones. */
export interface AccessTokenResolver {
  resolve(token: string): Promise<Principal | null>;
  /** Drops what the event names here and tells the other processes to do the same. */
  revoked(event: RevocationEvent): void;
  /** Resolves once pending `last_used_at` writes have landed. */
  settled(): Promise<void>;
}

/**
 * Access tokens are opaque: each is looked up through oidc-provider (`AccessToken.find`, which checks
 * expiry); its grant must still exist and the user's authorization of the app must still stand. Results are cached briefly per process;
 * revocation (the revoke endpoint, a reused code or refresh token, the user revoking the app) drops them
 * here and, through the bus, in every other process, so a revoked token fails on its next use.
 */
export function createAccessTokenResolver(
  ctx: AppContext,
  findToken: (value: string) => Promise<StoredToken | undefined>,
): AccessTokenResolver {
  const cache = new Map<string, Cached>();
  const lastUsedWrites = new Map<string, number>();
  const pending = new Set<Promise<unknown>>();
  // Bumped on every revocation: a lookup that started before one must not cache what it read.
  let generation = 0;

  function forget(event: RevocationEvent): void {
    generation++;
    for (const id of event.tokens ?? []) cache.delete(id);
    const grants = new Set(event.grants ?? []);
    for (const [id, entry] of cache) {
      const app = event.app;
      if (
        grants.has(entry.grantId) ||
        (app && entry.principal.userId === app.userId && entry.principal.appId === app.clientId)
      )
        cache.delete(id);
    }
  }

  ctx.bus.subscribe(REVOKED_CHANNEL, (message) => {
    try {
      forget(JSON.parse(message) as RevocationEvent);
    } catch (error) {
      ctx.log.warn({ err: error }, 'unreadable oauth revocation message');
    }
  });

  function touchLastUsed(userId: string, clientId: string): void {
    const key = `${userId} ${clientId}`;
    const now = ctx.clock.now();
    if ((lastUsedWrites.get(key) ?? -Infinity) > now - LAST_USED_EVERY_MS) return;
    lastUsedWrites.set(key, now);
    if (lastUsedWrites.size > CACHE_LIMIT) lastUsedWrites.clear();
    const write = oauthDb(ctx.db)
      .updateTable('authorized_apps')
      .set({ last_used_at: now })
      .where('user_id', '=', userId)
      .where('client_id', '=', clientId)
      .execute()
      .catch((error) => ctx.log.warn({ err: error }, 'could not record when the app was last used'))
      .finally(() => pending.delete(write));
    pending.add(write);
  }

  return {
    async resolve(value) {
      const now = Date.now();
      // Keyed like the stored row, so that a revocation event (which carries only stored ids) finds it.
      const key = storedPayloadId('AccessToken', value);
      const hit = cache.get(key);
      if (hit && hit.until > now) {
        touchLastUsed(hit.principal.userId, hit.principal.appId!);
        return hit.principal;
      }
      cache.delete(key);

      const startedAt = generation;
      const token = await findToken(value);
      if (!token || !token.accountId || !token.clientId || !token.grantId) return null;
      if (!(await grantExists(ctx.db, token.grantId))) return null;
      const authorization = await oauthDb(ctx.db)
        .selectFrom('authorized_apps')
        .select('revoked_at')
        .where('user_id', '=', token.accountId)
        .where('client_id', '=', token.clientId)
        .executeTakeFirst();
      if (!authorization || authorization.revoked_at !== null) return null;

      const principal: Principal = {
        kind: 'oauth',
        userId: token.accountId,
        appId: token.clientId,
        keyId: null,
        scopes: new Set((token.scope ?? '').split(' ').filter(Boolean)),
      };
      if (generation === startedAt) {
        if (cache.size >= CACHE_LIMIT) cache.clear();
        cache.set(key, { principal, grantId: token.grantId, until: Math.min(now + CACHE_MS, token.exp * 1000) });
      }
      touchLastUsed(principal.userId, token.clientId);
      return principal;
    },

    revoked(event) {
      forget(event);
      ctx.bus.publish(REVOKED_CHANNEL, JSON.stringify(event));
    },

    async settled() {
      await Promise.all([...pending]);
    },
  };
}
