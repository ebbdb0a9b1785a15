import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { countTokens, encode } from 'gpt-tokenizer/encoding/o200k_base';
import shippedRanks from 'gpt-tokenizer/bpeRanks/o200k_base';
import {
  countChatPromptTokens,
  countTextTokens,
  countTextTokensPaced,
  longRuns,
  o200k,
  StreamedTextTokens,
  truncateToTokens,
} from './tokens.ts';

describe('token counting', () => {
  it('reads the vocabulary gpt-tokenizer ships as a module, byte sequences that are not UTF-8 included', () => {
    assert.equal(o200k.size, shippedRanks.length);
    const utf8 = new TextEncoder();
    shippedRanks.forEach((token, rank) => {
      const bytes = typeof token === 'string' ? utf8.encode(token) : Uint8Array.from(token);
      assert.deepEqual(o200k.tokenBytes(rank), bytes, `token ${rank}`);
      assert.equal(o200k.rank(bytes, 0, bytes.length), rank);
    });
  });

  it('counts ordinary text exactly as the o200k tokenizer does', () => {
    for (const text of [
      'Write one short sentence about toll roads.',
      'naïve café — 東京 😀 x=42;\n\tindent',
      'word '.repeat(5_000),
    ]) {
      assert.equal(countTextTokens(text), countTokens(text));
    }
  });

  it('counts text of many scripts exactly as gpt-tokenizer does', () => {
    // Seeded, so a failure repeats. Code points of Latin, Greek, Cyrillic, Hebrew and Arabic, Devanagari, Thai,
    // Hangul, kana, CJK, emoji, combining marks, punctuation, digits and control whitespace, mixed with spaces.
    const blocks = [
      [0x20, 0x7e],
      [0xa0, 0x24f],
      [0x370, 0x4ff],
      [0x590, 0x6ff],
      [0x900, 0x97f],
      [0xe00, 0xe7f],
      [0x1100, 0x11ff],
      [0x3040, 0x30ff],
      [0x4e00, 0x9fff],
      [0xac00, 0xd7a3],
      [0x1f300, 0x1faff],
      [0x300, 0x36f],
      [0x2000, 0x206f],
      [0x9, 0xd],
      [0x30, 0x39],
    ];
    let seed = 8;
    const random = () => ((seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) | 0) >>> 0) / 2 ** 32;
    for (let n = 0; n < 2_000; n++) {
      let text = '';
      for (let i = 1 + Math.floor(random() * 60); i > 0; i--) {
        const [from, to] = blocks[Math.floor(random() * blocks.length)]!;
        text += String.fromCodePoint(from! + Math.floor(random() * (to! - from! + 1))) + (random() < 0.2 ? ' ' : '');
      }
      assert.equal(countTextTokens(text), countTokens(text), JSON.stringify(text));
      // The first tokens are gpt-tokenizer's too. (Its own decode is not the reference: its streaming decoder
      // keeps the bytes of a cut character from one call and puts them in front of the next call's text.)
      const limit = 1 + (n % 20);
      const bytes = Buffer.concat(
        encode(text)
          .slice(0, limit)
          .map((rank) => o200k.tokenBytes(rank)),
      );
      assert.equal(
        truncateToTokens(text, limit).text,
        new TextDecoder().decode(bytes, { stream: true }),
        JSON.stringify(text),
      );
    }
  });

  it('counts the text of special tokens as ordinary text, as a prompt quoting them is', () => {
    const text = 'Never write <|endoftext|> or <|im_start|> here.';
    assert.equal(countTextTokens(text), countTokens(text, { disallowedSpecial: new Set() }));
  });

  it('counts a long run of one character class within about one token per 128 characters of the exact count', () => {
    for (const run of ['x'.repeat(2_000), '中'.repeat(1_000), ' '.repeat(1_000), '!'.repeat(1_000)]) {
      const counted = countTextTokens(`before ${run} after`);
      const exact = countTokens(`before ${run} after`);
      const cuts = Math.ceil(run.length / 128);
      assert.ok(Math.abs(counted - exact) <= cuts + 2, `${counted} is within ${cuts + 2} tokens of ${exact}`);
    }
  });

  it('finds the long runs the tokenizer is given in slices exactly where the regex that defines them matches', () => {
    // Runs of one class longer than 128 code points: letters and marks, whitespace, or neither nor numbers.
    const LONG_RUN = /[\p{L}\p{M}]{129,}|\s{129,}|[^\s\p{L}\p{M}\p{N}]{129,}/gu;
    // Letters, combining marks, whitespace of several kinds, numbers of several scripts, symbols, an emoji
    // (a surrogate pair), lone surrogates, and CJK: every class boundary the regex draws.
    const alphabet = ['a', 'é', 'ж', '中', 'e\u0301', ' ', '\n', '\t', '\u00a0', '\u3000', '\ufeff', '\u2028'];
    alphabet.push('1', '٣', '²', 'Ⅻ', '.', '-', '_', '€', '😀', '\ud800', '\udfff', '𝒜');
    let seed = 7;
    const random = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
    for (let round = 0; round < 2_000; round++) {
      let text = '';
      while (text.length < 1_500)
        text += alphabet[Math.floor(random() * alphabet.length)]!.repeat(1 + Math.floor(random() ** 3 * 300));
      const expected = [...text.matchAll(LONG_RUN)].map((run) => [run.index, run.index + run[0].length]);
      assert.deepEqual(longRuns(text), expected, `round ${round}`);
    }
  });

  // The watchdog is generous on purpose: the tokenizer on a whole run is quadratic, and 1 MB of one letter
  // used to block the event loop for minutes (128 KB: 6.6 s). Bounded pieces take well under a second.
  it(
    'a request body made to be slow to tokenize (1 MB runs of letters, CJK, spaces, symbols) is counted without blocking',
    { timeout: 60_000 },
    () => {
      const body = {
        messages: [
          { role: 'user', content: 'x'.repeat(1_000_000) },
          { role: 'user', content: '中'.repeat(300_000) },
          { role: 'user', content: `${' '.repeat(300_000)}${'!'.repeat(300_000)}` },
        ],
      };
      assert.ok(countChatPromptTokens(body) > 100_000);
      const { text, truncated } = truncateToTokens('y'.repeat(1_000_000), 16);
      assert.equal(truncated, true);
      assert.ok(text.length > 0 && text.length < 1_000);
    },
  );
});

