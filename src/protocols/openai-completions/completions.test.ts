import { after, before, it } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { describeEachDatabase, type TestEnv } from '../../testing/harness.ts';
import { startMockUpstream } from '../../providers/testing/mock-upstream.ts';
import { countTextTokens } from '../../providers/tokens.ts';
import { fundedUser, putModel, readSseFrames, settled, usageOf, wallet } from '../../gateway/testing.ts';

const mock = await startMockUpstream({ apiKey: 'sk-mock' });
after(() => mock.close());

const CREDIT = 1_000_000;
/** 1 micro-credit a prompt token, 3 a completion token: the mock's usage (11 prompt, 4 completion) costs 23. */
const pricing = { prompt: 1, completion: 3 };
/** One credit per completion token and nothing else: a charge in credits is the number of tokens produced. */
const perToken = { prompt: 0, completion: 1_000_000 };

const sdk = (env: TestEnv, key: string) => new OpenAI({ apiKey: key, baseURL: `${env.baseUrl}/api/v1`, maxRetries: 0 });
const post = (env: TestEnv, key: string, body: unknown) =>
  fetch(`${env.baseUrl}/api/v1/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });

describeEachDatabase(
  'legacy completions (POST /api/v1/completions)',
  (env) => {
    before(async () => {
      await putModel(env, 'acme/instruct', { provider: 'mock', upstreamModel: 'instruct-1', pricing });
      await putModel(env, 'acme/instruct-pricey', {
        provider: 'mock',
        upstreamModel: 'instruct-1',
        // A hundredth of a credit per completion token: 100 tokens are 1 credit.
        pricing: { prompt: 0, completion: 10_000 },
      });
      await putModel(env, 'acme/instruct-cut', { provider: 'mock', upstreamModel: 'cut-2', pricing: perToken });
      await putModel(env, 'acme/instruct-silent', { provider: 'mock', upstreamModel: 'no-usage', pricing });
      await putModel(env, 'acme/instruct-gone', { provider: 'mock', upstreamModel: 'status-404', pricing });
      await putModel(env, 'anthropic/claude-test', { provider: 'anthropic', upstreamModel: 'claude-test', pricing });
    });

    it("the official SDK's completions.create reaches the upstream's /completions as sent, and is charged the usage it reports", async () => {
      const user = await fundedUser(env, 1, ['ai:completions']);
      const completion = await sdk(env, user.key).completions.create({
        model: 'acme/instruct',
        prompt: 'def fib(n):',
        suffix: '\n    return a',
        logprobs: 2,
        temperature: 0,
        stop: ['\n\n'],
      });
      const sent = mock.requests.at(-1)!;
      assert.equal(sent.path, '/v1/completions');
      assert.equal(sent.headers.authorization, 'Bearer sk-mock');
      assert.deepEqual(sent.body, {
        model: 'instruct-1',
        prompt: 'def fib(n):',
        suffix: '\n    return a',
        logprobs: 2,
        temperature: 0,
        stop: ['\n\n'],
        // OpenAI's default cap, sent so that the upstream produces no more than the hold bounds.
        max_tokens: 16,
      });
      assert.equal(completion.object, 'text_completion');
      assert.equal(completion.model, 'acme/instruct');
      assert.equal(completion.choices[0]!.text, 'alpha beta gamma delta');
      // The upstream's own fields reach the client: the answer is relayed, model and usage replaced.
      assert.equal(completion.system_fingerprint, 'fp_mock');
      assert.equal(completion.usage!.prompt_tokens, 11);
      assert.equal(completion.usage!.completion_tokens, 4);
      assert.equal((completion.usage as unknown as { cost: number }).cost, 0.000023);
      assert.deepEqual(await wallet(env, user), { balance: CREDIT - 23, reserved: 0, available: CREDIT - 23 });
      const [record] = await usageOf(env, user);
      assert.equal(record.model, 'acme/instruct');
      assert.equal(Number(record.cost), 23);
    });

    it('holds max_tokens for every answer the upstream generates: n, best_of and each prompt', async () => {
      const user = await fundedUser(env, 3, ['ai:completions']);
      const sentBefore = mock.requests.length;
      for (const [body, worst] of [
        [{ n: 2, prompt: ['a', 'b'] }, 400],
        [{ best_of: 5, n: 1, prompt: 'a' }, 500],
      ] as const) {
        const response = await post(env, user.key, { model: 'acme/instruct-pricey', max_tokens: 100, ...body });
        assert.equal(
          response.status,
          402,
          `${JSON.stringify(body)} is held for ${worst} tokens, 3 credits are not enough`,
        );
        const refused = (await response.json()) as any;
        assert.equal(refused.error.code, 'INSUFFICIENT_CREDITS');
      }
      assert.equal(mock.requests.length, sentBefore, 'nothing went upstream');
      // The same cap for one answer (1 credit) is affordable, and charged what the upstream reports (4 tokens).
      const response = await post(env, user.key, { model: 'acme/instruct-pricey', max_tokens: 100, prompt: 'a' });
      assert.equal(response.status, 200, await response.clone().text());
      assert.equal((await wallet(env, user)).balance, 3 * CREDIT - 4 * 10_000);
    });

    it('n answers for several prompts are relayed and billed on the usage the upstream reports for all of them', async () => {
      const user = await fundedUser(env, 1, ['ai:completions']);
      const completion = await sdk(env, user.key).completions.create({
        model: 'acme/instruct',
        prompt: ['one', 'two'],
        n: 2,
        max_tokens: 8,
      });
      assert.deepEqual(
        completion.choices.map((choice) => choice.index),
        [0, 1, 2, 3],
      );
      assert.equal(mock.requests.at(-1)!.body.max_tokens, 8);
      // 22 prompt tokens, 16 completion tokens: 22 + 48.
      assert.equal((await wallet(env, user)).balance, CREDIT - 70);
    });

    it('streams text_completion chunks; the usage chunk comes when asked, and the charge is the same either way', async () => {
      const user = await fundedUser(env, 1, ['ai:completions']);
      const stream = await sdk(env, user.key).completions.create({
        model: 'acme/instruct',
        prompt: 'Once upon a time',
        stream: true,
        stream_options: { include_usage: true },
      });
      let text = '';
      let usage: any;
      for await (const chunk of stream) {
        assert.equal(chunk.object, 'text_completion');
        assert.equal(chunk.model, 'acme/instruct');
        text += chunk.choices[0]?.text ?? '';
        if (chunk.usage) usage = chunk.usage;
      }
      assert.equal(text, 'alpha beta gamma delta');
      assert.equal(usage.cost, 0.000023);
      assert.equal(mock.requests.at(-1)!.body.stream_options.include_usage, true);
      assert.equal((await settled(env, user)).balance, CREDIT - 23);

      const response = await post(env, user.key, { model: 'acme/instruct', prompt: 'Once', stream: true });
      const frames = await readSseFrames(response);
      assert.ok(
        frames.every((frame) => frame.data === '[DONE]' || frame.data.usage === undefined),
        'no usage chunk',
      );
      // The upstream was asked for usage all the same: it is what the call is billed on.
      assert.equal(mock.requests.at(-1)!.body.stream_options.include_usage, true);
      assert.equal((await settled(env, user)).balance, CREDIT - 46);
    });

    it('a stream the upstream cuts after output is charged for what it produced, and its hold released', async () => {
      const user = await fundedUser(env, 100, ['ai:completions']);
      const response = await post(env, user.key, {
        model: 'acme/instruct-cut',
        prompt: 'x',
        stream: true,
        max_tokens: 50,
      });
      assert.equal(response.status, 200);
      const frames = await readSseFrames(response);
      assert.equal(frames.at(-1)!.event, 'error');
      assert.equal(frames.at(-1)!.data.error.code, 'UPSTREAM_ERROR');
      assert.equal(frames.map((frame) => frame.data?.choices?.[0]?.text ?? '').join(''), 'alpha beta');
      const after = await settled(env, user);
      assert.deepEqual(after, { balance: (100 - 2) * CREDIT, reserved: 0, available: (100 - 2) * CREDIT });
      const [record] = await usageOf(env, user);
      assert.deepEqual([record.status, Number(record.completion_tokens)], ['upstream_error', 2]);
    });

    it('an upstream that reports no usage is billed on the gateway count of the prompt and the text', async () => {
      const user = await fundedUser(env, 1, ['ai:completions']);
      const prompt = 'Tell me a story about a toll road';
      const completion = await sdk(env, user.key).completions.create({ model: 'acme/instruct-silent', prompt });
      // The prompt's own tokens: a legacy prompt is continued as it is, with no chat message's framing around it.
      assert.equal(completion.usage!.prompt_tokens, countTextTokens(prompt));
      assert.equal(completion.usage!.completion_tokens, 4);
      const cost = completion.usage!.prompt_tokens + 4 * 3;
      assert.equal((await wallet(env, user)).balance, CREDIT - cost);
    });

    it('the echo model answers through the canonical call: the prompt as one user message, streamed or not', async () => {
      const user = await fundedUser(env, 1, ['ai:chat']);
      const openai = sdk(env, user.key);
      const completion = await openai.completions.create({ model: 'tollgate/echo', prompt: 'say this back' });
      assert.equal(completion.object, 'text_completion');
      assert.equal(completion.model, 'tollgate/echo');
      assert.equal(completion.choices[0]!.text, 'say this back');
      assert.equal(completion.choices[0]!.finish_reason, 'stop');
      const charged = (completion.usage as unknown as { cost: number }).cost;
      assert.ok(charged > 0);
      let text = '';
      for await (const chunk of await openai.completions.create({
        model: 'tollgate/echo',
        prompt: 'say this back',
        stream: true,
      }))
        text += chunk.choices[0]?.text ?? '';
      assert.equal(text, 'say this back');
      const [streamed] = await usageOf(env, user, 2);
      assert.equal(Number(streamed.cost), charged * CREDIT);
      assert.equal((await settled(env, user)).balance, CREDIT - 2 * charged * CREDIT);
    });

    it("a Claude model gets the prompt as one user message on Anthropic's Messages API, and answers as a text completion", async () => {
      const user = await fundedUser(env, 1, ['ai:completions']);
      const openai = sdk(env, user.key);
      const completion = await openai.completions.create({
        model: 'anthropic/claude-test',
        prompt: 'Write a haiku',
        temperature: 0.5,
        stop: ['END'],
      });
      const sent = mock.requests.at(-1)!;
      assert.equal(sent.path, '/v1/messages');
      assert.equal(sent.body.model, 'claude-test');
      assert.equal(sent.body.max_tokens, 16);
      assert.equal(sent.body.temperature, 0.5);
      assert.deepEqual(sent.body.stop_sequences, ['END']);
      assert.equal(JSON.stringify(sent.body.messages).includes('Write a haiku'), true);
      assert.equal(sent.body.messages.length, 1);
      assert.equal(completion.object, 'text_completion');
      assert.equal(completion.model, 'anthropic/claude-test');
      assert.equal(completion.choices[0]!.text, 'alpha beta gamma delta');
      // The mock's Anthropic usage: 11 input, 4 output tokens.
      assert.equal((completion.usage as unknown as { cost: number }).cost, 0.000023);

      let text = '';
      let usage: any;
      for await (const chunk of await openai.completions.create({
        model: 'anthropic/claude-test',
        prompt: 'Write a haiku',
        stream: true,
        stream_options: { include_usage: true },
      })) {
        text += chunk.choices[0]?.text ?? '';
        if (chunk.usage) usage = chunk.usage;
      }
      assert.equal(text, 'alpha beta gamma delta');
      assert.equal(usage.cost, 0.000023);
      assert.equal((await settled(env, user)).balance, CREDIT - 46);
    });

    it('refuses with a 400 naming the field, before anything is held or sent, what the model or the gateway cannot honour', async () => {
      const user = await fundedUser(env, 1, ['ai:completions']);
      const cases: [unknown, string, RegExp][] = [
        [{ model: 'tollgate/echo', prompt: 'a', suffix: 'b' }, 'suffix', /no legacy completions upstream/],
        [{ model: 'tollgate/echo', prompt: 'a', n: 2 }, 'n', /no legacy completions upstream/],
        [{ model: 'tollgate/echo', prompt: ['a', 'b'] }, 'prompt', /one prompt per call/],
        [{ model: 'acme/instruct', prompt: [[1, 2, 3]] }, 'prompt[0]', /token ids are not accepted/],
        [{ model: 'acme/instruct', prompt: 'a', echo: true, stream: true }, 'echo', /Send echo without stream/],
        [{ model: 'acme/instruct', prompt: 'a', web_search_options: {} }, 'web_search_options', /allow-list/],
        [{ model: 'acme/instruct', prompt: 'a', max_tokens: 0 }, 'max_tokens', /./],
        [{ model: 'acme/instruct' }, 'prompt', /prompt/],
        [{ model: 'acme/instruct', prompt: [] }, 'prompt', /^Invalid body: prompt must NOT have fewer than 1 items$/],
        [{ model: 'tollgate/echo', prompt: 'a', presence_penalty: 0.5 }, 'presence_penalty', /no legacy completions/],
      ];
      const sentBefore = mock.requests.length;
      for (const [body, param, message] of cases) {
        const response = await post(env, user.key, body);
        const refused = (await response.json()) as any;
        assert.equal(response.status, 400, `${JSON.stringify(body)}: ${JSON.stringify(refused)}`);
        assert.equal(refused.error.param, param, JSON.stringify(body));
        assert.match(refused.error.message, message);
      }
      assert.equal(mock.requests.length, sentBefore);
      assert.deepEqual(await wallet(env, user), { balance: CREDIT, reserved: 0, available: CREDIT });
    });

    it("the defaults clients send on every call (LangChain's: penalties 0, n and best_of 1, an empty logit_bias) reach a model without legacy completions", async () => {
      const user = await fundedUser(env, 1, ['ai:completions']);
      const response = await post(env, user.key, {
        model: 'tollgate/echo',
        prompt: 'defaults only',
        presence_penalty: 0,
        frequency_penalty: 0,
        n: 1,
        best_of: 1,
        logit_bias: {},
        echo: false,
        suffix: '',
        logprobs: 0,
      });
      const answer = (await response.json()) as any;
      assert.equal(response.status, 200, JSON.stringify(answer));
      assert.equal(answer.choices[0].text, 'defaults only');
    });

    it('a key without a chat or completions permission is refused; an upstream failure charges nothing', async () => {
      const embedder = await fundedUser(env, 1, ['ai:embeddings']);
      const refused = await post(env, embedder.key, { model: 'acme/instruct', prompt: 'a' });
      assert.equal(refused.status, 403);
      assert.equal(((await refused.json()) as any).error.code, 'PERMISSION_DENIED');

      const user = await fundedUser(env, 1, ['ai:completions']);
      const failed = await post(env, user.key, { model: 'acme/instruct-gone', prompt: 'a' });
      assert.ok(failed.status >= 400, `status ${failed.status}`);
      assert.deepEqual(await wallet(env, user), { balance: CREDIT, reserved: 0, available: CREDIT });
    });
  },
  {
    config: {
      providers: [{ name: 'mock', baseUrl: `${mock.url}/v1`, apiKey: 'sk-mock' }],
      ANTHROPIC_BASE_URL: mock.url,
      ANTHROPIC_API_KEY: 'sk-mock',
    },
  },
);
