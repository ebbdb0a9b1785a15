import type { AppContext } from '../../platform/context.ts';
import type { PlatformConfig } from '../../platform/config.ts';
import type { ResponsesConfig } from './config.ts';

/** What the store uses: the platform, and the Responses API's section of the config. */
type StoreDeps = AppContext & { config: PlatformConfig & ResponsesConfig };
import type { Principal } from '../../platform/http/principal.ts';
import type { Job } from '../../platform/jobs.ts';
import { ApiError } from '../../platform/errors.ts';
import { isResponseId, responseOfItem } from './ids.ts';
import type { InputItem } from './parse.ts';
import type { ResponseObject } from './render.ts';
import { responsesDb } from './schema.ts';

/**
 * Stored responses (`store: true`), kept per user and per app.
 *
 * Security invariant: every read and delete matches the id AND the caller's user AND its app (null for the
 * user's own keys and sessions), and skips expired rows; another user's or another app's id is
 * indistinguishable from an unknown one (404 NOT_FOUND).
 */

/** A stored response: the conversation it answered and what it returned. */
export interface StoredResponse {
  inputItems: InputItem[];
  response: ResponseObject;
}

const DAY_MS = 86_400_000;

function owned(ctx: StoreDeps, principal: Principal, id: string) {
  const query = responsesDb(ctx.db)
    .selectFrom('stored_responses')
    .where('id', '=', id)
    .where('user_id', '=', principal.userId)
    .where('expires_at', '>', ctx.clock.now());
  return principal.appId === null ? query.where('app_id', 'is', null) : query.where('app_id', '=', principal.appId);
}

/** The caller's stored response, or null (unknown, someone else's, or expired). */
export async function loadResponse(ctx: StoreDeps, principal: Principal, id: string): Promise<StoredResponse | null> {
  if (!isResponseId(id)) return null;
  const row = await owned(ctx, principal, id).select(['input_items', 'response']).executeTakeFirst();
  return row ? { inputItems: JSON.parse(row.input_items), response: JSON.parse(row.response) } : null;
}

/** The caller's stored response; 404 NOT_FOUND in the OpenAI envelope otherwise. */
export async function requireResponse(
  ctx: StoreDeps,
  principal: Principal,
  id: string,
  param = 'id',
): Promise<StoredResponse> {
  const stored = await loadResponse(ctx, principal, id);
  if (!stored)
    throw new ApiError(
      'NOT_FOUND',
      `No stored response "${id}" of yours: responses are kept only with \`store: true\`, for ${ctx.config.RESPONSES_RETENTION_DAYS} days.`,
      { details: { param } },
    );
  return stored;
}

/**
 * The output items that `item_reference` items name, read from the caller's stored responses (one read per
 * response named). Unknown ids are left out; the parser refuses them.
 */
export async function referencedItems(
  ctx: StoreDeps,
  principal: Principal,
  items: InputItem[],
): Promise<Map<string, InputItem>> {
  const found = new Map<string, InputItem>();
  const ids = items
    .filter((item) => item?.type === 'item_reference' && typeof item.id === 'string')
    .map((item) => item.id as string);
  const responses = new Set(ids.map(responseOfItem).filter((id): id is string => id !== null));
  if (responses.size > 16)
    throw new ApiError(
      'INVALID_REQUEST',
      'At most 16 stored responses may be referenced by item_reference in one request.',
      { details: { param: 'input' } },
    );
  for (const responseId of responses) {
    const stored = await loadResponse(ctx, principal, responseId);
    for (const item of stored?.response.output ?? []) found.set(item.id, item);
  }
  return found;
}

/** The JSON texts to store, or a 413 when they exceed `RESPONSES_STORE_MAX_BYTES` (checked on the input before any call). */
export function storable(ctx: StoreDeps, inputItems: InputItem[]): string {
  const json = JSON.stringify(inputItems);
  const size = Buffer.byteLength(json);
  if (size > ctx.config.RESPONSES_STORE_MAX_BYTES) {
    const message =
      `The conversation to store is ${size} bytes; at most ${ctx.config.RESPONSES_STORE_MAX_BYTES} are kept per response ` +
      '(RESPONSES_STORE_MAX_BYTES). Send store: false and replay the items instead.';
    throw new ApiError('PAYLOAD_TOO_LARGE', message, { details: { param: 'store' } });
  }
  return json;
}

/** Keeps a finished response for the caller, until the retention ends. */
export async function saveResponse(
  ctx: StoreDeps,
  principal: Principal,
  inputJson: string,
  response: ResponseObject,
): Promise<void> {
  const responseJson = JSON.stringify(response);
  const now = ctx.clock.now();
  await responsesDb(ctx.db)
    .insertInto('stored_responses')
    .values({
      id: response.id,
      user_id: principal.userId,
      app_id: principal.appId,
      model: String(response.model),
      input_items: inputJson,
      response: responseJson,
      size: Buffer.byteLength(inputJson) + Buffer.byteLength(responseJson),
      created_at: now,
      expires_at: now + ctx.config.RESPONSES_RETENTION_DAYS * DAY_MS,
    })
    .execute();
}

/** Deletes the caller's stored response; false when there was none of theirs. */
export async function deleteResponse(ctx: StoreDeps, principal: Principal, id: string): Promise<boolean> {
  if (!isResponseId(id)) return false;
  const query = responsesDb(ctx.db)
    .deleteFrom('stored_responses')
    .where('id', '=', id)
    .where('user_id', '=', principal.userId)
    .where('expires_at', '>', ctx.clock.now());
  const result = await (
    principal.appId === null ? query.where('app_id', 'is', null) : query.where('app_id', '=', principal.appId)
  ).executeTakeFirst();
  return Number(result.numDeletedRows) > 0;
}

/** Deletes stored responses past their retention (`RESPONSES_RETENTION_DAYS`), 1000 per run at most. */
export function expireResponsesJob(ctx: StoreDeps): Job {
  return {
    name: 'expire-responses',
    description: 'Deletes stored Responses (store: true) older than RESPONSES_RETENTION_DAYS.',
    async run() {
      const expired = responsesDb(ctx.db)
        .selectFrom('stored_responses')
        .select('id')
        .where('expires_at', '<=', ctx.clock.now())
        .orderBy('expires_at')
        .limit(1000);
      const result = await responsesDb(ctx.db)
        .deleteFrom('stored_responses')
        .where('id', 'in', expired)
        .executeTakeFirst();
      return { deleted: Number(result.numDeletedRows) };
    },
  };
}