describe('a streamed output counted as it comes', () => {
  // Seeded, so a failure repeats: lines of words in several scripts, digits, punctuation, code and emoji,
  // given in pieces of 1 to 24 characters, as a model's deltas come.
  let seed = 42;
  const random = () => ((seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) | 0) >>> 0) / 2 ** 32;
  const words = [
    'toll',
    'road',
    'Straße',
    'дорога',
    'δρόμος',
    '道路',
    '도로',
    'सड़क',
    '😀',
    '42',
    'x=1;',
    '  ',
    '—',
    "it's",
  ];
  const text = (chars: number, breaks: boolean) => {
    let out = '';
    while (out.length < chars) {
      out += words[Math.floor(random() * words.length)]! + (random() < 0.7 ? ' ' : '');
      if (breaks && random() < 0.05) out += random() < 0.5 ? '\n' : '.\n\n';
    }
    return out;
  };
  const streamed = (whole: string) => {
    const count = new StreamedTextTokens();
    let mostHeld = 0;
    for (let at = 0; at < whole.length;) {
      const size = 1 + Math.floor(random() * 24);
      count.add(whole.slice(at, at + size));
      at += size;
      mostHeld = Math.max(mostHeld, count.held);
    }
    return { total: count.total, mostHeld };
  };

  it('counts a text with line breaks exactly as the whole text, holding a few KB of it', () => {
    for (let n = 0; n < 5; n++) {
      const whole = text(200_000, true);
      const { total, mostHeld } = streamed(whole);
      assert.equal(total, countTextTokens(whole));
      assert.ok(mostHeld < 4_096, `held ${mostHeld} characters of ${whole.length}`);
    }
  });

  it('counts a text without line breaks exactly too, cutting before the spaces between words', () => {
    const whole = text(300_000, false);
    const { total, mostHeld } = streamed(whole);
    assert.equal(total, countTextTokens(whole));
    assert.ok(mostHeld < 4_096, `held ${mostHeld} characters`);
  });

  it('cuts a text with no safe place (CJK without spaces) every 64 K characters, within two tokens per cut', () => {
    let whole = '';
    while (whole.length < 300_000) whole += String.fromCodePoint(0x4e00 + Math.floor(random() * 0x5000));
    const { total, mostHeld } = streamed(whole);
    const cuts = Math.floor(whole.length / 65_536);
    assert.ok(Math.abs(total - countTextTokens(whole)) <= 2 * cuts, `${total} against ${countTextTokens(whole)}`);
    assert.ok(mostHeld < 65_536 + 24, `held ${mostHeld} characters`);
  });

  it('counts a long text in slices to exactly its whole count, long runs and text without a safe cut included', async () => {
    let cjk = '';
    while (cjk.length < 40_000) cjk += String.fromCodePoint(0x4e00 + Math.floor(random() * 0x5000));
    const texts = [text(200_000, true), text(100_000, false), cjk, `a ${'x'.repeat(5_000)} b ${' '.repeat(3_000)}c`];
    for (const whole of texts) {
      for (const slice of [64, 1_000, 8_192]) {
        const slices: number[] = [];
        const total = await countTextTokensPaced(whole, (characters) => void slices.push(characters), slice);
        assert.equal(total, countTextTokens(whole), `slices of ${slice}`);
        assert.equal(
          slices.reduce((sum, characters) => sum + characters, 0),
          whole.length,
        );
        if (whole !== cjk)
          assert.ok(slices.length >= Math.floor(whole.length / (slice * 4)), `${slices.length} slices`);
      }
    }
  });

  it('counts pieces that split a line break from its letter, and empty pieces, as the whole', () => {
    const count = new StreamedTextTokens();
    const whole = 'first line\n'.repeat(1_000) + 'last';
    for (const piece of whole.split(/(?<=\n)/)) {
      count.add('');
      count.add(piece);
    }
    assert.equal(count.total, countTextTokens(whole));
    assert.ok(count.held < 2_048 + 11);
  });
});
