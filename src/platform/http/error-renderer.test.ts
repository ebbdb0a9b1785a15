import { it } from 'node:test';
import assert from 'node:assert/strict';
import Type from 'typebox';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser } from '../../gateway/testing.ts';
import { ApiError } from '../errors.ts';
import { createServer } from './server.ts';

/** An envelope no built-in family uses, shaped like Anthropic's, as an inbound protocol would declare it. */
const render = (error: ApiError) => ({
  type: 'error',
  error: { type: error.type, message: error.message, code: error.code, ...error.details },
});
const ErrorBody = Type.Object({
  type: Type.Literal('error'),
  error: Type.Object(
    { type: Type.String(), message: Type.String(), code: Type.String() },
    { additionalProperties: true },
  ),
});

describeEachDatabase("a route's own error renderer (config.errorRenderer)", (env) => {
  it('renders thrown errors, validation errors and authentication errors of that route, status and headers kept; other routes keep theirs', async () => {
    const app = await createServer(env.service.ctx);
    app.post(
      '/api/v1/test-protocol',
      {
        schema: {
          body: Type.Object({ n: Type.Integer() }),
          response: { 400: ErrorBody, 401: ErrorBody, 429: ErrorBody },
        },
        config: { auth: ['ai:chat'], errorRenderer: render },
      },
      async () => {
        throw new ApiError('RATE_LIMITED', 'Slow down.', { headers: { 'retry-after': '3' }, details: { limit: 5 } });
      },
    );
    app.get('/api/v1/plain', { config: { auth: ['ai:chat'] } }, async () => ({}));
    await app.ready();
    try {
      const user = await fundedUser(env, 0);
      const headers = { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' };
      const thrown = await app.inject({ method: 'POST', url: '/api/v1/test-protocol', headers, payload: { n: 1 } });
      assert.equal(thrown.statusCode, 429);
      assert.equal(thrown.headers['retry-after'], '3');
      assert.deepEqual(thrown.json(), {
        type: 'error',
        error: { type: 'rate_limit_error', message: 'Slow down.', code: 'RATE_LIMITED', limit: 5 },
      });
      const invalid = await app.inject({ method: 'POST', url: '/api/v1/test-protocol', headers, payload: { n: 'x' } });
      assert.equal(invalid.statusCode, 400);
      assert.equal(invalid.json().type, 'error');
      assert.equal(invalid.json().error.code, 'INVALID_REQUEST');
      const anonymous = await app.inject({
        method: 'POST',
        url: '/api/v1/test-protocol',
        headers: { 'content-type': 'application/json' },
        payload: { n: 1 },
      });
      assert.equal(anonymous.statusCode, 401);
      assert.equal(anonymous.json().error.code, 'UNAUTHENTICATED');
      const plain = await app.inject({ method: 'GET', url: '/api/v1/plain' });
      assert.equal(plain.statusCode, 401);
      assert.equal(plain.json().type, undefined);
      assert.equal(plain.json().error.code, 'UNAUTHENTICATED');
    } finally {
      await app.close();
    }
  });
});
