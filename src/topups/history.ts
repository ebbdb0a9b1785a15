import { decodePageCursor, encodePageCursor } from '../platform/page-cursor.ts';
import type { TopupRuntime } from './runtime.ts';
import { topupsDb, type TopupsTable } from './schema.ts';

/** A page of the user's top-ups, newest first, and the cursor of the next page (null on the last). */
export interface TopupsPage {
  topups: TopupsTable[];
  nextCursor: string | null;
}

/** The cursor of the next page: the position (creation time, then id) of the last top-up shown. */
const encodeCursor = (row: TopupsTable): string => encodePageCursor(`t:${row.created_at}:${row.id}`);

function decodeCursor(cursor: string): { createdAt: number; id: string } {
  const match = decodePageCursor(cursor, /^t:(\d{1,15}):(top_[A-Za-z0-9]{1,64})$/);
  return { createdAt: Number(match[1]), id: match[2]! };
}

/**
 * A page of the user's top-ups, newest first (`page.limit`, default 50). The cursor is a position, not an
 * offset: top-ups started while the user pages are not shown twice, and the user's own filter always applies,
 * so another user's cursor reads nothing of theirs.
 */
export async function listTopups(
  rt: TopupRuntime,
  userId: string,
  page: { limit?: number; cursor?: string } = {},
): Promise<TopupsPage> {
  const limit = page.limit ?? 50;
  let query = topupsDb(rt.ctx.db)
    .selectFrom('topups')
    .selectAll()
    .where('user_id', '=', userId)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit + 1);
  if (page.cursor) {
    const after = decodeCursor(page.cursor);
    query = query.where((eb) =>
      eb.or([
        eb('created_at', '<', after.createdAt),
        eb.and([eb('created_at', '=', after.createdAt), eb('id', '<', after.id)]),
      ]),
    );
  }
  const rows = await query.execute();
  const shown = rows.slice(0, limit);
  return { topups: shown, nextCursor: rows.length > limit ? encodeCursor(shown.at(-1)!) : null };
}
