import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { countTokens } from 'gpt-tokenizer/encoding/o200k_base';
import { countChatPromptTokens, countTextTokens, truncateToTokens } from './tokens.ts';

describe('token counting', () => {
  it('counts ordinary text exactly as the o200k tokenizer does', () => {
    for (const text of ['Write one short sentence about toll roads.', 'naïve café — 東京 😀 x=42;\n\tindent', 'word '.repeat(5_000)]) {
      assert.equal(countTextTokens(text), countTokens(text));
    }
  });

  it('counts a long run of one character class within about one token per 128 characters of the exact count', () => {
    for (const run of ['x'.repeat(2_000), '中'.repeat(1_000), ' '.repeat(1_000), '!'.repeat(1_000)]) {
      const counted = countTextTokens(`before ${run} after`);
      const exact = countTokens(`before ${run} after`);
      const cuts = Math.ceil(run.length / 128);
      assert.ok(Math.abs(counted - exact) <= cuts + 2, `${counted} is within ${cuts + 2} tokens of ${exact}`);
    }
  });

  // The watchdog is generous on purpose: the tokenizer on a whole run is quadratic, and 1 MB of one letter
  // used to block the event loop for minutes (128 KB: 6.6 s). Bounded pieces take well under a second.
  it('a request body made to be slow to tokenize (1 MB runs of letters, CJK, spaces, symbols) is counted without blocking', { timeout: 60_000 }, () => {
    const body = { messages: [{ role: 'user', content: 'x'.repeat(1_000_000) }, { role: 'user', content: '中'.repeat(300_000) }, { role: 'user', content: `${' '.repeat(300_000)}${'!'.repeat(300_000)}` }] };
    assert.ok(countChatPromptTokens(body) > 100_000);
    const { text, truncated } = truncateToTokens('y'.repeat(1_000_000), 16);
    assert.equal(truncated, true);
    assert.ok(text.length > 0 && text.length < 1_000);
  });
});
