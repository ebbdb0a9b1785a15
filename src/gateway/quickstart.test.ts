import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';

/**
 * The README's "Quick start: your first chat", step by step over HTTP, on a service with no provider
 * configured: create a user, grant credits, create a key, list the models, chat with `tollgate/echo`.
 */
describeEachDatabase('quick start with tollgate/echo', (env) => {
  it('a newcomer with no provider configured chats with tollgate/echo and is charged for it', async () => {
    // 1. The operator creates a user and grants credits.
    const created = await env.admin('POST', '/api/admin/users', {
      email: 'you@example.com',
      password: 'a-long-password',
      name: 'You',
    });
    assert.equal(created.status, 201);
    const granted = await env.admin('POST', `/api/admin/users/${created.body.id}/credits`, {
      amount: 10,
      reason: 'welcome',
    });
    assert.deepEqual(granted.body, { balance: 10 });

    // 2. The user signs in and creates an API key.
    const session = await env.signIn('you@example.com', 'a-long-password');
    const key = await env.dashboard(session, 'POST', '/api/user/api-keys', {
      name: 'my laptop',
      permissions: ['ai:chat', 'ai:models'],
    });
    assert.equal(key.status, 200);
    const apiKey: string = key.body.apiKey.key;

    // 3. The key lists the models: the echo model is there, marked as a test model, with its price.
    const models = await env.request('GET', '/api/v1/models', { token: apiKey });
    assert.equal(models.status, 200);
    const echo = models.body.data.find((m: any) => m.id === 'tollgate/echo');
    assert.equal(echo.test, true);
    // Detailed prices it does not set are shown at the price they fall back to.
    assert.deepEqual(echo.pricing, {
      prompt: 1,
      completion: 2,
      cacheRead: 1,
      cacheWrite: 1,
      reasoning: 2,
      audioInput: 1,
      audioOutput: 2,
      request: 0,
      image: 0,
      second: 0,
      webSearch: 0,
    });

    // 4. The first chat.
    const chat = await env.request('POST', '/api/v1/chat/completions', {
      token: apiKey,
      body: { model: 'tollgate/echo', messages: [{ role: 'user', content: 'Hello, Tollgate!' }] },
    });
    assert.equal(chat.status, 200, chat.text);
    assert.equal(chat.body.choices[0].message.content, 'Hello, Tollgate!');
    assert.equal(chat.body.model, 'tollgate/echo');
    const { prompt_tokens, completion_tokens } = chat.body.usage;
    assert.ok(prompt_tokens > 0 && completion_tokens > 0);

    // 5. The wallet shows the charge: 1 micro-credit per prompt token, 2 per completion token.
    const balance = await env.dashboard(session, 'GET', '/api/wallet/balance');
    assert.equal(balance.body.reserved, 0);
    assert.equal(Math.round((10 - balance.body.balance) * 1e6), prompt_tokens * 1 + completion_tokens * 2);
  });
});
