import { it } from 'node:test';
import assert from 'node:assert/strict';
import { describeEachDatabase } from '../testing/harness.ts';
import { fundedUser, wallet, wavFile } from './testing.ts';

const ADVICE =
  /model"? must be "<vendor>\/<model>", such as "openai\/gpt-4o-mini" or "anthropic\/claude-sonnet-4"; GET \/api\/v1\/models lists the models you can use/;

describeEachDatabase('a bare provider model id', (env) => {
  it('is refused on every AI endpoint with what to send instead, not the pattern, and holds nothing', async () => {
    const user = await fundedUser(env, 1);
    const hi = [{ role: 'user', content: 'hi' }];
    for (const [path, body] of [
      ['/api/v1/chat/completions', { model: 'gpt-4o-mini', messages: hi }],
      ['/api/v1/responses', { model: 'gpt-4o-mini', input: 'hi' }],
      ['/api/v1/embeddings', { model: 'text-embedding-3-small', input: 'hi' }],
      ['/api/v1/images/generations', { model: 'gpt-image-1', prompt: 'a cat' }],
    ] as const) {
      const response = await env.request('POST', path, { token: user.key, body });
      assert.equal(response.status, 400, `${path}: ${response.text}`);
      assert.equal(response.body.error.code, 'INVALID_REQUEST', path);
      assert.match(response.body.error.message, ADVICE, path);
      assert.doesNotMatch(response.body.error.message, /pattern/, path);
    }
    const messages = await env.request('POST', '/api/v1/messages', {
      token: user.key,
      body: { model: 'claude-sonnet-4-20250514', max_tokens: 16, messages: hi },
    });
    assert.equal(messages.status, 400, messages.text);
    assert.equal(messages.body.type, 'error');
    assert.match(messages.body.error.message, ADVICE);
    assert.equal((await wallet(env, user)).balance, 1_000_000);
  });

  it('is refused with the same advice by the legacy completions, speech, transcriptions, translations and image edits (multipart), and holds nothing', async () => {
    const user = await fundedUser(env, 1);
    const answers: Array<[string, Response]> = [];
    for (const [path, body] of [
      ['/api/v1/completions', { model: 'gpt-3.5-turbo-instruct', prompt: 'hi' }],
      ['/api/v1/audio/speech', { model: 'tts-1', input: 'hi', voice: 'alloy' }],
    ] as const)
      answers.push([
        path,
        await fetch(`${env.baseUrl}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${user.key}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        }),
      ]);
    for (const [path, file] of [
      ['/api/v1/audio/transcriptions', 'file'],
      ['/api/v1/audio/translations', 'file'],
      ['/api/v1/images/edits', 'image'],
    ]) {
      const form = new FormData();
      form.append('model', path.includes('images') ? 'gpt-image-1' : 'whisper-1');
      form.append('prompt', 'a hat');
      form.append(file, new Blob([wavFile(0.01)]), 'a.wav');
      answers.push([
        path,
        await fetch(`${env.baseUrl}${path}`, {
          method: 'POST',
          headers: { authorization: `Bearer ${user.key}` },
          body: form,
        }),
      ]);
    }
    for (const [path, response] of answers) {
      const body = (await response.json()) as any;
      assert.equal(response.status, 400, `${path}: ${JSON.stringify(body)}`);
      assert.equal(body.error.code, 'INVALID_REQUEST', path);
      assert.match(body.error.message, ADVICE, path);
      assert.doesNotMatch(body.error.message, /pattern|\^/, path);
    }
    assert.equal((await wallet(env, user)).balance, 1_000_000);
    assert.equal((await wallet(env, user)).reserved, 0);
  });
});
