import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { describeEachDatabase } from '../../testing/harness.ts';
import { startMockUpstream } from '../../providers/testing/mock-upstream.ts';
import { fundedUser, holdsOf, putModel, settled } from '../../gateway/testing.ts';

const mock = await startMockUpstream();
after(() => mock.close());

/** A one-line PDF's opening, as chat's inline file data. */
const FILE_DATA = 'data:application/pdf;base64,JVBERi0xLjQK';

describeEachDatabase(
  "chat's file parts on each kind of upstream",
  (env) => {
    before(async () => {
      for (const [id, provider] of [
        ['acme/claude', 'anthropic'],
        ['acme/gpt', 'mock'],
      ] as const)
        await putModel(env, id, {
          provider,
          upstreamModel: 'default-model',
          pricing: { prompt: 10, completion: 20 },
          maxOutputTokens: 100,
        });
    });

    const messages = [
      {
        role: 'user' as const,
        content: [
          { type: 'text' as const, text: 'Summarize.' },
          { type: 'file' as const, file: { filename: 'a.pdf', file_data: FILE_DATA } },
        ],
      },
    ];

    it('a file part for a Claude model is refused by its path before anything is held or sent (it was left out of the request); an OpenAI-compatible model still gets it', async () => {
      const user = await fundedUser(env, 1);
      const client = new OpenAI({ apiKey: user.key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
      const sent = mock.requests.length;
      const error: any = await client.chat.completions.create({ model: 'acme/claude', messages }).catch((e) => e);
      assert.equal(error.status, 400, String(error));
      assert.equal(error.error.code, 'UNSUPPORTED_PARAMETER');
      assert.equal(error.error.param, 'messages[0].content[1]');
      assert.match(error.error.message, /POST \/api\/v1\/messages as a document block/);
      assert.equal(mock.requests.length, sent);
      assert.deepEqual(await holdsOf(env, user), []);
      // The same part still reaches an OpenAI-compatible model as sent.
      await client.chat.completions.create({ model: 'acme/gpt', messages });
      assert.deepEqual(mock.requests.at(-1)!.body.messages, messages);
      await settled(env, user);
    });
  },
  { config: { ANTHROPIC_BASE_URL: mock.url, providers: [{ name: 'mock', baseUrl: `${mock.url}/v1` }] } },
);
