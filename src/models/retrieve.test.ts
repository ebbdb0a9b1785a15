import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { describeEachDatabase } from '../testing/harness.ts';
import { fundedUser, putModel } from '../gateway/testing.ts';

describeEachDatabase('GET /api/v1/models/:vendor/:model (one model, OpenAI format)', (env) => {
  before(async () => {
    await putModel(env, 'acme/one', {
      provider: 'echo',
      upstreamModel: 'echo',
      name: 'Acme One',
      pricing: { prompt: 1, completion: 2 },
      contextLength: 8000,
    });
    await putModel(env, 'acme/off', {
      provider: 'echo',
      upstreamModel: 'echo',
      pricing: { prompt: 1 },
      enabled: false,
    });
  });

  it("the official SDK's models.retrieve gets the model object, the same entry the list shows", async () => {
    const user = await fundedUser(env, 0);
    const client = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
    const model = await client.models.retrieve('acme/one');
    assert.equal(model.id, 'acme/one');
    assert.equal(model.object, 'model');
    assert.equal(model.owned_by, 'acme');
    assert.ok(Number.isInteger(model.created) && model.created > 0);
    const listed = (await env.request('GET', '/api/v1/models', { token: user.key })).body.data.find(
      (m: any) => m.id === 'acme/one',
    );
    assert.deepEqual(model, listed);
    assert.equal((model as any).context_length, 8000);
    await assert.rejects(
      client.models.retrieve('acme/missing'),
      (error: any) => error instanceof OpenAI.NotFoundError && error.code === 'MODEL_NOT_FOUND',
    );
  });

  it('a plain fetch works with the id as two path segments and URL-encoded in one', async () => {
    const user = await fundedUser(env, 0);
    for (const path of ['/api/v1/models/tollgate/echo', '/api/v1/models/tollgate%2Fecho']) {
      const response = await env.request('GET', path, { token: user.key });
      assert.equal(response.status, 200, `${path}: ${response.text}`);
      assert.equal(response.body.id, 'tollgate/echo');
      assert.equal(response.body.test, true);
    }
  });

  it('an unknown or disabled model is a 404 in the OpenAI envelope; no credential is a 401', async () => {
    const user = await fundedUser(env, 0);
    for (const path of ['/api/v1/models/acme/nope', '/api/v1/models/acme%2Foff', '/api/v1/models/acme/off']) {
      const response = await env.request('GET', path, { token: user.key });
      assert.equal(response.status, 404, path);
      assert.equal(response.body.error.code, 'MODEL_NOT_FOUND');
      assert.equal(response.body.error.type, 'not_found_error');
      assert.match(response.body.error.message, /GET \/api\/v1\/models/);
    }
    assert.equal((await env.request('GET', '/api/v1/models/tollgate/echo')).status, 401);
  });
});
