import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { describeEachDatabase } from '../testing/harness.ts';
import { authorizeForTest } from '../oauth/testing.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { fundedUser, keyWithDailyLimit, putModel, settled } from './testing.ts';

const mock = await startMockUpstream();
after(() => mock.close());

/** What a third-party developer does with the official SDK, whatever the credential. */
async function exerciseSdk(client: OpenAI): Promise<void> {
  const completion = await client.chat.completions.create({
    model: 'acme/chat',
    messages: [{ role: 'user', content: 'hi' }],
  });
  assert.equal(completion.choices[0].message.content, 'alpha beta gamma delta');

  const stream = await client.chat.completions.create({
    model: 'acme/chat',
    messages: [{ role: 'user', content: 'hi' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let text = '';
  let usage: OpenAI.CompletionUsage | null | undefined;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.delta?.content ?? '';
    usage ??= chunk.usage;
  }
  assert.equal(text, 'alpha beta gamma delta');
  assert.equal(usage?.completion_tokens, 4);

  const embedding = await client.embeddings.create({ model: 'acme/embed', input: ['one', 'two'] });
  assert.equal(embedding.data.length, 2);
  assert.deepEqual(
    embedding.data[1].embedding.map((x) => Math.round(x * 10) / 10),
    [0.1, 0.2, 0.3],
  );

  const ids: string[] = [];
  for await (const model of client.models.list()) ids.push(model.id);
  assert.ok(ids.includes('acme/chat') && ids.includes('tollgate/echo'));

  // The SDK's typed errors see the gateway's envelope.
  await assert.rejects(
    client.chat.completions.create({ model: 'acme/missing', messages: [{ role: 'user', content: 'hi' }] }),
    (error: any) => error.status === 404 && error.code === 'MODEL_NOT_FOUND',
  );
}

describeEachDatabase(
  'the official openai client against Tollgate',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/chat', {
        provider: 'mock',
        upstreamModel: 'default-model',
        pricing: { prompt: 1, completion: 1 },
        maxOutputTokens: 100,
      });
      await putModel(env, 'acme/embed', {
        provider: 'mock',
        upstreamModel: 'text-embedding',
        pricing: { prompt: 1 },
        outputModalities: ['embedding'],
      });
    });

    it('with an API key: a chat, a streamed chat, an embedding and a model listing', async () => {
      const user = await fundedUser(env, 10);
      await exerciseSdk(new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 }));
      assert.ok((await settled(env, user)).balance < 10_000_000);
    });

    it('with an OAuth access token: the same calls', async () => {
      const authorization = await authorizeForTest(env);
      await env.admin('POST', `/api/admin/users/${authorization.user.userId}/credits`, { amount: 10 });
      await exerciseSdk(
        new OpenAI({ apiKey: authorization.accessToken, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 }),
      );
    });

    it('with its default retries, the SDK sends a spending-limit or credit refusal once: the answer says no retry can help', async () => {
      let requests = 0;
      const counted = (key: string) =>
        new OpenAI({
          apiKey: key,
          baseURL: `${env.baseUrl}/api/v1`,
          fetch: (url: string | URL | Request, init?: RequestInit) => {
            requests++;
            return fetch(url, init);
          },
        });
      const hi = { model: 'acme/chat', messages: [{ role: 'user' as const, content: 'hi' }] };

      const user = await fundedUser(env, 10);
      // Below the call's worst case: 100 output tokens and the prompt at 1 credit per million tokens.
      const limited = await keyWithDailyLimit(env, user, 0.00001);
      await assert.rejects(
        counted(limited).chat.completions.create(hi),
        (error: any) =>
          error.status === 429 &&
          error.code === 'SPENDING_LIMIT_EXCEEDED' &&
          error.headers.get('x-should-retry') === 'false',
      );
      assert.equal(requests, 1);

      const poor = await fundedUser(env, 0);
      requests = 0;
      await assert.rejects(
        counted(poor.key).chat.completions.create(hi),
        (error: any) => error.status === 402 && error.headers.get('x-should-retry') === 'false',
      );
      assert.equal(requests, 1);
    });
  },
  { config: { providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }] } },
);
