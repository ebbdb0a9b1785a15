import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase, type DashboardSession, type TestEnv } from '../testing/harness.ts';
import { authorizeForTest } from '../oauth/testing.ts';

/** The caller's keys as listed, by name. */
async function listedByName(env: TestEnv, session: DashboardSession): Promise<Map<string, any>> {
  const response = await env.dashboard(session, 'GET', '/api/user/api-keys');
  assert.equal(response.status, 200, response.text);
  return new Map(response.body.apiKeys.map((key: any) => [key.name, key]));
}

describeEachDatabase('an API key limited to some models: creation and listing', (env) => {
  it('create takes models (ids, vendor wildcards, a deeper prefix): the answer keeps the contract five fields, the list shows them as given, each once', async () => {
    const session = await env.createUser();
    const models = ['acme/cheap', 'anthropic/*', 'openrouter/anthropic/*', 'acme/cheap', 'tollgate/echo'];
    const created = await env.dashboard(session, 'POST', '/api/user/api-keys', {
      name: 'ci job',
      permissions: ['ai:chat'],
      models,
    });
    assert.equal(created.status, 200, created.text);
    assert.deepEqual(Object.keys(created.body.apiKey).sort(), ['createdAt', 'id', 'key', 'name', 'permissions']);

    const listed = await listedByName(env, session);
    assert.deepEqual(listed.get('ci job').models, [
      'acme/cheap',
      'anthropic/*',
      'openrouter/anthropic/*',
      'tollgate/echo',
    ]);
  });

  it('models absent, null or empty is a key for every model, listed as null', async () => {
    const session = await env.createUser();
    for (const [name, extra] of [
      ['absent', {}],
      ['null', { models: null }],
      ['empty', { models: [] }],
    ] as const) {
      const created = await env.dashboard(session, 'POST', '/api/user/api-keys', {
        name,
        permissions: ['ai:chat'],
        ...extra,
      });
      assert.equal(created.status, 200, created.text);
    }
    const listed = await listedByName(env, session);
    for (const name of ['absent', 'null', 'empty']) assert.equal(listed.get(name).models, null, name);
  });

  it('an entry that is neither a model id nor a vendor wildcard is a 400 naming it by its index, and nothing is created', async () => {
    const session = await env.createUser();
    const rule = 'is not a catalogue model id (<vendor>/<model>) or a vendor wildcard (<vendor>/*)';
    for (const bad of ['gpt-4o', '*', '*/*', 'openai/*/mini', 'openai/gpt*', 'openai/gpt 4o', '/gpt', '', 42, null]) {
      const response = await env.dashboard(session, 'POST', '/api/user/api-keys', {
        name: 'k',
        permissions: ['ai:chat'],
        models: ['openai/*', bad],
      });
      assert.equal(response.status, 400, JSON.stringify(bad));
      assert.equal(response.body.success, false);
      assert.equal(
        response.body.error,
        `models[1] ${JSON.stringify(bad)} ${rule}, of at most 300 characters`,
        JSON.stringify(bad),
      );
    }
    const long = `acme/${'m'.repeat(296)}`;
    const tooLong = await env.dashboard(session, 'POST', '/api/user/api-keys', {
      name: 'k',
      permissions: ['ai:chat'],
      models: [long],
    });
    assert.equal(tooLong.status, 400);
    assert.match(tooLong.body.error, /^models\[0\] "acme\/m+" is not a catalogue model id/);

    const notAList = await env.dashboard(session, 'POST', '/api/user/api-keys', {
      name: 'k',
      permissions: ['ai:chat'],
      models: 'openai/*',
    });
    assert.equal(notAList.status, 400);
    assert.match(notAList.body.error, /^models must be an array of model ids or vendor wildcards/);
    assert.equal((await listedByName(env, session)).size, 0);
  });

  it('a key takes at most 100 models: 100 are kept, 101 are a 400 that says the bound and suggests a wildcard', async () => {
    const session = await env.createUser();
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `acme/model-${i}`);
    const hundred = await env.dashboard(session, 'POST', '/api/user/api-keys', {
      name: 'hundred',
      permissions: ['ai:chat'],
      models: ids(100),
    });
    assert.equal(hundred.status, 200, hundred.text);
    const tooMany = await env.dashboard(session, 'POST', '/api/user/api-keys', {
      name: 'too many',
      permissions: ['ai:chat'],
      models: ids(101),
    });
    assert.equal(tooMany.status, 400);
    assert.equal(
      tooMany.body.error,
      'models holds 101 entries; a key takes at most 100 (a vendor wildcard such as "openai/*" covers a vendor\'s every model)',
    );
    const listed = await listedByName(env, session);
    assert.deepEqual([...listed.keys()], ['hundred']);
    assert.deepEqual(listed.get('hundred').models, ids(100));
  });

  it("an app's OAuth token creates a key with models; the app lists it with them", async () => {
    const user = await env.createUser();
    const authorization = await authorizeForTest(env, { user });
    const created = await env.request('POST', '/api/user/api-keys', {
      token: authorization.accessToken,
      body: { name: 'minted', permissions: ['ai:chat'], models: ['acme/*'] },
    });
    assert.equal(created.status, 200, created.text);
    const listed = await env.request('GET', '/api/user/api-keys', { token: authorization.accessToken });
    assert.equal(listed.status, 200, listed.text);
    assert.deepEqual(
      listed.body.apiKeys.map((key: any) => [key.name, key.models]),
      [['minted', ['acme/*']]],
    );
  });
});
