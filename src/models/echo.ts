import type { ModelsDb } from './schema.ts';
import type { Clock } from '../platform/clock.ts';
import { ECHO_MODEL_ID } from '../providers/echo/index.ts';
import { MICROS_PER_CREDIT } from '../platform/money.ts';

/**
 * Puts the built-in test model `tollgate/echo` in the catalogue when it is absent, so a fresh install can
 * chat with no provider and no internet. Its small price (1 credit per 1M prompt tokens, 2 per 1M completion
 * tokens) makes billing visible. An operator's later change to it (price, disabling) is kept: only a missing
 * row is written.
 */
export async function seedEchoModel(db: ModelsDb, clock: Clock): Promise<void> {
  await db
    .insertInto('models')
    .values({
      id: ECHO_MODEL_ID,
      provider: 'echo',
      upstream_model: 'echo',
      name: 'Tollgate Echo (test model: repeats your last message)',
      price_prompt: 1 * MICROS_PER_CREDIT,
      price_completion: 2 * MICROS_PER_CREDIT,
      price_request: 0,
      price_second: 0,
      price_image: 0,
      context_length: 128_000,
      max_output_tokens: 4_096,
      max_predict_seconds: null,
      input_modalities: '["text"]',
      output_modalities: '["text","embedding"]',
      fallbacks: '[]',
      is_test: 1,
      enabled: 1,
      updated_at: clock.now(),
    })
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}
