import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { Counter, Registry } from 'prom-client';
import { countChatPromptTokens, countEmbeddingInputTokens, countTextTokens } from '../providers/tokens.ts';
import { describeEachDatabase } from '../testing/harness.ts';
import { PromptTokenCounts, REMEMBERED_TEXT_MIN_CHARS } from './prompt-counts.ts';
import { fundedUser, usageOf, type FundedUser } from './testing.ts';

/** A memory of `maxEntries` and the counter it reports to, read back by source. */
function memoryOf(maxEntries: number) {
  const texts = new Counter({
    name: 'texts',
    help: 'texts',
    labelNames: ['source'] as const,
    registers: [new Registry()],
  });
  const read = async () => {
    const values = (await texts.get()).values;
    const of = (source: string) => values.find((value) => value.labels.source === source)?.value ?? 0;
    return { remembered: of('remembered'), counted: of('counted') };
  };
  return { counts: new PromptTokenCounts(maxEntries, texts), read };
}

/** Credentials: one user's own key, the same user through an OAuth app, and another user. */
const alice = { userId: 'alice', appId: null, keyId: 'key-1' };
const aliceThroughApp = { userId: 'alice', appId: 'app-1', keyId: null };
const bob = { userId: 'bob', appId: null, keyId: 'key-2' };

/** A long text (over the threshold) that no other test text equals. */
const longText = (seed: string) => `${seed}: ${'the toll road runs north past the river, '.repeat(60)}`;

describe('token counts of long prompt texts, remembered per credential', () => {
  it('counts a long text once per credential and answers its exact count again from memory', async () => {
    const { counts, read } = memoryOf(100);
    const text = longText('a');
    assert.ok(text.length >= REMEMBERED_TEXT_MIN_CHARS);
    const aliceCounts = counts.counterFor(alice);
    assert.equal(aliceCounts(text), countTextTokens(text));
    assert.equal(aliceCounts(text), countTextTokens(text));
    assert.deepEqual(await read(), { remembered: 1, counted: 1 });
  });

  it("does not answer a text from another user's count, nor from another app's for the same user", async () => {
    // How long a count takes tells whether the text was counted before: only the same credential may learn it.
    const { counts, read } = memoryOf(100);
    const text = longText('b');
    counts.counterFor(alice)(text);
    assert.equal(counts.counterFor(bob)(text), countTextTokens(text));
    assert.equal(counts.counterFor(aliceThroughApp)(text), countTextTokens(text));
    assert.deepEqual(await read(), { remembered: 0, counted: 3 });
    counts.counterFor(aliceThroughApp)(text);
    assert.deepEqual(await read(), { remembered: 1, counted: 3 });
  });

  it('counts short texts every time and keeps nothing of them', async () => {
    const { counts, read } = memoryOf(100);
    const short = 'a short question about tolls';
    const aliceCounts = counts.counterFor(alice);
    assert.equal(aliceCounts(short), countTextTokens(short));
    assert.equal(aliceCounts(short), countTextTokens(short));
    assert.deepEqual(await read(), { remembered: 0, counted: 0 });
  });

  it('a text that differs in one character is counted, not answered from the other', async () => {
    const { counts, read } = memoryOf(100);
    const aliceCounts = counts.counterFor(alice);
    const text = longText('c');
    aliceCounts(text);
    const changed = `${text.slice(0, -1)}!!!`;
    assert.equal(aliceCounts(changed), countTextTokens(changed));
    assert.deepEqual(await read(), { remembered: 0, counted: 2 });
  });

  it('texts with one digest have one count: UTF-8 replaces a lone surrogate, as the tokenizer does', () => {
    // The digest is of the text's UTF-8, in which every lone surrogate becomes U+FFFD; the tokenizer encodes
    // its pieces the same way, so a text and its well-formed twin must count the same.
    const alphabet = ['a', 'é', ' ', '\n', '.', '1', '\ud800', '\udfff', '\udc00', '\ufffd', '😀', "'", 'ж', '中'];
    let seed = 3;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    let checked = 0;
    while (checked < 5_000) {
      let text = '';
      for (let i = 1 + Math.floor(random() * 40); i > 0; i--) text += alphabet[Math.floor(random() * alphabet.length)];
      if (text.isWellFormed()) continue;
      assert.equal(countTextTokens(text), countTextTokens(text.toWellFormed()), JSON.stringify(text));
      checked++;
    }
  });

  it('holds at most maxEntries, dropping the least recently used first', async () => {
    const { counts, read } = memoryOf(2);
    const aliceCounts = counts.counterFor(alice);
    const [a, b, c] = [longText('1'), longText('2'), longText('3')];
    aliceCounts(a);
    aliceCounts(b);
    aliceCounts(a); // a is now the most recently used: c evicts b
    aliceCounts(c);
    assert.deepEqual(await read(), { remembered: 1, counted: 3 });
    aliceCounts(a);
    assert.deepEqual(await read(), { remembered: 2, counted: 3 });
    aliceCounts(b);
    assert.deepEqual(await read(), { remembered: 2, counted: 4 });
  });

  it('with 0 entries counts every text every time', async () => {
    const { counts, read } = memoryOf(0);
    const aliceCounts = counts.counterFor(alice);
    const text = longText('d');
    assert.equal(aliceCounts(text), countTextTokens(text));
    assert.equal(aliceCounts(text), countTextTokens(text));
    assert.deepEqual(await read(), { remembered: 0, counted: 0 });
  });
});

