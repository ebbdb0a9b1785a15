import type { Selectable } from 'kysely';
import type { EventsPlatform } from './deps.ts';
import { decrypt, encrypt } from '../platform/crypto.ts';
import { errors } from '../platform/errors.ts';
import { newId } from '../platform/ids.ts';
import { newSigningSecret } from '../webhooks/standard-webhooks.ts';
import { EVENT_TYPES } from './catalogue.ts';
import { checkEndpointUrl } from './url-guard.ts';
import { eventsDb, type WebhookEndpointsTable } from './schema.ts';
import { serializeOn } from '../platform/db/serialize-on.ts';

/** Whose endpoints a call manages: a user's (their id) or the operator's (null: every user's events). */
export type Owner = string | null;

/** Most endpoints one owner may register. */
export const MAX_ENDPOINTS_PER_OWNER = 20;

/** How long the secret a rotation replaced is still signed with, so receivers can switch without a gap. */
export const ROTATION_OVERLAP_MS = 24 * 3600 * 1000;

/** An endpoint as stored. */
export type EndpointRow = Selectable<WebhookEndpointsTable>;

/** An endpoint as the API shows it (never its secret, which is shown once, at creation or rotation). */
export interface EndpointView {
  id: string;
  url: string;
  eventTypes: string[];
  enabled: boolean;
  /** `user`: the owner's events; `operator`: every user's events. */
  scope: 'user' | 'operator';
  createdAt: string;
  updatedAt: string;
}

/** The API's view of a row. */
export function endpointView(row: EndpointRow): EndpointView {
  return {
    id: row.id,
    url: row.url,
    eventTypes: JSON.parse(row.event_types),
    enabled: row.enabled === 1,
    scope: row.owner_user_id === null ? 'operator' : 'user',
    createdAt: new Date(row.created_at).toISOString(),
    updatedAt: new Date(row.updated_at).toISOString(),
  };
}

function urlPolicy(ctx: EventsPlatform) {
  return { allowHttp: ctx.config.WEBHOOK_ALLOW_HTTP, allowPrivate: ctx.config.WEBHOOK_ALLOW_PRIVATE_ADDRESSES };
}

function eventTypesText(types: readonly string[] | undefined): string {
  const chosen = types === undefined ? [...EVENT_TYPES] : [...new Set(types)];
  if (chosen.length === 0)
    throw errors.invalid(`eventTypes must name at least one of ${EVENT_TYPES.join(', ')}.`, { param: 'eventTypes' });
  for (const type of chosen) {
    if (!(EVENT_TYPES as readonly string[]).includes(type))
      throw errors.invalid(`Unknown event type ${JSON.stringify(type)}; the types are ${EVENT_TYPES.join(', ')}.`, {
        param: 'eventTypes',
      });
  }
  return JSON.stringify(chosen);
}

/** The owner's endpoints, oldest first. */
export function listEndpoints(ctx: EventsPlatform, owner: Owner): Promise<EndpointRow[]> {
  let query = eventsDb(ctx.db).selectFrom('webhook_endpoints').selectAll();
  query = owner === null ? query.where('owner_user_id', 'is', null) : query.where('owner_user_id', '=', owner);
  return query.orderBy('created_at').orderBy('id').execute();
}

/** One of the owner's endpoints; another owner's is NOT_FOUND (404), as if it did not exist. */
export async function findEndpoint(ctx: EventsPlatform, owner: Owner, id: string): Promise<EndpointRow> {
  let query = eventsDb(ctx.db).selectFrom('webhook_endpoints').selectAll().where('id', '=', id);
  query = owner === null ? query.where('owner_user_id', 'is', null) : query.where('owner_user_id', '=', owner);
  const row = await query.executeTakeFirst();
  if (!row) throw errors.notFound('Webhook endpoint');
  return row;
}

/** What a create or an update sets. */
export interface EndpointInput {
  url?: string;
  eventTypes?: string[];
  enabled?: boolean;
}

/**
 * Registers an endpoint with a new secret, returned in clear this once.
 * Security invariant: the URL passes the SSRF guard before it is stored; the secret is stored sealed.
 */
