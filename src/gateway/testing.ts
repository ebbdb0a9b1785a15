import assert from 'node:assert/strict';
import type { DashboardSession, TestEnv } from '../testing/harness.ts';
import { creditsToMicros } from '../platform/money.ts';
import { parseSse, type SseFrame } from '../testing/sse.ts';

/**
 * Test helpers of the AI API, all through the real HTTP API: a user with credits and an API key, the
 * wallet in micro-credits, and catalogue entries.
 */

/** A user with a dashboard session, `credits` granted, and an API key with `permissions`. */
export interface FundedUser {
  session: DashboardSession;
  key: string;
}

/** Creates a user, grants credits through the operator API and creates an API key from the dashboard. */
export async function fundedUser(
  env: TestEnv,
  credits: number,
  permissions: string[] = ['ai:chat', 'ai:models', 'ai:embeddings', 'ai:images', 'ai:audio'],
): Promise<FundedUser> {
  const session = await env.createUser();
  if (credits > 0) {
    const granted = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, {
      amount: credits,
      reason: 'test',
    });
    assert.equal(granted.status, 200, granted.text);
  }
  const created = await env.dashboard(session, 'POST', '/api/user/api-keys', { name: 'test key', permissions });
  assert.equal(created.status, 200, created.text);
  return { session, key: created.body.apiKey.key };
}

/** A new API key of `user` for chat under a daily spending limit of `limit` credits; resolves the key. */
export async function keyWithDailyLimit(env: TestEnv, user: FundedUser, limit: number): Promise<string> {
  const created = await env.dashboard(user.session, 'POST', '/api/user/api-keys', {
    name: 'limited',
    permissions: ['ai:chat'],
    limit,
    limitPeriod: 'daily',
  });
  assert.equal(created.status, 200, created.text);
  return created.body.apiKey.key;
}

/** The wallet in micro-credits. */
export async function wallet(
  env: TestEnv,
  user: FundedUser,
): Promise<{ balance: number; reserved: number; available: number }> {
  const response = await env.dashboard(user.session, 'GET', '/api/wallet/balance');
  assert.equal(response.status, 200, response.text);
  const micros = (credits: number) => creditsToMicros(credits)!;
  return {
    balance: micros(response.body.balance),
    reserved: micros(response.body.reserved),
    available: micros(response.body.available),
  };
}

/**
 * Asserts that the chat call answered with `usage` was charged exactly once: the wallet is down by its cost from
 * `before`, the user has that one usage record, and the operator's ledger check passes. The echo catalogue's
 * prices: 1 µcr a prompt token, 2 a completion token.
 */
export async function assertChargedOnce(
  env: TestEnv,
  payer: FundedUser,
  before: { balance: number },
  usage: { prompt_tokens: number; completion_tokens: number },
): Promise<void> {
  const cost = usage.prompt_tokens * 1 + usage.completion_tokens * 2;
  assert.equal((await settled(env, payer)).balance, before.balance - cost);
  const records = await usageOf(env, payer);
  assert.deepEqual(
    records.map((record) => [record.status, Number(record.cost)]),
    [['ok', cost]],
  );
  const report = await env.admin('GET', '/api/admin/ledger/verify');
  assert.equal(report.body.ok, true, report.text);
}

/** Waits until no hold of the user is open (a stream's settle lands after its response ended). */
export async function settled(
  env: TestEnv,
  user: FundedUser,
): Promise<{ balance: number; reserved: number; available: number }> {
  for (let i = 0; i < 200; i++) {
    const current = await wallet(env, user);
    if (current.reserved === 0) return current;
    await new Promise((resolve) => setImmediate(resolve));
  }
  throw new Error('a hold stayed open');
}

/** The holds the user's calls placed, oldest first, in micro-credits (read from the database: tests only). */
export async function holdsOf(env: TestEnv, user: FundedUser): Promise<number[]> {
  const rows = await env.db
    .selectFrom('holds')
    .select(['amount', 'created_at', 'id'])
    .where('user_id', '=', user.session.userId)
    .orderBy('created_at')
    .orderBy('id')
    .execute();
  return rows.map((row) => Number(row.amount));
}

/** Puts a model in the catalogue through the operator API. */
export async function putModel(env: TestEnv, id: string, body: Record<string, unknown>): Promise<any> {
  const response = await env.admin('PUT', `/api/admin/models/${id}`, body);
  assert.equal(response.status, 200, response.text);
  return response.body;
}

/**
 * The usage records of a user, newest first (read from the table the gateway writes). The record is written
 * right after the settle — after a stream's response already ended — so this waits for `atLeast` of them.
 */
export async function usageOf(env: TestEnv, user: FundedUser, atLeast = 1) {
  for (let i = 0; ; i++) {
    const rows = await env.db
      .selectFrom('usage_records')
      .selectAll()
      .where('user_id', '=', user.session.userId)
      .orderBy('created_at', 'desc')
      .orderBy('id')
      .execute();
    if (rows.length >= atLeast || i === 200) return rows;
    await new Promise((resolve) => setImmediate(resolve));
  }
}

/** Reads a whole SSE body into its frames, keeping a last frame that lacks its terminator. */
export async function readSseFrames(response: Response): Promise<SseFrame[]> {
  return parseSse(`${await response.text()}\n\n`);
}

/** A PCM WAV file of `seconds` of silence (mono, 16-bit, `sampleRate` Hz). */
export function wavFile(seconds: number, sampleRate = 8000): Uint8Array<ArrayBuffer> {
  const dataBytes = Math.round(seconds * sampleRate) * 2;
  const bytes = new Uint8Array(44 + dataBytes);
  const view = new DataView(bytes.buffer);
  const text = (at: number, value: string) => [...value].forEach((c, i) => (bytes[at + i] = c.charCodeAt(0)));
  text(0, 'RIFF');
  view.setUint32(4, 36 + dataBytes, true);
  text(8, 'WAVE');
  text(12, 'fmt ');
  view.setUint32(16, 16, true);
  view.setUint16(20, 1, true); // PCM
  view.setUint16(22, 1, true); // mono
  view.setUint32(24, sampleRate, true);
  view.setUint32(28, sampleRate * 2, true); // byte rate
  view.setUint16(32, 2, true); // block align
  view.setUint16(34, 16, true); // bits
  text(36, 'data');
  view.setUint32(40, dataBytes, true);
  return bytes;
}

/** An MP3 of `frames` silent MPEG-1 Layer III frames at 128 kbit/s, 44.1 kHz (1152 samples, 417 bytes each). */
export function mp3File(frames: number): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(frames * 417);
  for (let i = 0; i < frames; i++) bytes.set([0xff, 0xfb, 0x90, 0x00], i * 417);
  return bytes;
}
