import { beforeEach, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { KyselyPlugin } from 'kysely';
import {
  describeEachDatabase,
  request,
  startServeProcess,
  type DashboardSession,
  type TestEnv,
} from '../testing/harness.ts';
import { decrypt, sha256Hex } from '../platform/crypto.ts';
import { createKeyAuthenticator, LAST_USED_INTERVAL_MS } from './authenticate.ts';
import { generateApiKey, isWellFormedApiKey } from './format.ts';
import { allTables } from '../testing/all-tables.ts';

async function createKey(
  env: TestEnv,
  session: DashboardSession,
  permissions = ['ai:chat'],
  extra: Record<string, unknown> = {},
) {
  const response = await env.dashboard(session, 'POST', '/api/user/api-keys', { name: 'k', permissions, ...extra });
  assert.equal(response.status, 200, response.text);
  return response.body.apiKey as { id: string; key: string };
}

/** A different character at `index` of `value`. */
function withCharChanged(value: string, index: number): string {
  const replacement = value[index] === 'A' ? 'B' : 'A';
  return value.slice(0, index) + replacement + value.slice(index + 1);
}

describe('API key format', () => {
  it('a new key is ak_ + 40 random base62 characters + a 6-character checksum, and is well formed', () => {
    const keys = new Set(Array.from({ length: 50 }, generateApiKey));
    assert.equal(keys.size, 50);
    for (const key of keys) {
      assert.match(key, /^ak_[0-9A-Za-z]{46}$/);
      assert.ok(isWellFormedApiKey(key));
    }
  });

  it('any single changed character, a wrong prefix or a wrong length fails the check', () => {
    const key = generateApiKey();
    for (let i = 3; i < key.length; i++)
      assert.equal(isWellFormedApiKey(withCharChanged(key, i)), false, `position ${i}`);
    assert.equal(isWellFormedApiKey('sk_' + key.slice(3)), false);
    assert.equal(isWellFormedApiKey(key + 'A'), false);
    assert.equal(isWellFormedApiKey(key.slice(0, -1)), false);
  });
});

describeEachDatabase('API key authentication', (env) => {
  it('a key authenticates and is held to its permissions: /api/user/me (needs "read") is a 403 in the api envelope', async () => {
    const session = await env.createUser();
    const key = await createKey(env, session, ['ai:chat', 'billing:read']);
    const response = await env.request('GET', '/api/user/me', { token: key.key });
    assert.equal(response.status, 403);
    assert.equal(response.body.error.code, 'PERMISSION_DENIED');
    assert.equal(response.body.error.type, 'permission_error');
  });

  it('a well-formed key that was never issued is a 401', async () => {
    const response = await env.request('GET', '/api/user/me', { token: generateApiKey() });
    assert.equal(response.status, 401);
    assert.equal(response.body.error.code, 'UNAUTHENTICATED');
  });

  it('a revoked key is refused with 401 on its next use', async () => {
    const session = await env.createUser();
    const key = await createKey(env, session);
    assert.equal((await env.request('GET', '/api/user/me', { token: key.key })).status, 403);
    assert.equal((await env.dashboard(session, 'DELETE', `/api/user/api-keys/${key.id}`)).status, 200);
    const after = await env.request('GET', '/api/user/me', { token: key.key });
    assert.equal(after.status, 401);
    assert.equal(after.body.error.code, 'UNAUTHENTICATED');
    const row = await env.db
      .selectFrom('api_keys')
      .select('revoked_at')
      .where('id', '=', key.id)
      .executeTakeFirstOrThrow();
    assert.notEqual(row.revoked_at, null, 'the row stays, marked revoked');
  });

  it("a revocation announced on the bus drops the key from another authenticator's cache", async () => {
    const ctx = env.service.ctx;
    const session = await env.createUser();
    const key = await createKey(env, session);
    const otherProcess = createKeyAuthenticator({ db: ctx.db, clock: ctx.clock, log: ctx.log, bus: ctx.bus });
    assert.equal((await otherProcess.resolve(key.key))?.keyId, key.id);
    assert.equal((await env.dashboard(session, 'DELETE', `/api/user/api-keys/${key.id}`)).status, 200);
    assert.equal(await otherProcess.resolve(key.key), null);
    await otherProcess.settled();
  });

  it('a key with a bad checksum is refused with 401 before any database query', async () => {
    const ctx = env.service.ctx;
    const session = await env.createUser();
    const key = await createKey(env, session);
    const tampered = withCharChanged(key.key, 10);

    const response = await env.request('GET', '/api/user/me', { token: tampered });
    assert.equal(response.status, 401);
    assert.equal(response.body.error.code, 'UNAUTHENTICATED');

    // Count every statement an authenticator sends through the service's own connection pool.
    let queries = 0;
    const counter: KyselyPlugin = {
      transformQuery: (args) => (queries++, args.node),
      transformResult: async (args) => args.result,
    };
    const authenticator = createKeyAuthenticator({
      db: ctx.db.withPlugin(counter),
      clock: ctx.clock,
      log: ctx.log,
      bus: ctx.bus,
    });
    assert.equal(await authenticator.resolve(tampered), null);
    assert.equal(queries, 0, 'a bad checksum costs no query');
    assert.equal(await authenticator.resolve(generateApiKey()), null);
    assert.equal(queries, 1, 'a well-formed unknown key costs one lookup (the counter counts)');
  });

  it('the key value is kept only as its SHA-256 and sealed with AES-256-GCM, never in clear', async () => {
    const ctx = env.service.ctx;
    const session = await env.createUser();
    const key = await createKey(env, session);
    const row = await allTables(ctx.db)
      .selectFrom('api_keys')
      .selectAll()
      .where('id', '=', key.id)
      .executeTakeFirstOrThrow();
    assert.equal(row.key_hash, sha256Hex(key.key));
    assert.match(row.key_sealed, /^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
    assert.equal(decrypt(ctx.secrets.encryptionKey, row.key_sealed), key.key);
    for (const [column, value] of Object.entries(row)) {
      assert.ok(!String(value).includes(key.key.slice(3)), `column ${column} holds the key in clear`);
    }
  });
});

describeEachDatabase(
  'API key lastUsed',
  (env) => {
    async function lastUsedAt(keyId: string) {
      await env.service.ctx.keys.settled();
      const row = await env.db
        .selectFrom('api_keys')
        .select('last_used_at')
        .where('id', '=', keyId)
        .executeTakeFirstOrThrow();
      return row.last_used_at;
    }

    it('is recorded on use and written at most once a minute per key, across processes too', async () => {
      const ctx = env.service.ctx;
      const clock = env.manualClock;
      const session = await env.createUser();
      const key = await createKey(env, session);
      assert.equal(await lastUsedAt(key.id), null);

      const firstUse = clock.now();
      await env.request('GET', '/api/user/me', { token: key.key });
      assert.equal(await lastUsedAt(key.id), firstUse);
      const listed = await env.dashboard(session, 'GET', '/api/user/api-keys');
      assert.equal(listed.body.apiKeys[0].lastUsed, new Date(firstUse).toISOString());

      clock.advance(LAST_USED_INTERVAL_MS / 2);
      await env.request('GET', '/api/user/me', { token: key.key });
      assert.equal(await lastUsedAt(key.id), firstUse, 'this process does not write again within the minute');

      // Another process has no memory of the first write; the UPDATE's own condition keeps it from writing.
      let updates = 0;
      const counter: KyselyPlugin = {
        transformQuery: (args) => (args.node.kind === 'UpdateQueryNode' && updates++, args.node),
        transformResult: async (args) => args.result,
      };
      const otherProcess = createKeyAuthenticator({
        db: ctx.db.withPlugin(counter),
        clock,
        log: ctx.log,
        bus: ctx.bus,
      });
      assert.ok(await otherProcess.resolve(key.key));
      await otherProcess.settled();
      assert.equal(await lastUsedAt(key.id), firstUse, 'another process does not write again within the minute');
      assert.equal(updates, 1);
      assert.ok(await otherProcess.resolve(key.key));
      assert.equal(updates, 1, 'once it has tried, a process does not even send the UPDATE again within the minute');

      clock.advance(LAST_USED_INTERVAL_MS / 2 + 1);
      await env.request('GET', '/api/user/me', { token: key.key });
      assert.equal(await lastUsedAt(key.id), firstUse + LAST_USED_INTERVAL_MS + 1);
    });
  },
  { manualClock: true },
);

describeEachDatabase(
  'API key revocation across processes',
  (env) => {
    it('a key revoked through one process is refused by another that had it cached', async () => {
      const other = await startServeProcess(env, { REDIS_URL: 'redis://127.0.0.1:6379' });
      try {
        const session = await env.createUser();
        const key = await createKey(env, session);
        const useOnOther = () => request(other.baseUrl, 'GET', '/api/user/me', { token: key.key });
        assert.equal((await useOnOther()).status, 403, 'the other process knows the key (and now caches it)');
        assert.equal((await env.dashboard(session, 'DELETE', `/api/user/api-keys/${key.id}`)).status, 200);
        // The message crosses Redis while the test's next request crosses HTTP; allow it a few milliseconds,
        // far below the 10-second cache lifetime that would otherwise end the key.
        let status = (await useOnOther()).status;
        for (let attempt = 0; status !== 401 && attempt < 20; attempt++) {
          await new Promise((resolve) => setTimeout(resolve, 10));
          status = (await useOnOther()).status;
        }
        assert.equal(status, 401);
      } finally {
        await other.stop();
      }
    });
  },
  { config: { REDIS_URL: 'redis://127.0.0.1:6379' } },
);

describeEachDatabase(
  'API key expiry',
  (env) => {
    // The suite's clock only moves forward: each test's key expires an hour after the test begins.
    let EXPIRES_AT = '';
    let EXPIRED = '';
    beforeEach(() => {
      EXPIRES_AT = new Date(env.manualClock.now() + 3_600_000).toISOString();
      EXPIRED = `This API key expired at ${EXPIRES_AT}; create a new key (its owner can, in the dashboard's API keys).`;
    });

    /** A key with ai:models and ai:chat (so /api/v1/models and count_tokens take it) expiring at EXPIRES_AT. */
    async function expiringKey() {
      const session = await env.createUser();
      return createKey(env, session, ['ai:models', 'ai:chat'], { expiresAt: EXPIRES_AT });
    }
    const models = (key: string) => env.request('GET', '/api/v1/models', { token: key });

    it('a key works until the millisecond before its expiresAt and is a 401 saying when it expired from that moment, from a warm cache too', async () => {
      const clock = env.manualClock;
      const key = await expiringKey();
      await clock.set(Date.parse(EXPIRES_AT) - 1);
      assert.equal((await models(key.key)).status, 200, 'the cache is warm from here');
      await clock.advance(1);
      const refused = await models(key.key);
      assert.equal(refused.status, 401);
      assert.equal(refused.body.error.code, 'UNAUTHENTICATED');
      assert.equal(refused.body.error.message, EXPIRED);
      // Later, once the cache entry is gone, the database's answer is refused the same way.
      await clock.advance(60_000);
      assert.equal((await models(key.key)).body.error.message, EXPIRED);
    });

    it('an expired key is refused on every credential path: Bearer on /api/user/*, x-api-key on the Messages routes', async () => {
      const clock = env.manualClock;
      const key = await expiringKey();
      const countTokens = () =>
        env.request('POST', '/api/v1/messages/count_tokens', {
          headers: { 'x-api-key': key.key, 'anthropic-version': '2023-06-01' },
          body: {},
        });
      assert.equal((await env.request('GET', '/api/user/me', { token: key.key })).status, 403);
      assert.notEqual((await countTokens()).status, 401);
      await clock.set(EXPIRES_AT);
      const me = await env.request('GET', '/api/user/me', { token: key.key });
      assert.deepEqual([me.status, me.body.error.code, me.body.error.message], [401, 'UNAUTHENTICATED', EXPIRED]);
      const anthropic = await countTokens();
      assert.deepEqual(
        [anthropic.status, anthropic.body.type, anthropic.body.error.type, anthropic.body.error.message],
        [401, 'error', 'authentication_error', EXPIRED],
      );
    });

    it("another process's authenticator refuses the key at the same moment, from its own warm cache, with no message between them", async () => {
      const ctx = env.service.ctx;
      const clock = env.manualClock;
      const key = await expiringKey();
      // No bus: nothing could tell this process about the expiry; only the clock does.
      const silentBus = { subscribe() {}, publish() {} } as unknown as typeof ctx.bus;
      const otherProcess = createKeyAuthenticator({ db: ctx.db, clock, log: ctx.log, bus: silentBus });
      await clock.set(Date.parse(EXPIRES_AT) - 5_000);
      assert.equal((await otherProcess.resolve(key.key))?.keyId, key.id);
      await clock.set(EXPIRES_AT);
      await assert.rejects(otherProcess.resolve(key.key), (error: any) => {
        assert.equal(error.code, 'UNAUTHENTICATED');
        assert.equal(error.message, EXPIRED);
        return true;
      });
      await otherProcess.settled();
    });

    it('an expired key is not used: lastUsed stays at its last use before expiry', async () => {
      const clock = env.manualClock;
      const key = await expiringKey();
      await clock.set(Date.parse(EXPIRES_AT) - LAST_USED_INTERVAL_MS * 2);
      await models(key.key);
      await clock.set(Date.parse(EXPIRES_AT) + 1);
      assert.equal((await models(key.key)).status, 401);
      await env.service.ctx.keys.settled();
      const row = await env.db
        .selectFrom('api_keys')
        .select('last_used_at')
        .where('id', '=', key.id)
        .executeTakeFirstOrThrow();
      assert.equal(Number(row.last_used_at), Date.parse(EXPIRES_AT) - LAST_USED_INTERVAL_MS * 2);
    });

    it('a revoked key that had also expired is refused as revoked, telling nothing of its expiry', async () => {
      const clock = env.manualClock;
      const session = await env.createUser();
      const key = await createKey(env, session, ['ai:models'], { expiresAt: EXPIRES_AT });
      assert.equal((await env.dashboard(session, 'DELETE', `/api/user/api-keys/${key.id}`)).status, 200);
      await clock.set(EXPIRES_AT);
      const refused = await models(key.key);
      assert.equal(refused.status, 401);
      assert.doesNotMatch(refused.body.error.message, /expired at/);
    });
  },
  { manualClock: '2026-12-01T12:00:00.000Z' },
);
