import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import {
  classifyResponse,
  TollgateRequestError,
  TollgateRestrictionError,
  isInsufficientCreditsError,
  isSpendingLimitError,
} from '../src/index.ts';

// Contract §7.2: a restriction iff non-2xx AND the JSON body has an `error` property; otherwise a generic
// failure that carries `message` when the body has one.
describe('error classification (contract §7.2)', () => {
  test('a 429 spending-limit body becomes a typed spending_limit restriction with every extra field', () => {
    const body = {
      error: {
        code: 'SPENDING_LIMIT_EXCEEDED',
        message: 'Daily spending limit exceeded',
        type: 'spending_limit_error',
        limitType: 'daily',
        limit: 2.5,
        current: 2,
        requested: 1,
        resetsAt: '2030-01-02T00:00:00.000Z',
      },
    };
    const error = classifyResponse(429, JSON.stringify(body));
    assert.ok(error instanceof TollgateRestrictionError);
    assert.ok(isSpendingLimitError(error));
    assert.equal(error.status, 429);
    assert.equal(error.code, 'SPENDING_LIMIT_EXCEEDED');
    assert.equal(error.message, 'Daily spending limit exceeded');
    assert.deepEqual(error.restriction, { kind: 'spending_limit', ...body.error });
    assert.deepEqual(error.details, body.error);
  });

  test('a 402 insufficient-credits body becomes an insufficient_credits restriction with available and required', () => {
    const body = {
      error: {
        code: 'INSUFFICIENT_CREDITS',
        message: 'Insufficient credits',
        type: 'insufficient_credits_error',
        available: 0.4,
        required: 1.000001,
      },
    };
    const error = classifyResponse(402, JSON.stringify(body));
    assert.ok(isInsufficientCreditsError(error));
    assert.deepEqual(error.restriction, { kind: 'insufficient_credits', ...body.error });
    assert.equal(isSpendingLimitError(error), false);
  });

  test("Anthropic's envelope (the Messages routes) is classified by its code: the contract's fields are inside error", () => {
    const limit = {
      type: 'error',
      error: {
        type: 'rate_limit_error',
        message: 'Daily spending limit exceeded',
        code: 'SPENDING_LIMIT_EXCEEDED',
        limitType: 'daily',
        limit: 2,
        current: 2,
        requested: 1,
        resetsAt: '2030-01-02T00:00:00.000Z',
      },
      request_id: 'r1',
    };
    const spending = classifyResponse(429, JSON.stringify(limit));
    assert.ok(isSpendingLimitError(spending));
    assert.deepEqual(spending.restriction, { kind: 'spending_limit', ...limit.error });
    const credits = {
      type: 'error',
      error: {
        type: 'billing_error',
        message: 'Insufficient credits',
        code: 'INSUFFICIENT_CREDITS',
        available: 0.5,
        required: 1,
      },
    };
    const insufficient = classifyResponse(402, JSON.stringify(credits));
    assert.ok(isInsufficientCreditsError(insufficient));
    assert.deepEqual(insufficient.restriction, { kind: 'insufficient_credits', ...credits.error });
  });

  test('a 402 of a wallet that owes a debt keeps what is owed', () => {
    const body = {
      error: {
        code: 'INSUFFICIENT_CREDITS',
        message: 'Insufficient credits: your wallet owes 9 credits',
        type: 'insufficient_credits_error',
        available: 0,
        required: 9,
        owed: 9,
      },
    };
    const error = classifyResponse(402, JSON.stringify(body));
    assert.ok(isInsufficientCreditsError(error));
    assert.deepEqual(error.restriction, { kind: 'insufficient_credits', ...body.error });
  });

  test('any other non-2xx body with an error object is a restriction of kind other, code and message kept', () => {
    const error = classifyResponse(
      401,
      JSON.stringify({ error: { code: 'UNAUTHENTICATED', message: 'Token revoked', type: 'authentication_error' } }),
    );
    assert.ok(error instanceof TollgateRestrictionError);
    assert.deepEqual(error.restriction, {
      kind: 'other',
      code: 'UNAUTHENTICATED',
      message: 'Token revoked',
      type: 'authentication_error',
    });
  });

  test('an error property that is a string (the keys envelope) is still a restriction, its text the message', () => {
    const error = classifyResponse(400, JSON.stringify({ success: false, error: 'API key name is required' }));
    assert.ok(error instanceof TollgateRestrictionError);
    assert.equal(error.code, 'UNKNOWN');
    assert.equal(error.message, 'API key name is required');
  });

  test('an error property that is null still makes a restriction (the property is present)', () => {
    const error = classifyResponse(500, JSON.stringify({ error: null, message: 'x' }));
    assert.ok(error instanceof TollgateRestrictionError);
  });

  test('a non-2xx JSON body without error is a generic failure carrying its message', () => {
    const error = classifyResponse(503, JSON.stringify({ message: 'Down for maintenance' }));
    assert.ok(error instanceof TollgateRequestError);
    assert.equal(error.status, 503);
    assert.equal(error.serverMessage, 'Down for maintenance');
    assert.equal(error.message, 'Down for maintenance');
  });

  test('a generic failure without a message says the status', () => {
    for (const [status, text] of [
      [502, '<html>Bad gateway</html>'],
      [500, ''],
      [404, '[1,2]'],
      [400, 'null'],
      [418, '{"message":42}'],
    ] as const) {
      const error = classifyResponse(status, text);
      assert.ok(error instanceof TollgateRequestError, `${status} ${text}`);
      assert.equal(error.serverMessage, undefined);
      assert.equal(error.message, `Request failed with status ${status}`);
    }
  });

  test('an inherited error property does not count, only the body’s own', () => {
    const error = classifyResponse(400, '{"__proto__":{"error":{"code":"X"}}}');
    assert.ok(error instanceof TollgateRequestError);
  });

  test('a 2xx is never an error, even with an error property', () => {
    assert.equal(classifyResponse(200, JSON.stringify({ error: { code: 'SPENDING_LIMIT_EXCEEDED' } })), null);
    assert.equal(classifyResponse(204, ''), null);
  });
});
