import assert from 'node:assert/strict';
import { upsertModel, type ModelInput } from '../../models/catalogue.ts';
import type { DashboardSession, TestEnv } from '../../testing/harness.ts';
import { MICROS_PER_CREDIT } from '../../platform/money.ts';
import type { FakeReplicate } from './replicate-server.ts';

/**
 * Shared steps of the prediction tests: catalogue entries for Replicate models, a user with credits, the
 * wallet in micro-credits, and the ledger check. Everything goes through the real HTTP API except the
 * catalogue entries, written with the catalogue's own upsert.
 */

/** An image model priced to exercise every part: 0.01 per call, 0.333333 per second, 0.03 per image; 60 s worst case. */
export const IMAGE_MODEL = {
  id: 'black-forest-labs/flux-test',
  upstreamModel: 'black-forest-labs/flux-schnell',
  pricing: { prompt: 0, completion: 0, request: 10_000, second: 333_333, image: 30_000 },
  maxPredictSeconds: 60,
  outputModalities: ['image'],
};

/** A text-to-speech model pinned to a version (created through `POST /predictions`). */
export const AUDIO_MODEL = {
  id: 'speech/tts-test',
  upstreamModel: 'speech/tts:5c7d5dc6dd8bf75c1acaa8565735e7986bc5b66206b55cca93cb72c9bf15ccaa',
  pricing: { prompt: 0, completion: 0, request: 5_000, second: 100_000, image: 0 },
  maxPredictSeconds: null,
  outputModalities: ['audio'],
};

/** Puts the test models in the catalogue. */
export async function addReplicateModels(env: TestEnv): Promise<void> {
  for (const model of [IMAGE_MODEL, AUDIO_MODEL]) {
    const entry: ModelInput = {
      id: model.id,
      provider: 'replicate',
      upstreamModel: model.upstreamModel,
      name: model.id,
      pricing: model.pricing,
      contextLength: null,
      maxOutputTokens: null,
      maxPredictSeconds: model.maxPredictSeconds,
      inputModalities: ['text'],
      outputModalities: model.outputModalities,
      fallbacks: [],
      isTest: true,
      enabled: true,
    };
    await upsertModel(env.service.ctx.db, entry, env.clock.now());
  }
}

/** A signed-in user granted `credits` through the operator API. */
export async function userWithCredits(env: TestEnv, credits: number): Promise<DashboardSession> {
  const session = await env.createUser();
  const granted = await env.admin('POST', `/api/admin/users/${session.userId}/credits`, {
    amount: credits,
    reason: 'test',
  });
  assert.equal(granted.status, 200, granted.text);
  return session;
}

/** The user's wallet in micro-credits, read through `GET /api/wallet/balance`. */
export async function walletMicros(
  env: TestEnv,
  session: DashboardSession,
  baseUrl = env.baseUrl,
): Promise<{ balance: number; reserved: number; available: number }> {
  const response = await fetch(`${baseUrl}/api/wallet/balance`, { headers: { cookie: session.cookie } });
  const body = (await response.json()) as { balance: number; reserved: number; available: number };
  assert.equal(response.status, 200);
  const micros = (credits: number) => Math.round(credits * MICROS_PER_CREDIT);
  return { balance: micros(body.balance), reserved: micros(body.reserved), available: micros(body.available) };
}

/** `GET /api/admin/ledger/verify` must report no difference. */
export async function assertLedgerVerifies(env: TestEnv): Promise<void> {
  const report = await env.admin('GET', '/api/admin/ledger/verify');
  assert.equal(report.status, 200, report.text);
  assert.equal(report.body.ok, true, JSON.stringify(report.body));
}

/** Starts a prediction as the dashboard user; returns our prediction and the fake's (Replicate's) id. */
export async function startPrediction(
  env: TestEnv,
  session: DashboardSession,
  body: Record<string, unknown> = { model: IMAGE_MODEL.id, input: { prompt: 'a lighthouse', num_outputs: 2 } },
): Promise<{ id: string; replicateId: string; held: number }> {
  const response = await env.dashboard(session, 'POST', '/api/v1/predictions', body);
  assert.equal(response.status, 201, response.text);
  return {
    id: response.body.id,
    replicateId: response.body.replicate_id,
    held: Math.round(response.body.held * MICROS_PER_CREDIT),
  };
}

/** The webhook URL the fake was told to call for this prediction. */
export function webhookUrlOf(fake: FakeReplicate, replicateId: string): string {
  const url = fake.predictions.get(replicateId)?.webhook;
  assert.ok(url, 'the prediction was created with a webhook URL');
  return url;
}
