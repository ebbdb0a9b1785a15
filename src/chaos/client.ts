import assert from 'node:assert/strict';
import { sql } from 'kysely';
import { request, type RequestOptions, type TestResponse } from '../testing/harness.ts';
import { randomText } from '../platform/ids.ts';
import { MICROS_PER_CREDIT } from '../platform/money.ts';
import type { Kysely } from 'kysely';
import type { AllTables } from '../testing/all-tables.ts';
import { count } from './figures.ts';
import { parseSse, type SseFrame } from '../testing/sse.ts';

/**
 * The suite's client side: every call goes through real HTTP to a given gateway (in-process or a child
 * process), and is counted in the figures. Nothing here touches the code under test.
 */

/** One credit in micro-credits. */
export const CREDIT = MICROS_PER_CREDIT;

/** A request to `baseUrl`, counted. */
export function send(
  baseUrl: string,
  method: string,
  path: string,
  options: RequestOptions = {},
): Promise<TestResponse> {
  count('requestsSent');
  return request(baseUrl, method, path, options);
}

/** A user of the suite: its dashboard session and one API key. */
export interface ChaosUser {
  userId: string;
  cookie: string;
  csrfToken: string;
  key: string;
  keyId: string;
}

/** Options of {@link createChaosUser}. */
export interface ChaosUserOptions {
  /** Credits granted through the operator API (0: none). */
  credits: number;
  /** The key's spending limit in credits, and its period. */
  keyLimit?: { limit: number; period: 'daily' | 'weekly' | 'monthly' | 'total' };
}