export async function createEndpoint(
  ctx: EventsPlatform,
  owner: Owner,
  input: EndpointInput & { url: string },
): Promise<{ row: EndpointRow; secret: string }> {
  const url = await checkEndpointUrl(input.url, urlPolicy(ctx));
  const event_types = eventTypesText(input.eventTypes);
  const secret = newSigningSecret();
  const now = ctx.clock.now();
  const row: EndpointRow = {
    id: newId('wep'),
    owner_user_id: owner,
    url,
    event_types,
    enabled: input.enabled === false ? 0 : 1,
    secret_sealed: encrypt(ctx.secrets.encryptionKey, secret),
    previous_secret_sealed: null,
    previous_expires_at: null,
    created_at: now,
    updated_at: now,
  };
  await ctx.db.transaction().execute(async (shared) => {
    const trx = eventsDb(shared);
    // Invariant: at most MAX_ENDPOINTS_PER_OWNER, also under concurrent creations (SQLite runs one write
    // transaction at a time; PostgreSQL serialises one owner's creations on this lock).
    await serializeOn(trx, ctx.dialect, `webhook-endpoints:${owner ?? 'operator'}`);
    const { count } = await trx
      .selectFrom('webhook_endpoints')
      .select((eb) => eb.fn.countAll<number | string>().as('count'))
      .where((eb) => (owner === null ? eb('owner_user_id', 'is', null) : eb('owner_user_id', '=', owner)))
      .executeTakeFirstOrThrow();
    if (Number(count) >= MAX_ENDPOINTS_PER_OWNER)
      throw errors.invalid(`At most ${MAX_ENDPOINTS_PER_OWNER} webhook endpoints can be registered; delete one first.`);
    await trx.insertInto('webhook_endpoints').values(row).execute();
  });
  return { row, secret };
}

/** Changes an endpoint's URL, event types or enabled flag; 404 for another owner's. */
export async function updateEndpoint(
  ctx: EventsPlatform,
  owner: Owner,
  id: string,
  input: EndpointInput,
): Promise<EndpointRow> {
  const current = await findEndpoint(ctx, owner, id);
  const changes: Partial<EndpointRow> = { updated_at: ctx.clock.now() };
  if (input.url !== undefined) changes.url = await checkEndpointUrl(input.url, urlPolicy(ctx));
  if (input.eventTypes !== undefined) changes.event_types = eventTypesText(input.eventTypes);
  if (input.enabled !== undefined) changes.enabled = input.enabled ? 1 : 0;
  await eventsDb(ctx.db).updateTable('webhook_endpoints').set(changes).where('id', '=', current.id).execute();
  return { ...current, ...changes };
}

/** Deletes an endpoint and its deliveries; 404 for another owner's. */
export async function deleteEndpoint(ctx: EventsPlatform, owner: Owner, id: string): Promise<void> {
  const current = await findEndpoint(ctx, owner, id);
  await eventsDb(ctx.db)
    .transaction()
    .execute(async (trx) => {
      await trx.deleteFrom('webhook_messages').where('endpoint_id', '=', current.id).execute();
      await trx.deleteFrom('webhook_endpoints').where('id', '=', current.id).execute();
    });
}

/**
 * Gives an endpoint a new secret (returned in clear this once). The replaced one keeps signing beside it for
 * {@link ROTATION_OVERLAP_MS}, so a receiver that still holds it verifies every delivery in between.
 */
export async function rotateSecret(
  ctx: EventsPlatform,
  owner: Owner,
  id: string,
): Promise<{ secret: string; previousValidUntil: string }> {
  const current = await findEndpoint(ctx, owner, id);
  const secret = newSigningSecret();
  const now = ctx.clock.now();
  await eventsDb(ctx.db)
    .updateTable('webhook_endpoints')
    .set({
      secret_sealed: encrypt(ctx.secrets.encryptionKey, secret),
      previous_secret_sealed: current.secret_sealed,
      previous_expires_at: now + ROTATION_OVERLAP_MS,
      updated_at: now,
    })
    .where('id', '=', current.id)
    .execute();
  return { secret, previousValidUntil: new Date(now + ROTATION_OVERLAP_MS).toISOString() };
}

/** The HMAC keys an endpoint's deliveries are signed with now: its secret, and the replaced one while it overlaps. */
export function signingKeys(
  row: Pick<EndpointRow, 'secret_sealed' | 'previous_secret_sealed' | 'previous_expires_at'>,
  encryptionKey: Buffer,
  now: number,
): Buffer[] {
  const sealed = [row.secret_sealed];
  if (row.previous_secret_sealed && (row.previous_expires_at ?? 0) > now) sealed.push(row.previous_secret_sealed);
  return sealed.map((text) => Buffer.from(decrypt(encryptionKey, text).slice('whsec_'.length), 'base64'));
}
