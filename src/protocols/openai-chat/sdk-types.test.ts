import { it } from 'node:test';
import assert from 'node:assert/strict';
import type { Static } from 'typebox';
import { Value } from 'typebox/value';
import type { ChatCompletion } from '../../../packages/sdk/src/types.ts';
import { ChatCompletionSchema } from './route.ts';

// Checked by tsc (npm test and the pre-commit check run it): every answer the OpenAPI document allows must be a
// ChatCompletion to the SDK, or this line does not compile.
const asSdkAnswer = (answer: Static<typeof ChatCompletionSchema>): ChatCompletion => answer;

it('the SDK types a chat answer as the OpenAPI document does: a usage without total_tokens is one', () => {
  // What an upstream's pass-through answer may carry: usage with no total.
  const passThrough = {
    id: 'gen-1',
    object: 'chat.completion' as const,
    created: 1_700_000_000,
    model: 'vendor/model',
    choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
    usage: { prompt_tokens: 3, completion_tokens: 1 },
  };
  assert.ok(Value.Check(ChatCompletionSchema, passThrough), 'the OpenAPI document allows it');
  assert.equal(asSdkAnswer(passThrough).usage?.total_tokens, undefined);
});
