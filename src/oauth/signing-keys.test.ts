import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { createService } from '../service.ts';
import { decrypt } from '../platform/crypto.ts';
import { SIGNING_KEYS_SECRET } from './signing-keys.ts';

describeEachDatabase('OAuth signing keys at rest', (env) => {
  const storedKeys = async () =>
    (
      await env.db
        .selectFrom('instance_secrets')
        .select('value')
        .where('name', '=', SIGNING_KEYS_SECRET)
        .executeTakeFirstOrThrow()
    ).value;

  async function restart() {
    const port = Number(new URL(env.baseUrl).port);
    await env.service.close();
    env.service = await createService({ config: env.config(), clock: env.clock, timers: false });
    assert.equal(await env.service.listen(port), env.baseUrl);
  }

  it('the database holds the ID-token signing keys only sealed with ENCRYPTION_KEY, so a copy of it cannot forge identities', async () => {
    const stored = await storedKeys();
    assert.ok(stored.startsWith('v1.'), 'sealed');
    assert.doesNotMatch(stored, /"d"|"kty"|P-256/);
    const opened = JSON.parse(decrypt(env.service.ctx.secrets.encryptionKey, stored)) as {
      keys: Array<Record<string, string>>;
    };
    assert.ok(opened.keys[0]!.d, 'the sealed value holds the private key');
    const published = (await env.request('GET', '/api/oauth/jwks')).body.keys;
    assert.deepEqual(
      published.map((key: { kid: string }) => key.kid),
      opened.keys.map((key) => key.kid),
    );
    assert.ok(
      published.every((key: Record<string, unknown>) => key.d === undefined),
      'only public parts are published',
    );
  });

  it('signing keys an earlier version stored in clear are sealed on the next start and stay the same keys', async () => {
    const clear = decrypt(env.service.ctx.secrets.encryptionKey, await storedKeys());
    await env.db
      .updateTable('instance_secrets')
      .set({ value: clear })
      .where('name', '=', SIGNING_KEYS_SECRET)
      .execute();
    const before = (await env.request('GET', '/api/oauth/jwks')).body;
    await restart();
    const stored = await storedKeys();
    assert.ok(stored.startsWith('v1.'));
    assert.equal(decrypt(env.service.ctx.secrets.encryptionKey, stored), clear);
    assert.deepEqual((await env.request('GET', '/api/oauth/jwks')).body, before);
  });
});
