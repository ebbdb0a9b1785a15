import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { authorizeForTest, registerTestApp } from './testing.ts';

describeEachDatabase('the client-authenticated OAuth endpoints read the form Fastify read', (env) => {
  it('token, introspection and revocation work without oidc-provider warning about an already parsed body', async () => {
    const printed: string[] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => void printed.push(args.map(String).join(' '));
    try {
      const app = await registerTestApp(env, { type: 'confidential', scopes: ['read', 'ai:chat'] });
      const { accessToken } = await authorizeForTest(env, { app, scopes: ['read', 'ai:chat'] });
      const basic = `Basic ${Buffer.from(`${app.clientId}:${app.clientSecret}`).toString('base64')}`;
      const form = (body: Record<string, string>) => ({
        raw: new URLSearchParams(body).toString(),
        headers: { authorization: basic, 'content-type': 'application/x-www-form-urlencoded' },
      });
      const introspected = await env.request('POST', '/api/oauth/introspect', form({ token: accessToken }));
      assert.equal(introspected.status, 200, introspected.text);
      assert.equal(introspected.body.active, true);
      assert.equal((await env.request('POST', '/api/oauth/revoke', form({ token: accessToken }))).status, 200);
      assert.equal(
        (await env.request('POST', '/api/oauth/introspect', form({ token: accessToken }))).body.active,
        false,
      );
    } finally {
      console.warn = warn;
    }
    assert.deepEqual(
      printed.filter((line) => line.includes('oidc-provider')),
      [],
    );
  });
});
