import { it } from 'node:test';
import assert from 'node:assert/strict';
import { findLongCache } from './long-cache.ts';

const ONE_HOUR = { type: 'ephemeral', ttl: '1h' };
const FIVE_MINUTES = { type: 'ephemeral', ttl: '5m' };

it('names the first 1-hour cache_control by its path, wherever a client puts it', () => {
  assert.equal(findLongCache({ model: 'm', cache_control: ONE_HOUR }, ''), 'cache_control');
  assert.equal(
    findLongCache({ system: [{ type: 'text', text: 's', cache_control: ONE_HOUR }] }, ''),
    'system[0].cache_control',
  );
  const messages = [
    { role: 'user', content: [{ type: 'text', text: 'a', cache_control: FIVE_MINUTES }] },
    { role: 'assistant', content: 'b' },
    {
      role: 'user',
      content: [
        { type: 'text', text: 'c' },
        { type: 'text', text: 'd', cache_control: ONE_HOUR },
      ],
    },
  ];
  assert.equal(findLongCache(messages, 'messages'), 'messages[2].content[1].cache_control');
  assert.equal(
    findLongCache({ messages, tools: [{ name: 't', cache_control: ONE_HOUR }] }, ''),
    'messages[2].content[1].cache_control',
  );
  assert.equal(findLongCache({ tools: [{ name: 't', cache_control: ONE_HOUR }] }, ''), 'tools[0].cache_control');
});

it('finds nothing in a body whose markers are all 5-minute ones, or that has none', () => {
  assert.equal(findLongCache({ system: [{ type: 'text', text: 's', cache_control: FIVE_MINUTES }] }, ''), undefined);
  assert.equal(findLongCache([{ role: 'user', content: 'hi' }], 'messages'), undefined);
  assert.equal(findLongCache({ cache_control: null, ttl: '1h' }, ''), undefined);
  assert.equal(findLongCache('1h', ''), undefined);
});

it('searches a body nested deeper than the call stack goes (a 500 there before), finding a marker at the bottom', () => {
  // A client may send any JSON (a tool's input_schema, an unknown field): the body parser takes 100,000 levels.
  let bottom: unknown = { type: 'text', text: 'x', cache_control: ONE_HOUR };
  let plain: unknown = 'x';
  for (let i = 0; i < 100_000; i++) [bottom, plain] = [[bottom], [plain]];
  assert.equal(findLongCache(plain, 'messages'), undefined);
  const path = findLongCache({ tools: [{ input_schema: bottom }] }, '');
  assert.equal(path, `tools[0].input_schema${'[0]'.repeat(100_000)}.cache_control`);
  // Still the first marker of the body, in document order, when a later one is shallow.
  assert.equal(
    findLongCache({ system: [{ deep: bottom }], messages: [{ cache_control: ONE_HOUR }] }, ''),
    `system[0].deep${'[0]'.repeat(100_000)}.cache_control`,
  );
});
