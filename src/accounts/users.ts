import type { AccountsDb } from './schema.ts';
import { hashPassword, verifyPassword } from '../platform/crypto.ts';
import { errors } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import type { Clock } from '../platform/clock.ts';

/** A user as the API shows it (decisions.md: `GET /api/user/me`). */
export interface PublicUser {
  id: string;
  email: string;
  name: string;
  image: string | null;
  createdAt: string;
}

export const EMAIL_PATTERN = '^[^\\s@]+@[^\\s@]+\\.[^\\s@]+$';
const EMAIL = new RegExp(EMAIL_PATTERN);

export function toPublicUser(row: {
  id: string;
  email: string;
  name: string;
  image: string | null;
  created_at: number;
}): PublicUser {
  return {
    id: row.id,
    email: row.email,
    name: row.name,
    image: row.image,
    createdAt: new Date(row.created_at).toISOString(),
  };
}

/** Creates a user; 409 when the email is taken, 400 when the email or password is unusable. */
export async function createUser(
  db: AccountsDb,
  clock: Clock,
  input: { email: string; name?: string; password: string },
): Promise<PublicUser> {
  const { user, created } = await registerUser(db, clock, input);
  if (!created) throw errors.conflict('An account with this email already exists.');
  return user;
}

/** Why an email and password cannot make an account, and which of the two fields it is about; null when they can. */
export function signUpProblem(input: {
  email: string;
  password: string;
}): { field: 'email' | 'password'; message: string } | null {
  if (!EMAIL.test(input.email.trim().toLowerCase())) return { field: 'email', message: 'Enter a valid email address.' };
  if (input.password.length < 8) return { field: 'password', message: 'The password must have at least 8 characters.' };
  return null;
}

/**
 * Creates a user unless the email is taken; either way returns the user as it would be, and whether it was
 * created. The password is hashed before the email is looked at, so both cases take the same time: public
 * sign-up answers them alike (the id of a user not created is made up and stored nowhere).
 * 400 when the email or password is unusable.
 */
export async function registerUser(
  db: AccountsDb,
  clock: Clock,
  input: { email: string; name?: string; password: string },
): Promise<{ user: PublicUser; created: boolean }> {
  const problem = signUpProblem(input);
  if (problem) throw errors.invalid(problem.message);
  const email = input.email.trim().toLowerCase();
  const row = {
    id: newId('usr'),
    email,
    name: (input.name ?? '').trim() || email.split('@')[0],
    image: null,
    password_hash: await hashPassword(input.password),
    created_at: clock.now(),
  };
  const inserted = await db
    .insertInto('users')
    .values(row)
    .onConflict((oc) => oc.column('email').doNothing())
    .executeTakeFirst();
  return { user: toPublicUser(row), created: Number(inserted.numInsertedOrUpdatedRows ?? 0) === 1 };
}

// A hash of a random password, checked when the email is unknown so that timing does not reveal accounts.
let decoyHash: Promise<string> | undefined;

/** The user whose email and password match, or null; takes the same time whether or not the email exists. */
export async function verifyCredentials(db: AccountsDb, email: string, password: string): Promise<PublicUser | null> {
  const row = await db
    .selectFrom('users')
    .selectAll()
    .where('email', '=', email.trim().toLowerCase())
    .executeTakeFirst();
  if (!row) {
    decoyHash ??= hashPassword(crypto.randomUUID());
    await verifyPassword(password, await decoyHash);
    return null;
  }
  return (await verifyPassword(password, row.password_hash)) ? toPublicUser(row) : null;
}

/** Whether a user has this id (other features check a user exists before acting for it). */
export async function userExists(db: AccountsDb, id: string): Promise<boolean> {
  return (await db.selectFrom('users').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}

/** The id of the user with this email (compared lower-cased, as stored), or null. */
export async function userIdByEmail(db: AccountsDb, email: string): Promise<string | null> {
  const row = await db
    .selectFrom('users')
    .select('id')
    .where('email', '=', email.trim().toLowerCase())
    .executeTakeFirst();
  return row?.id ?? null;
}

/** The user's email and name, for a payment processor's customer record; null when there is no such user. */
export async function userContact(db: AccountsDb, id: string): Promise<{ email: string; name: string } | null> {
  return (await db.selectFrom('users').select(['email', 'name']).where('id', '=', id).executeTakeFirst()) ?? null;
}

/** The user with this id, or null. */
export async function findUser(db: AccountsDb, id: string): Promise<PublicUser | null> {
  const row = await db.selectFrom('users').selectAll().where('id', '=', id).executeTakeFirst();
  return row ? toPublicUser(row) : null;
}