/** Creates a user (operator API), signs it in, grants it credits and creates an API key, all through `baseUrl`. */
export async function createChaosUser(
  baseUrl: string,
  adminToken: string,
  options: ChaosUserOptions,
): Promise<ChaosUser> {
  const email = `chaos-${randomText(10).toLowerCase()}@example.com`;
  const password = `pw-${randomText(16)}`;
  const created = await send(baseUrl, 'POST', '/api/admin/users', {
    token: adminToken,
    body: { email, password, name: 'Chaos' },
  });
  assert.equal(created.status, 201, created.text);
  const signedIn = await fetch(`${baseUrl}/api/auth/signin`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  count('requestsSent');
  const session = (await signedIn.json()) as any;
  assert.equal(signedIn.status, 200, JSON.stringify(session));
  const cookie = signedIn.headers
    .getSetCookie()
    .map((c) => c.split(';')[0])
    .join('; ');
  const user = { userId: session.user.id as string, cookie, csrfToken: session.csrfToken as string };
  if (options.credits > 0) await grant(baseUrl, adminToken, user.userId, options.credits);
  const key = await createKey(baseUrl, user, options.keyLimit);
  return { ...user, ...key };
}

/** Creates an API key for chat from the user's dashboard session. */
export async function createKey(
  baseUrl: string,
  user: Pick<ChaosUser, 'cookie' | 'csrfToken'>,
  keyLimit?: ChaosUserOptions['keyLimit'],
): Promise<{ key: string; keyId: string }> {
  const body = {
    name: 'chaos',
    permissions: ['ai:chat', 'ai:models'],
    ...(keyLimit ? { limit: keyLimit.limit, limitPeriod: keyLimit.period } : {}),
  };
  const created = await send(baseUrl, 'POST', '/api/user/api-keys', { body, headers: dashboardHeaders(user) });
  assert.equal(created.status, 200, created.text);
  return { key: created.body.apiKey.key, keyId: created.body.apiKey.id };
}

/** The headers of a dashboard write. */
export function dashboardHeaders(user: Pick<ChaosUser, 'cookie' | 'csrfToken'>): Record<string, string> {
  return { cookie: user.cookie, 'x-csrf-token': user.csrfToken };
}

/** Grants credits through the operator API. */
export async function grant(baseUrl: string, adminToken: string, userId: string, credits: number): Promise<void> {
  const granted = await send(baseUrl, 'POST', `/api/admin/users/${userId}/credits`, {
    token: adminToken,
    body: { amount: credits, reason: 'chaos' },
  });
  assert.equal(granted.status, 200, granted.text);
}

/** Puts a chat model on the `openai` provider in the catalogue: 1 credit per completion token, nothing else. */
export async function putChatModel(
  baseUrl: string,
  adminToken: string,
  id: string,
  upstreamModel: string,
  maxOutputTokens = 64,
): Promise<void> {
  const response = await send(baseUrl, 'PUT', `/api/admin/models/${id}`, {
    token: adminToken,
    body: { provider: 'openai', upstreamModel, pricing: { prompt: 0, completion: 1_000_000 }, maxOutputTokens },
  });
  assert.equal(response.status, 200, response.text);
}

/** One SSE frame as the client read it. */

/** How a chat call ended, seen from the client. */
export interface ChatOutcome {
  /** HTTP status, or 0 when the connection failed before the status arrived. */
  status: number;
  /** The JSON body of a non-streamed answer (or of an error before a stream began). */
  body?: any;
  /** The frames of a streamed answer, as far as they arrived. */
  frames?: SseFrame[];
  /** True when the connection broke (before or during the answer). */
  cut: boolean;
  /** Words of content the client received. */
  content: string;
}

/**
 * Sends a chat call and reads its whole answer, whatever happens to the connection: a cut is an outcome,
 * not an exception. `onChunk` sees the content received so far as it streams (to time a SIGTERM).
 */
export async function chat(
  baseUrl: string,
  key: string,
  body: Record<string, unknown>,
  onContent?: (content: string) => void,
): Promise<ChatOutcome> {
  count('requestsSent');
  let response: Response;
  try {
    response = await fetch(`${baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
  } catch {
    return { status: 0, cut: true, content: '' };
  }
  const isStream = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
  let text = '';
  let cut = false;
  try {
    const decoder = new TextDecoder();
    for await (const chunk of response.body ?? []) {
      text += decoder.decode(chunk as Uint8Array, { stream: true });
      if (isStream && onContent) onContent(contentOf(parseSse(text)));
    }
  } catch {
    cut = true;
  }
  if (!isStream) {
    let parsed: any;
    try {
      parsed = JSON.parse(text);
    } catch {
      cut = true;
    }
    return { status: response.status, body: parsed, cut, content: parsed?.choices?.[0]?.message?.content ?? '' };
  }
  const frames = parseSse(text);
  return { status: response.status, frames, cut, content: contentOf(frames) };
}

/** The content the frames carried. */
function contentOf(frames: SseFrame[]): string {
  return frames.map((frame) => frame.data?.choices?.[0]?.delta?.content ?? '').join('');
}

/** Asserts `GET /api/admin/ledger/verify` reports no difference, no negative balance and no expired open hold. */
export async function assertLedgerVerifies(baseUrl: string, adminToken: string): Promise<void> {
  count('ledgerVerifications');
  const report = await send(baseUrl, 'GET', '/api/admin/ledger/verify', { token: adminToken });
  assert.equal(report.status, 200, report.text);
  assert.equal(report.body.ok, true, report.text);
}

/** Runs the expired-holds sweep through the operator API. */
export async function sweepExpiredHolds(baseUrl: string, adminToken: string): Promise<void> {
  const swept = await send(baseUrl, 'POST', '/api/admin/cron/release-expired-holds', { token: adminToken });
  assert.ok(swept.status === 200 || swept.status === 202, swept.text);
}

const num = (value: unknown) => Number(value ?? 0);

/**
 * Conservation of credits for `userIds`, read from the tables (after every hold was closed):
 * granted = available + captured − refunded, where `granted` is what the suite granted through the
 * operator API. The ledger's own design says the same thing twice more: each user's wallet equals the sum
 * of their ledger accounts (checked by verify), and the revenue account holds exactly what was captured.
 * Returns the micro-credits captured.
 */
export async function assertCreditsConserved(
  db: Kysely<AllTables>,
  grantedByUser: Map<string, number>,
): Promise<{ captured: number; holds: number }> {
  const userIds = [...grantedByUser.keys()];
  const wallets = await db
    .selectFrom('wallets')
    .select(['user_id', 'balance', 'reserved'])
    .where('user_id', 'in', userIds)
    .execute();
  const holds = await db
    .selectFrom('holds')
    .select([
      'user_id',
      (eb) => eb.fn.sum<string | number>('captured').as('captured'),
      (eb) => eb.fn.sum<string | number>('refunded').as('refunded'),
      (eb) => eb.fn.countAll<string | number>().as('count'),
      sql<string | number>`sum(case when status = 'open' then 1 else 0 end)`.as('open'),
    ])
    .where('user_id', 'in', userIds)
    .groupBy('user_id')
    .execute();
  const holdsByUser = new Map(holds.map((row) => [row.user_id, row]));
  let capturedTotal = 0;
  let holdCount = 0;
  for (const userId of userIds) {
    const wallet = wallets.find((w) => w.user_id === userId);
    const held = holdsByUser.get(userId);
    const captured = num(held?.captured) - num(held?.refunded);
    assert.equal(num(held?.open), 0, `user ${userId} still has open holds`);
    assert.equal(num(wallet?.reserved), 0, `user ${userId} still has credits reserved`);
    assert.equal(
      num(wallet?.balance) + captured,
      grantedByUser.get(userId),
      `credits of ${userId}: granted ${grantedByUser.get(userId)} ≠ available ${num(wallet?.balance)} + captured ${captured}`,
    );
    capturedTotal += captured;
    holdCount += num(held?.count);
  }
  // Every charge a usage record shows is the charge its hold captured (a kill between the two may leave a
  // capture without its record, never a record without its capture).
  const mismatched = await db
    .selectFrom('usage_records')
    .innerJoin('holds', 'holds.id', 'usage_records.hold_id')
    .select(['usage_records.id', 'usage_records.cost', 'holds.captured'])
    .where('usage_records.user_id', 'in', userIds)
    .whereRef('usage_records.cost', '<>', 'holds.captured')
    .execute();
  assert.deepEqual(mismatched, [], 'a usage record disagrees with the capture of its hold');
  count('creditsChecked', [...grantedByUser.values()].reduce((a, b) => a + b, 0) / CREDIT);
  count('holdsChecked', holdCount);
  return { captured: capturedTotal, holds: holdCount };
}

/** Asserts that no hold of anyone is open and that the ledger's accounts sum to zero, the revenue account included. */
export async function assertLedgerBalanced(db: Kysely<AllTables>): Promise<void> {
  const open = await db
    .selectFrom('holds')
    .select((eb) => eb.fn.countAll<string | number>().as('n'))
    .where('status', '=', 'open')
    .executeTakeFirstOrThrow();
  assert.equal(num(open.n), 0, 'an open hold outlived its expiry');
  const captured = await db
    .selectFrom('holds')
    .select([
      (eb) => eb.fn.sum<string | number>('captured').as('captured'),
      (eb) => eb.fn.sum<string | number>('refunded').as('refunded'),
    ])
    .executeTakeFirstOrThrow();
  const revenue = await db
    .selectFrom('ledger_entries')
    .select((eb) => eb.fn.sum<string | number>('amount').as('total'))
    .where('account', '=', 'system:revenue')
    .executeTakeFirstOrThrow();
  assert.equal(
    num(revenue.total),
    num(captured.captured) - num(captured.refunded),
    'the revenue account differs from what the holds captured',
  );
}
