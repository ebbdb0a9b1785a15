import { before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser, putModel, wallet } from '../../gateway/testing.ts';

const TOOLS = [
  {
    type: 'function' as const,
    name: 'lookup',
    description: 'Looks a word up in the dictionary.',
    parameters: { type: 'object', properties: { word: { type: 'string' } }, required: ['word'] },
    strict: false,
  },
];

/** A one-pixel PNG, as a data URL. */
const PIXEL =
  'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

describeEachDatabase('counting the input tokens of a Responses request', (env) => {
  before(async () => {
    await putModel(env, 'acme/eye', {
      provider: 'echo',
      upstreamModel: 'echo',
      pricing: { prompt: 1, completion: 1 },
      imageTokens: 85,
      inputModalities: ['text', 'image'],
    });
  });

  const client = (key: string) => new OpenAI({ apiKey: key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });

  it("the official SDK's inputTokens.count answers the tokens the call is then billed for, and charges nothing", async () => {
    const user = await fundedUser(env, 10);
    const openai = client(user.key);
    const body = {
      model: 'tollgate/echo',
      instructions: 'Answer in one sentence.',
      input: 'The quick brown fox jumps over the lazy dog, twice, and then once more for luck.',
      tools: TOOLS,
    };
    const before = await wallet(env, user);
    const counted = await openai.responses.inputTokens.count(body);
    assert.equal(counted.object, 'response.input_tokens');
    assert.ok(counted.input_tokens > 20, JSON.stringify(counted));
    assert.deepEqual(await wallet(env, user), before);
    // The echo provider bills the prompt by the same tokenizer: the count is what the call then reports.
    const created = await openai.responses.create(body);
    assert.equal(created.usage?.input_tokens, counted.input_tokens);
  });

  it('counts the stored conversation a previous_response_id continues, and each image at the model budget', async () => {
    const user = await fundedUser(env, 10);
    const openai = client(user.key);
    const first = await openai.responses.create({
      model: 'tollgate/echo',
      input: 'Remember the word heliotrope.',
      store: true,
    });
    const alone = await openai.responses.inputTokens.count({ model: 'tollgate/echo', input: 'Which word?' });
    const continued = await openai.responses.inputTokens.count({
      model: 'tollgate/echo',
      input: 'Which word?',
      previous_response_id: first.id,
    });
    assert.ok(continued.input_tokens > alone.input_tokens, `${continued.input_tokens} > ${alone.input_tokens}`);
    const text = await openai.responses.inputTokens.count({ model: 'acme/eye', input: 'Describe it.' });
    const withImage = await openai.responses.inputTokens.count({
      model: 'acme/eye',
      input: [
        {
          role: 'user',
          content: [
            { type: 'input_text', text: 'Describe it.' },
            { type: 'input_image', image_url: PIXEL, detail: 'auto' },
          ],
        },
      ],
    });
    assert.equal(withImage.input_tokens - text.input_tokens, 85);
  });

  it('refuses as the call would: an unknown model (404), a field the call refuses (400, named), a missing model (400)', async () => {
    const user = await fundedUser(env, 10);
    const count = (body: unknown) => env.request('POST', '/api/v1/responses/input_tokens', { token: user.key, body });
    const unknown = await count({ model: 'acme/nothing-here', input: 'hi' });
    assert.equal(unknown.status, 404, unknown.text);
    const refused = await count({ model: 'tollgate/echo', input: 'hi', background: true });
    assert.equal(refused.status, 400, refused.text);
    assert.equal(refused.body.error.param, 'background');
    const noModel = await count({ input: 'hi' });
    assert.equal(noModel.status, 400, noModel.text);
    assert.match(noModel.body.error.message, /model/);
    const noInput = await count({ model: 'tollgate/echo' });
    assert.equal(noInput.status, 400, noInput.text);
    assert.equal(noInput.body.error.param, 'input');
  });

  it('needs the permission the call needs, and a key limited to other models may not count on this one (403)', async () => {
    const embedOnly = await fundedUser(env, 10, ['ai:embeddings']);
    const denied = await env.request('POST', '/api/v1/responses/input_tokens', {
      token: embedOnly.key,
      body: { model: 'tollgate/echo', input: 'hi' },
    });
    assert.equal(denied.status, 403, denied.text);
    const user = await fundedUser(env, 10);
    const limited = await env.dashboard(user.session, 'POST', '/api/user/api-keys', {
      name: 'eye only',
      permissions: ['ai:chat'],
      models: ['acme/eye'],
    });
    assert.equal(limited.status, 200, limited.text);
    const other = await env.request('POST', '/api/v1/responses/input_tokens', {
      token: limited.body.apiKey.key,
      body: { model: 'tollgate/echo', input: 'hi' },
    });
    assert.equal(other.status, 403, other.text);
    assert.match(other.body.error.message, /may call only/);
    const own = await env.request('POST', '/api/v1/responses/input_tokens', {
      token: limited.body.apiKey.key,
      body: { model: 'acme/eye', input: 'hi' },
    });
    assert.equal(own.status, 200, own.text);
    const anonymous = await env.request('POST', '/api/v1/responses/input_tokens', {
      body: { model: 'tollgate/echo', input: 'hi' },
    });
    assert.equal(anonymous.status, 401, anonymous.text);
  });
});
