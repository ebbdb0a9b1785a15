import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import Anthropic from '@anthropic-ai/sdk';
import { describeEachDatabase, type TestEnv } from '../testing/harness.ts';
import { startMockUpstream } from '../providers/testing/mock-upstream.ts';
import { authorizeForTest } from '../oauth/testing.ts';
import { fundedUser, holdsOf, putModel, settled, usageOf, wallet, type FundedUser } from './testing.ts';

/**
 * An API key created with `models` calls only those models, on every surface: refused with 403 before anything
 * is held or sent, its fallbacks filtered, the models list filtered; an app's OAuth token is not limited.
 */
const mock = await startMockUpstream();
after(() => mock.close());

/** 1 µcr a prompt token, 2 a completion token. */
const pricing = { prompt: 1, completion: 2 };
const question = [{ role: 'user' as const, content: 'Hello?' }];

const openai = (env: TestEnv, key: string) =>
  new OpenAI({ apiKey: key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
const anthropic = (env: TestEnv, key: string) =>
  new Anthropic({ apiKey: key, authToken: null, baseURL: `${env.baseUrl}/api`, maxRetries: 0 });

/** A new key of `user` that may call only `models`. */
async function keyFor(
  env: TestEnv,
  user: FundedUser,
  models: string[],
  permissions = ['ai:chat', 'ai:models', 'ai:embeddings', 'ai:images'],
): Promise<string> {
  const created = await env.dashboard(user.session, 'POST', '/api/user/api-keys', {
    name: `only ${models.join(' ')}`,
    permissions,
    models,
  });
  assert.equal(created.status, 200, created.text);
  return created.body.apiKey.key;
}

/**
 * What a refused call must leave as it was: the wallet, the holds, the ledger and the upstream's requests. Taken
 * once the user's earlier calls have settled and written their `usage` records.
 */
async function snapshot(env: TestEnv, user: FundedUser, usage: number) {
  await settled(env, user);
  await usageOf(env, user, usage);
  const transactions = await env.db
    .selectFrom('ledger_transactions')
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .executeTakeFirstOrThrow();
  return {
    wallet: await wallet(env, user),
    holds: await holdsOf(env, user),
    ledgerTransactions: Number(transactions.n),
    usage: (await usageOf(env, user, 0)).length,
    upstreamRequests: mock.requests.length,
  };
}

/** A 403 PERMISSION_DENIED from the openai SDK that names the key's models and the model refused. */
const refusedByOpenAi = (model: string, allowed: RegExp) => (error: any) =>
  error instanceof OpenAI.PermissionDeniedError &&
  error.code === 'PERMISSION_DENIED' &&
  error.type === 'permission_error' &&
  allowed.test(error.message) &&
  error.message.includes(`"${model}" is not among them`);

describeEachDatabase(
  'an API key limited to some models, at the gateway',
  (env) => {
    before(async () => {
      const mockModel = (upstreamModel: string, extra: Record<string, unknown> = {}) => ({
        provider: 'mock',
        upstreamModel,
        pricing,
        maxOutputTokens: 50,
        ...extra,
      });
      await putModel(env, 'acme/cheap', mockModel('cheap'));
      await putModel(env, 'acme/pricey', mockModel('pricey'));
      await putModel(env, 'other/chat', mockModel('other-chat'));
      await putModel(env, 'acme/flaky', mockModel('status-503', { fallbacks: ['other/chat', 'acme/cheap'] }));
      await putModel(env, 'acme/embed', {
        provider: 'mock',
        upstreamModel: 'embed',
        pricing: { prompt: 1 },
        outputModalities: ['embedding'],
      });
      await putModel(env, 'other/embed', {
        provider: 'mock',
        upstreamModel: 'other-embed',
        pricing: { prompt: 1 },
        outputModalities: ['embedding'],
      });
      await putModel(env, 'anthropic/claude', {
        provider: 'anthropic',
        upstreamModel: 'claude-test',
        pricing,
        maxOutputTokens: 50,
      });
      await putModel(env, 'replicate/flux', {
        provider: 'replicate',
        upstreamModel: 'black-forest-labs/flux',
        pricing: { request: 1 },
        outputModalities: ['image'],
      });
    });

    it('openai chat.completions with a key for acme/*: acme/cheap answers and is charged; other/chat is a 403 naming the key models, streamed or not, nothing held, charged or sent upstream', async () => {
      const user = await fundedUser(env, 1);
      const client = openai(env, await keyFor(env, user, ['acme/*']));
      const answer = await client.chat.completions.create({ model: 'acme/cheap', messages: question });
      assert.equal(answer.choices[0].message.content, 'alpha beta gamma delta');
      assert.equal(mock.requests.at(-1)!.body.model, 'cheap');

      const before = await snapshot(env, user, 1);
      assert.equal(before.usage, 1);
      for (const stream of [false, true])
        await assert.rejects(
          client.chat.completions.create({ model: 'other/chat', messages: question, stream }),
          refusedByOpenAi('other/chat', /^403 This API key may call only acme\/\*;/),
        );
      assert.deepEqual(await snapshot(env, user, 1), before);
    });

    it('a fallback the key may not call is not tried: acme/flaky fails over to acme/cheap, past other/chat; an unlimited key tries other/chat first', async () => {
      const user = await fundedUser(env, 1);
      const upstreamModels = async (key: string) => {
        const from = mock.requests.length;
        await openai(env, key).chat.completions.create({ model: 'acme/flaky', messages: question });
        return mock.requests.slice(from).map((request) => request.body.model);
      };
      assert.deepEqual(await upstreamModels(user.key), ['status-503', 'other-chat']);
      assert.deepEqual(await upstreamModels(await keyFor(env, user, ['acme/*'])), ['status-503', 'cheap']);
      const usage = await usageOf(env, user, 2);
      assert.deepEqual(usage.map((record) => record.model).sort(), ['acme/cheap', 'other/chat']);
    });

    it('an unknown model is still the catalogue 404, whatever the key may call', async () => {
      const user = await fundedUser(env, 1);
      await assert.rejects(
        openai(env, await keyFor(env, user, ['acme/*'])).chat.completions.create({
          model: 'acme/missing',
          messages: question,
        }),
        (error: any) => error instanceof OpenAI.NotFoundError && error.code === 'MODEL_NOT_FOUND',
      );
    });

    it('Anthropic messages and count_tokens with @anthropic-ai/sdk: a key for anthropic/claude answers; a key for acme/cheap is a 403 permission_error, nothing held or sent', async () => {
      const user = await fundedUser(env, 1);
      const allowed = anthropic(env, await keyFor(env, user, ['anthropic/claude']));
      const message = await allowed.messages.create({ model: 'anthropic/claude', max_tokens: 20, messages: question });
      assert.equal(message.type, 'message');
      assert.equal(mock.requests.at(-1)!.body.model, 'claude-test');
      await settled(env, user);

      const refused = anthropic(env, await keyFor(env, user, ['acme/cheap']));
      const before = await snapshot(env, user, 1);
      const isRefusal = (error: unknown) => {
        if (!(error instanceof Anthropic.PermissionDeniedError)) return false;
        const body = error.error as { type: string; error: { type: string; code: string; message: string } };
        return (
          body.type === 'error' &&
          body.error.type === 'permission_error' &&
          body.error.code === 'PERMISSION_DENIED' &&
          /^This API key may call only acme\/cheap; "anthropic\/claude" is not among them/.test(body.error.message)
        );
      };
      for (const stream of [false, true])
        await assert.rejects(
          refused.messages.create({ model: 'anthropic/claude', max_tokens: 20, messages: question, stream }),
          isRefusal,
        );
      await assert.rejects(refused.messages.countTokens({ model: 'anthropic/claude', messages: question }), isRefusal);
      assert.deepEqual(await snapshot(env, user, 1), before);
    });

    it('embeddings, image generations and predictions refuse a model the key may not call with the same 403, nothing held or sent', async () => {
      const user = await fundedUser(env, 1);
      const key = await keyFor(env, user, ['acme/embed', 'acme/cheap']);
      const client = openai(env, key);
      const embedded = await client.embeddings.create({ model: 'acme/embed', input: 'hello' });
      assert.equal(embedded.data.length, 1);
      await settled(env, user);
      const before = await snapshot(env, user, 1);
      await assert.rejects(
        client.embeddings.create({ model: 'other/embed', input: 'hello' }),
        refusedByOpenAi('other/embed', /^403 This API key may call only acme\/embed, acme\/cheap;/),
      );
      await assert.rejects(
        client.images.generate({ model: 'replicate/flux', prompt: 'a cat' }),
        refusedByOpenAi('replicate/flux', /only acme\/embed, acme\/cheap;/),
      );
      const prediction = await env.request('POST', '/api/v1/predictions', {
        token: key,
        body: { model: 'replicate/flux', input: { prompt: 'a cat' } },
      });
      assert.equal(prediction.status, 403, prediction.text);
      assert.equal(prediction.body.error.code, 'PERMISSION_DENIED');
      assert.match(prediction.body.error.message, /"replicate\/flux" is not among them/);
      assert.deepEqual(await snapshot(env, user, 1), before);
    });

    it('GET /api/v1/models with a key for acme/* and anthropic/claude lists only those; another model is a 404 there, as an unknown one', async () => {
      const user = await fundedUser(env, 0);
      const client = openai(env, await keyFor(env, user, ['acme/*', 'anthropic/claude'], ['ai:models']));
      const listed = [];
      for await (const model of client.models.list()) listed.push(model.id);
      assert.deepEqual(listed.sort(), ['acme/cheap', 'acme/embed', 'acme/flaky', 'acme/pricey', 'anthropic/claude']);
      assert.equal((await client.models.retrieve('acme/pricey')).id, 'acme/pricey');
      for (const id of ['other/chat', 'replicate/flux', 'tollgate/echo'])
        await assert.rejects(
          client.models.retrieve(id),
          (error: any) => error instanceof OpenAI.NotFoundError && error.code === 'MODEL_NOT_FOUND',
          id,
        );
      const path = await env.request('GET', '/api/v1/models/other/chat', { token: user.key });
      assert.equal(path.status, 200, 'the unlimited key of the same user sees it');
    });

    it("an app's OAuth token is not limited; a key the app creates with models is", async () => {
      const user = await fundedUser(env, 1);
      const authorization = await authorizeForTest(env, {
        user: user.session,
        scopes: ['ai:chat', 'ai:models', 'apikeys:read', 'apikeys:write'],
      });
      const app = openai(env, authorization.accessToken);
      const everything = [];
      for await (const model of app.models.list()) everything.push(model.id);
      assert.ok(everything.includes('other/chat') && everything.includes('acme/cheap'), everything.join());
      const answer = await app.chat.completions.create({ model: 'other/chat', messages: question });
      assert.equal(answer.choices[0].message.content, 'alpha beta gamma delta');

      const created = await env.request('POST', '/api/user/api-keys', {
        token: authorization.accessToken,
        body: { name: 'minted', permissions: ['ai:chat'], models: ['acme/cheap'] },
      });
      assert.equal(created.status, 200, created.text);
      const minted = openai(env, created.body.apiKey.key);
      await minted.chat.completions.create({ model: 'acme/cheap', messages: question });
      await settled(env, user);
      const before = await snapshot(env, user, 2);
      await assert.rejects(
        minted.chat.completions.create({ model: 'other/chat', messages: question }),
        refusedByOpenAi('other/chat', /^403 This API key may call only acme\/cheap;/),
      );
      assert.deepEqual(await snapshot(env, user, 2), before);
    });
  },
  {
    config: {
      providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }],
      ANTHROPIC_BASE_URL: mock.url,
      ANTHROPIC_API_KEY: 'sk-ant-mock',
    },
  },
);
