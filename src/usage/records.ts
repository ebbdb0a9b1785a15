import type { Insertable } from 'kysely';
import type { Db } from '../platform/db/connect.ts';
import { newId } from '../platform/ids.ts';
import type { UsageRecordsTable } from './tables.ts';

/** Writes one usage record; returns its id. */
export async function recordUsage(db: Db, record: Omit<Insertable<UsageRecordsTable>, 'id'>): Promise<string> {
  const id = newId('use');
  await db.insertInto('usage_records').values({ id, ...record }).execute();
  return id;
}
