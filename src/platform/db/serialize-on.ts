import { sql, type Kysely } from 'kysely';
import type { DialectName } from './connect.ts';

/**
 * Makes the rest of the transaction `trx` run alone among transactions that serialise on the same `name`, for
 * a check-then-write that must not race (a count of an owner's rows, then an insert under a bound).
 * PostgreSQL: a transaction-scoped advisory lock on the name's hash, released at commit or rollback.
 * SQLite: nothing to do; it runs one write transaction at a time.
 */
export async function serializeOn(trx: Kysely<any>, dialect: DialectName, name: string): Promise<void> {
  if (dialect === 'postgres') await sql`select pg_advisory_xact_lock(hashtext(${name}))`.execute(trx);
}
