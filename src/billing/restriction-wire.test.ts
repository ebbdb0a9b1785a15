import { it } from 'node:test';
import assert from 'node:assert/strict';
import Value from 'typebox/value';
import { ApiErrorSchema } from '#wire/errors.ts';
import { InsufficientCreditsRefusalSchema, SpendingLimitRefusalSchema } from '#wire/restrictions.ts';
import { classifyResponse, TollgateRestrictionError } from '../../packages/sdk/src/errors.ts';
import type { ApiError } from '../platform/errors.ts';
import { LIMIT_PERIODS } from './periods.ts';
import { insufficientCredits, spendingLimitExceeded } from './limits.ts';
import { debtOwed } from './debt.ts';

const CREDIT = 1_000_000;
const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);

/** The body as the HTTP layer sends it: the envelope through JSON. */
const bodyOf = (error: ApiError) => JSON.parse(JSON.stringify(error.toEnvelope()));

/** Every restriction billing raises: each limit period (app and key), the plain 402 and the debt's 402. */
function restrictions(): Array<{
  name: string;
  error: ApiError;
  schema: typeof SpendingLimitRefusalSchema | typeof InsufficientCreditsRefusalSchema;
}> {
  const limits = LIMIT_PERIODS.flatMap((period) =>
    (['app', 'key'] as const).map((kind) => ({
      name: `${kind} ${period} limit`,
      error: spendingLimitExceeded(
        {
          subject: kind === 'app' ? { kind, userId: 'usr_1', appId: 'app_1' } : { kind, keyId: 'key_1' },
          period,
          limit: 5 * CREDIT,
        },
        4_500_000,
        1_000_001,
        NOW,
      ),
      schema: SpendingLimitRefusalSchema,
    })),
  );
  return [
    ...limits,
    {
      name: 'insufficient credits',
      error: insufficientCredits(500_000, 1_000_001),
      schema: InsufficientCreditsRefusalSchema,
    },
    { name: 'a debt owed', error: debtOwed(-2 * CREDIT, 3 * CREDIT), schema: InsufficientCreditsRefusalSchema },
  ];
}

it('every restriction billing raises is the wire package restriction body, inside the one error envelope', () => {
  for (const { name, error, schema } of restrictions()) {
    const body = bodyOf(error);
    assert.ok(Value.Check(ApiErrorSchema, body), `${name}: ${JSON.stringify(body)}`);
    assert.ok(Value.Check(schema, body.error), `${name}: ${JSON.stringify(body.error)}`);
    // No field beyond the wire type's: the type is the whole body, not a part of it.
    const declared = Object.keys(schema.properties);
    for (const field of Object.keys(body.error)) assert.ok(declared.includes(field), `${name}: ${field} is undeclared`);
  }
});

it("the SDK's parser reads every field of each restriction back, as the wire type declares it", () => {
  for (const { name, error } of restrictions()) {
    const body = bodyOf(error);
    const classified = classifyResponse(error.status, JSON.stringify(body));
    assert.ok(classified instanceof TollgateRestrictionError, name);
    const { kind, ...fields } = classified.restriction;
    assert.equal(kind, error.code === 'SPENDING_LIMIT_EXCEEDED' ? 'spending_limit' : 'insufficient_credits', name);
    assert.deepEqual(fields, body.error, name);
  }
});