describe('a prompt counted for a call', () => {
  const longPrompt = (turns: number) => ({
    messages: Array.from({ length: turns }, (_, turn) => ({ role: 'user', content: longText(`turn ${turn}`) })),
    tools: [{ type: 'function', function: { name: 'read', description: longText('tool') } }],
  });
  /** Turns of the event loop while `work` runs: a self-renewing setImmediate counts them. */
  const turnsDuring = async <T>(work: () => Promise<T>): Promise<{ result: T; turns: number }> => {
    let turns = 0;
    let running = true;
    const tick = () => {
      if (!running) return;
      turns++;
      setImmediate(tick);
    };
    setImmediate(tick);
    const result = await work();
    running = false;
    return { result, turns };
  };

  it('adds up to the count of the whole prompt, and remembers its long texts for the next call', async () => {
    const { counts, read } = memoryOf(100);
    const body = longPrompt(40);
    const expected = countChatPromptTokens(body);
    assert.equal(await counts.countPrompt(alice, (count) => countChatPromptTokens(body, count)), expected);
    assert.deepEqual(await read(), { remembered: 0, counted: 41 });
    assert.equal(await counts.countPrompt(alice, (count) => countChatPromptTokens(body, count)), expected);
    assert.deepEqual(await read(), { remembered: 41, counted: 41 });
  });

  it('serves the event loop between slices of a long prompt that is not remembered, and not for one that is', async () => {
    const { counts } = memoryOf(100);
    const body = longPrompt(40); // ~100 K characters
    const first = await turnsDuring(() => counts.countPrompt(alice, (count) => countChatPromptTokens(body, count)));
    assert.ok(first.turns >= 10, `the loop turned ${first.turns} times`);
    const again = await turnsDuring(() => counts.countPrompt(alice, (count) => countChatPromptTokens(body, count)));
    assert.equal(again.result, first.result);
    assert.equal(again.turns, 0);
  });

  it('counts a short prompt at once, and a long one in slices with nothing remembered (0 entries)', async () => {
    const { counts, read } = memoryOf(0);
    const short = { messages: [{ role: 'user', content: 'How much is the toll?' }] };
    const once = await turnsDuring(() => counts.countPrompt(alice, (count) => countChatPromptTokens(short, count)));
    assert.deepEqual(once, { result: countChatPromptTokens(short), turns: 0 });
    const body = longPrompt(40);
    const sliced = await turnsDuring(() => counts.countPrompt(alice, (count) => countChatPromptTokens(body, count)));
    assert.equal(sliced.result, countChatPromptTokens(body));
    assert.ok(sliced.turns >= 10, `the loop turned ${sliced.turns} times`);
    assert.deepEqual(await read(), { remembered: 0, counted: 0 });
  });

  it('with remember: false counts a long prompt in slices to the same total, and neither reads nor fills the memory', async () => {
    const { counts, read } = memoryOf(100);
    const inputs = Array.from({ length: 20 }, (_, i) => longText(`input ${i}`));
    const exact = countEmbeddingInputTokens(inputs);
    const sliced = await turnsDuring(() =>
      counts.countPrompt(alice, (count) => countEmbeddingInputTokens(inputs, count), { remember: false }),
    );
    assert.equal(sliced.result, exact);
    assert.ok(sliced.turns >= 3, `the loop turned ${sliced.turns} times`);
    assert.deepEqual(await read(), { remembered: 0, counted: 0 });
    // Nothing was kept: the same inputs, remembered this time, are all counted.
    await counts.countPrompt(alice, (count) => countEmbeddingInputTokens(inputs, count));
    assert.deepEqual(await read(), { remembered: 0, counted: 20 });
  });
});

