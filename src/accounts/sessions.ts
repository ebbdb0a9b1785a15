import { randomBytes } from 'node:crypto';
import type { AccountsDb } from './schema.ts';
import type { Clock } from '../platform/clock.ts';
import { sha256Hex } from '../platform/crypto.ts';
import type { Principal } from '../platform/http/principal.ts';
import { SCOPES } from '../oauth/scopes.ts';

/** How long a dashboard session lasts without signing in again. */
export const SESSION_TTL_MS = 30 * 24 * 3600 * 1000;

/**
 * Starts a session for `userId`; returns the token for the cookie (only its hash is stored). `signedUpFor` is the
 * page the sign-up that made the account returns to, when this session begins with that sign-up.
 */
export async function startSession(
  db: AccountsDb,
  clock: Clock,
  userId: string,
  signedUpFor: string | null = null,
): Promise<{ token: string; csrfToken: string; expiresAt: number }> {
  const token = randomBytes(32).toString('base64url');
  const csrfToken = randomBytes(24).toString('base64url');
  const now = clock.now();
  const expiresAt = now + SESSION_TTL_MS;
  await db
    .insertInto('sessions')
    .values({
      token_hash: sha256Hex(token),
      user_id: userId,
      csrf_token: csrfToken,
      created_at: now,
      expires_at: expiresAt,
      signed_up_for: signedUpFor,
    })
    .execute();
  return { token, csrfToken, expiresAt };
}

/** Ends the session that `token` names (no error when it is already gone). */
export async function endSession(db: AccountsDb, token: string): Promise<void> {
  await db.deleteFrom('sessions').where('token_hash', '=', sha256Hex(token)).execute();
}

/** The row of a live session that `token` names, or null when there is none or it expired. */
async function liveSession(db: AccountsDb, clock: Clock, token: string) {
  const row = await db
    .selectFrom('sessions')
    .select(['user_id', 'csrf_token', 'created_at', 'expires_at', 'signed_up_for'])
    .where('token_hash', '=', sha256Hex(token))
    .executeTakeFirst();
  return row && row.expires_at > clock.now() ? row : null;
}

/** The first-party principal of a live session: every scope, no app, no key. */
export async function resolveSession(db: AccountsDb, clock: Clock, token: string): Promise<Principal | null> {
  const row = await liveSession(db, clock, token);
  if (!row) return null;
  return {
    kind: 'session',
    userId: row.user_id,
    appId: null,
    keyId: null,
    scopes: new Set(SCOPES),
    csrfToken: row.csrf_token,
  };
}

/** How a browser is signed in: its user, when the password was given, and for what, when it was a sign-up. */
export interface SessionSignIn {
  userId: string;
  /** When the session began (epoch ms): the password was given then, as sessions are never extended. */
  signedInAt: number;
  /** The page the sign-up that began this session returned to; null when it began with a sign-in. */
  signedUpFor: string | null;
}

/** How the live session `token` names was signed in to, or null. */
export async function sessionSignIn(db: AccountsDb, clock: Clock, token: string): Promise<SessionSignIn | null> {
  const row = await liveSession(db, clock, token);
  return row
    ? { userId: row.user_id, signedInAt: Number(row.created_at), signedUpFor: row.signed_up_for ?? null }
    : null;
}
