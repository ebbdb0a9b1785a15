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
      cacheWrite1h: null,
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

  it("tollgate/echo answers OpenAI's n: as many choices as asked, streamed or not, each charged", async () => {
    const user = await env.createUser();
    await env.admin('POST', `/api/admin/users/${user.userId}/credits`, { amount: 1 });
    const key = await env.dashboard(user, 'POST', '/api/user/api-keys', { name: 'n', permissions: ['ai:chat'] });
    const token: string = key.body.apiKey.key;
    const ask = { model: 'tollgate/echo', n: 3, messages: [{ role: 'user', content: 'one two three' }] };
    const spent = async () =>
      Math.round((1 - (await env.dashboard(user, 'GET', '/api/wallet/balance')).body.balance) * 1e6);

    const whole = await env.request('POST', '/api/v1/chat/completions', { token, body: ask });
    assert.equal(whole.status, 200, whole.text);
    assert.deepEqual(
      whole.body.choices.map((c: any) => [c.index, c.message.content]),
      [0, 1, 2].map((index) => [index, 'one two three']),
    );
    assert.equal(whole.body.usage.completion_tokens, 3 * 3);
    assert.equal(await spent(), whole.body.usage.prompt_tokens + 2 * 9);

    const response = await fetch(`${env.baseUrl}/api/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ ...ask, stream: true, stream_options: { include_usage: true } }),
    });
    const texts = ['', '', ''];
    let usage: any;
    for (const frame of (await response.text()).split('\n\n')) {
      const data = frame.replace(/^data: /, '');
      if (!data || data === '[DONE]') continue;
      const chunk = JSON.parse(data);
      for (const choice of chunk.choices) texts[choice.index] += choice.delta.content ?? '';
      usage ??= chunk.usage;
    }
    assert.deepEqual(texts, ['one two three', 'one two three', 'one two three']);
    assert.equal(usage.completion_tokens, 9);
    assert.equal(await spent(), whole.body.usage.prompt_tokens * 2 + 2 * 18);
  });
});