describeEachDatabase('a conversation resent whole', (env) => {
  const metric = async (source: string) => {
    const text = (await env.request('GET', '/metrics', { token: env.adminToken })).text;
    const line = text.split('\n').find((l) => l.startsWith(`tollgate_prompt_long_texts_total{source="${source}"}`));
    return line ? Number(line.split(' ').at(-1)) : 0;
  };
  const texts = async () => ({ remembered: await metric('remembered'), counted: await metric('counted') });

  /** Sends the same chat twice and returns both calls' holds and usage records. */
  const sendTwice = async (user: FundedUser, messages: Array<{ role: string; content: string }>) => {
    const body = { model: 'tollgate/echo', max_tokens: 16, messages };
    for (let call = 0; call < 2; call++) {
      const answer = await env.request('POST', '/api/v1/chat/completions', { token: user.key, body });
      assert.equal(answer.status, 200, answer.text);
    }
    const records = await usageOf(env, user, 2);
    assert.equal(records.length, 2);
    const holds = await env.db
      .selectFrom('holds')
      .select(['amount', 'captured'])
      .where(
        'id',
        'in',
        records.map((record) => record.hold_id!),
      )
      .execute();
    assert.equal(holds.length, 2);
    return { holds, records };
  };

  it('is held and billed the same on its second call, with its long texts remembered instead of counted', async () => {
    const user = await fundedUser(env, 10);
    const before = await texts();
    const { holds, records } = await sendTwice(user, [
      { role: 'system', content: longText('system prompt') },
      { role: 'user', content: longText('earlier question') },
      { role: 'assistant', content: 'An earlier answer.' },
      { role: 'user', content: 'And now?' },
    ]);
    assert.equal(holds[0]!.amount, holds[1]!.amount);
    assert.equal(holds[0]!.captured, holds[1]!.captured);
    assert.equal(records[0]!.prompt_tokens, records[1]!.prompt_tokens);
    // The two long messages: counted on the first call, remembered on the second.
    const after = await texts();
    assert.equal(after.counted - before.counted, 2);
    assert.equal(after.remembered - before.remembered, 2);

    // Embeddings' inputs, megabytes in a batch and seldom sent twice, are counted without being remembered.
    const inputs = Array.from({ length: 12 }, (_, i) => longText(`passage ${i}`));
    for (let call = 0; call < 2; call++) {
      const embedded = await env.request('POST', '/api/v1/embeddings', {
        token: user.key,
        body: { model: 'tollgate/echo', input: inputs },
      });
      assert.equal(embedded.status, 200, embedded.text);
      assert.equal(embedded.body.data.length, 12);
    }
    assert.deepEqual(await texts(), after);
  });

  it('of 100 K characters, counted in slices on its first call and remembered on its second, is held the same on both', async () => {
    const user = await fundedUser(env, 10);
    const messages = Array.from({ length: 40 }, (_, turn) => ({
      role: turn % 2 ? 'assistant' : 'user',
      content: longText(`long conversation, turn ${turn}`),
    }));
    const before = await texts();
    const { holds, records } = await sendTwice(user, messages);
    assert.equal(holds[0]!.amount, holds[1]!.amount);
    assert.equal(holds[0]!.captured, holds[1]!.captured);
    assert.equal(records[1]!.prompt_tokens, records[0]!.prompt_tokens);
    const after = await texts();
    assert.equal(after.counted - before.counted, 40);
    assert.equal(after.remembered - before.remembered, 40);
  });
});
