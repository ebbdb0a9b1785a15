import type { Db } from '../platform/db/connect.ts';
import { keysDb, type KeysDb } from './schema.ts';
import type { Clock } from '../platform/clock.ts';
import type { Logger } from '../platform/logger.ts';
import type { InvalidationBus } from '../platform/bus.ts';
import type { Principal } from '../platform/http/principal.ts';
import { sha256Hex } from '../platform/crypto.ts';
import { errors } from '../platform/errors.ts';
import { isWellFormedApiKey } from './format.ts';
import { findLiveKeyByValue, revokeKeysOfApp, type AppKeysScope } from './store.ts';

/** The bus channel on which a revoked key's id is announced, so every process drops it from its cache. */
export const KEY_REVOKED_CHANNEL = 'keys:revoked';

/**
 * How long a resolved key is trusted from memory. A revocation reaches this process's cache at once (and
 * other processes' at once through a shared bus); this bounds the staleness when the bus does not span
 * the processes.
 */
export const KEY_CACHE_TTL_MS = 10_000;
const KEY_CACHE_MAX_ENTRIES = 10_000;

/** `lastUsed` is written at most once per this interval per key, so the hot path rarely writes. */
export const LAST_USED_INTERVAL_MS = 60_000;

/** What key authentication needs from the service. */
export interface KeyAuthDeps {
  db: KeysDb;
  clock: Clock;
  log: Logger;
  bus: InvalidationBus;
}

/** Turns `ak_…` values into principals, with an in-process cache and throttled `lastUsed` writes. */
export interface KeyAuthenticator {
  /**
   * The principal of a live key, or null when the value is malformed, unknown or revoked. An expired key
   * throws a 401 (UNAUTHENTICATED) that says when it expired.
   */
  resolve(value: string): Promise<Principal | null>;
  /** Drops a revoked key here and tells every other process to drop it. */
  forget(keyId: string): void;
  /**
   * Revokes the keys an OAuth app created (for one user, or for everyone): the step of revoking or deleting
   * an app that ends its keys. Runs on `db` (a caller's transaction, handed over with `asDb`) when given; returns the keys' ids, which
   * the caller passes to {@link forget} once that has committed (so no process caches them again meanwhile).
   */
  revokeAppKeys(scope: AppKeysScope, db?: Db): Promise<string[]>;
  /** Resolves once every `lastUsed` write started so far has finished (for shutdown and tests). */
  settled(): Promise<void>;
}

interface CachedKey {
  principal: Principal;
  /** When this process stops trusting the entry (at most {@link KEY_CACHE_TTL_MS}). */
  trustedUntil: number;
  /** When the key itself expires (epoch ms); null when never. Checked on every use, cached or not. */
  keyExpiresAt: number | null;
}

/**
 * Refuses a key whose expiry has come (`now` at or past it), saying when. Checked against the clock on every
 * use, so every process refuses it at the same moment without a message between them, and a cached entry
 * never outlives it.
 */
function refuseIfExpired(keyExpiresAt: number | null, now: number): void {
  if (keyExpiresAt !== null && now >= keyExpiresAt) {
    throw errors.unauthenticated(
      `This API key expired at ${new Date(keyExpiresAt).toISOString()}; create a new key (its owner can, in the dashboard's API keys).`,
    );
  }
}

/** Builds the `ak_…` resolver of one process; subscribes to revocations on `deps.bus`. */
export function createKeyAuthenticator({ db, clock, log, bus }: KeyAuthDeps): KeyAuthenticator {
  const byHash = new Map<string, CachedKey>();
  const hashById = new Map<string, string>();
  const lastWrittenAt = new Map<string, number>();
  const writes = new Set<Promise<void>>();
  // Counts revocations seen, so that a lookup which raced a revocation is not cached (see resolve).
  let revocations = 0;

  function drop(keyId: string): void {
    revocations++;
    const hash = hashById.get(keyId);
    if (hash !== undefined) byHash.delete(hash);
    hashById.delete(keyId);
  }
  bus.subscribe(KEY_REVOKED_CHANNEL, drop);

  function remember(hash: string, principal: Principal, keyExpiresAt: number | null, now: number): void {
    if (byHash.size >= KEY_CACHE_MAX_ENTRIES) {
      // Maps iterate in insertion order: the first entry is the oldest.
      const [oldestHash, oldest] = byHash.entries().next().value!;
      byHash.delete(oldestHash);
      hashById.delete(oldest.principal.keyId!);
    }
    byHash.set(hash, { principal, trustedUntil: now + KEY_CACHE_TTL_MS, keyExpiresAt });
    hashById.set(principal.keyId!, hash);
  }

  /**
   * Records a use without delaying the request: once a minute per key in this process, and the UPDATE's
   * own condition keeps several processes from writing more often than that between them.
   */
  function noteUse(keyId: string, now: number): void {
    const previous = lastWrittenAt.get(keyId);
    if (previous !== undefined && now - previous < LAST_USED_INTERVAL_MS) return;
    if (lastWrittenAt.size >= KEY_CACHE_MAX_ENTRIES) {
      for (const [id, at] of lastWrittenAt) if (now - at >= LAST_USED_INTERVAL_MS) lastWrittenAt.delete(id);
    }
    lastWrittenAt.set(keyId, now);
    const write = db
      .updateTable('api_keys')
      .set({ last_used_at: now })
      .where('id', '=', keyId)
      .where((eb) => eb.or([eb('last_used_at', 'is', null), eb('last_used_at', '<=', now - LAST_USED_INTERVAL_MS)]))
      .execute()
      .then(
        () => undefined,
        (error: unknown) => log.warn({ err: error, keyId }, 'could not record the use of an API key'),
      )
      .finally(() => writes.delete(write));
    writes.add(write);
  }

  return {
    async resolve(value) {
      // Invariant: a value whose checksum does not match never reaches the database.
      if (!isWellFormedApiKey(value)) return null;
      const now = clock.now();
      const hash = sha256Hex(value);
      const cached = byHash.get(hash);
      let principal: Principal | undefined;
      if (cached && cached.trustedUntil > now) {
        refuseIfExpired(cached.keyExpiresAt, now);
        principal = cached.principal;
      } else {
        if (cached) byHash.delete(hash);
        const revocationsBefore = revocations;
        const row = await findLiveKeyByValue(db, value);
        if (!row) return null;
        refuseIfExpired(row.expires_at, now);
        principal = {
          kind: 'api_key',
          userId: row.user_id,
          appId: row.app_id,
          keyId: row.id,
          scopes: new Set(JSON.parse(row.permissions) as string[]),
          // The list is fixed at creation (no route changes it), so a cached principal never holds a stale one.
          ...(row.models === null ? {} : { models: JSON.parse(row.models) as string[] }),
        };
        // A revocation that landed while the row was being read may be this key's: answer, but do not
        // keep an answer that could outlive the revocation.
        if (revocations === revocationsBefore) remember(hash, principal, row.expires_at, now);
      }
      noteUse(principal.keyId!, now);
      return principal;
    },
    forget(keyId) {
      drop(keyId);
      bus.publish(KEY_REVOKED_CHANNEL, keyId);
    },
    revokeAppKeys(scope, within) {
      return revokeKeysOfApp(within ? keysDb(within) : db, clock, scope);
    },
    async settled() {
      await Promise.all([...writes]);
    },
  };
}
