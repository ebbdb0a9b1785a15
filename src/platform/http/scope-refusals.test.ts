import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../../testing/harness.ts';
import { fundedUser } from '../../gateway/testing.ts';
import { authorizeForTest } from '../../oauth/testing.ts';

/** Every permission a key can carry (contract §5.3). */
const ALL_KEY_PERMISSIONS = [
  'ai:chat',
  'ai:completions',
  'ai:models',
  'ai:images',
  'ai:embeddings',
  'ai:audio',
  'billing:read',
];

/**
 * A 403 for a missing scope tells the caller what would let it in. An API key's permissions are the contract's
 * §5.3 list: a refusal that asks a key for "read" or "apikeys:read", which no key can carry, sends its owner to
 * create a key the dashboard then refuses.
 */
describeEachDatabase('the 403 of a call a credential lacks the scope for', (env) => {
  it('tells an API key that no key can make a call that needs an OAuth-only scope, naming the scope', async () => {
    const { key } = await fundedUser(env, 0, ALL_KEY_PERMISSIONS);
    const me = await env.request('GET', '/api/user/me', { token: key });
    assert.equal(me.status, 403, me.text);
    assert.equal(me.body.error.code, 'PERMISSION_DENIED');
    assert.equal(
      me.body.error.message,
      'An API key cannot make this call, which needs the OAuth scope "read": use an app\'s access token that holds it, or the dashboard.',
    );
    const keys = await env.request('GET', '/api/user/api-keys', { token: key });
    assert.deepEqual(
      [keys.status, keys.body],
      [
        403,
        {
          success: false,
          error:
            'An API key cannot make this call, which needs the OAuth scope "apikeys:read": use an app\'s access token that holds it, or the dashboard.',
        },
      ],
    );
  });

  it('names only the permissions a key can carry when some of them would do', async () => {
    const { key } = await fundedUser(env, 0, ['ai:chat']);
    const apps = await env.request('GET', '/api/user/authorized-apps', { token: key });
    assert.equal(apps.status, 403, apps.text);
    assert.equal(apps.body.error.message, 'This call needs the permission "billing:read".');
    const balance = await env.request('GET', '/api/wallet/balance', { token: key });
    assert.equal(balance.body.error.message, 'This call needs the permission "billing:read".');
  });

  it("an app's token is still told the scopes it lacks, all of them", async () => {
    const app = await authorizeForTest(env, { scopes: ['ai:chat'] });
    const me = await env.request('GET', '/api/user/me', { token: app.accessToken });
    assert.equal(me.status, 403, me.text);
    assert.equal(me.body.error.message, 'This call needs the scope "read".');
    const apps = await env.request('GET', '/api/user/authorized-apps', { token: app.accessToken });
    assert.equal(apps.body.error.message, 'This call needs the scope "read" or "billing:read".');
  });
});
