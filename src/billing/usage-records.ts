import type { Insertable } from 'kysely';
import { insertCompanion, type CompanionWrite } from './ledger.ts';
import type { BillingDb } from './schema.ts';
import { preparedInsert } from '../platform/db/prepared.ts';
import { newId } from '../platform/ids.ts';
import type { UsageRecordsTable } from './schema.ts';

/*
 * The usage record of a billable call is billing's to write: the meter (./meter.ts) writes it with the
 * settle or release that charges the call, in the same transaction. The usage feature only reads it.
 */

/** Writes one usage record; returns its id. */
export async function recordUsage(db: BillingDb, record: Omit<Insertable<UsageRecordsTable>, 'id'>): Promise<string> {
  const full = withId(record);
  await insertRecord(db, full);
  return full.id;
}

/** One usage record as a companion of the settle or release that charges it (see `CloseHoldOptions.companion`). */
export function usageRecordWrite(record: Omit<Insertable<UsageRecordsTable>, 'id'>): CompanionWrite {
  const full = withId(record);
  return insertCompanion('usage_records', insertRecord, full);
}

/**
 * A call's usage record before its close: everything but what the close decides (what was captured, what
 * went uncollected, how it was settled). `billed` is the call's full cost, of which the rest is uncollected.
 */
export interface UsageDraft {
  record: Omit<Insertable<UsageRecordsTable>, 'id' | 'cost' | 'uncollected' | 'settlement'>;
  billed: number;
}

/** The usage record of a close that captured `captured` (after the hold's expiry when `afterExpiry`). */
export function usageOfClose(
  draft: UsageDraft,
  closed: { captured: number; afterExpiry: boolean },
): Omit<Insertable<UsageRecordsTable>, 'id'> {
  return {
    ...draft.record,
    cost: closed.captured,
    uncollected: Math.max(0, draft.billed - closed.captured),
    settlement: closed.afterExpiry ? 'charged_after_expiry' : null,
  };
}

/** A draft as the JSON row PostgreSQL's close function completes and inserts (see pg-functions.ts). */
export function usageDraftRow(draft: UsageDraft): string {
  return JSON.stringify(withId({ ...draft.record, cost: 0, uncollected: 0, settlement: null }));
}

function withId(record: Omit<Insertable<UsageRecordsTable>, 'id'>): FullRecord {
  return {
    id: newId('use'),
    user_id: record.user_id,
    app_id: record.app_id ?? null,
    key_id: record.key_id ?? null,
    model: record.model,
    kind: record.kind,
    prompt_tokens: record.prompt_tokens ?? 0,
    completion_tokens: record.completion_tokens ?? 0,
    cost: record.cost ?? 0,
    latency_ms: record.latency_ms ?? 0,
    status: record.status,
    hold_id: record.hold_id ?? null,
    created_at: record.created_at,
    settlement: record.settlement ?? null,
    uncollected: record.uncollected ?? 0,
    details: record.details ?? null,
  };
}

type FullRecord = Required<Insertable<UsageRecordsTable>>;

const insertRecord = preparedInsert<FullRecord>('usage_records', [
  'id',
  'user_id',
  'app_id',
  'key_id',
  'model',
  'kind',
  'prompt_tokens',
  'completion_tokens',
  'cost',
  'latency_ms',
  'status',
  'hold_id',
  'created_at',
  'settlement',
  'uncollected',
  'details',
]);
