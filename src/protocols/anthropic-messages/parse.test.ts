import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../platform/errors.ts';
import { parseMessagesRequest, type MessagesRequest } from './parse.ts';

const parse = (body: Record<string, unknown>, requireMaxTokens = true) =>
  parseMessagesRequest({ model: 'anthropic/claude', max_tokens: 100, ...body } as MessagesRequest, {
    requireMaxTokens,
  });

/** The ApiError `fn` throws (fails when it throws nothing or something else). */
function refusal(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof ApiError, String(error));
    return error;
  }
  assert.fail('nothing was refused');
}

describe('parsing an Anthropic Messages request into the canonical call', () => {
  it('keeps system, turns, images, tools, tool results, thinking and sampling, and the body itself as native', () => {
    const body = {
      system: [{ type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } }],
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'Weather?' },
            { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } },
            { type: 'image', source: { type: 'url', url: 'https://x.example/a.png' } },
          ],
        },
        {
          role: 'assistant',
          content: [
            { type: 'thinking', thinking: 'Use the tool.', signature: 'sig' },
            { type: 'redacted_thinking', data: 'enc' },
            { type: 'tool_use', id: 'toolu_1', name: 'weather', input: { city: 'Paris' } },
          ],
        },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: 'toolu_1',
              content: [
                { type: 'text', text: 'sunny' },
                { type: 'image', source: { type: 'url', url: 'https://x.example/map.png' } },
              ],
            },
            { type: 'text', text: 'And so?' },
          ],
        },
      ],
      tools: [
        {
          name: 'weather',
          description: 'Weather of a city',
          input_schema: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
      tool_choice: { type: 'any' },
      temperature: 0.2,
      top_p: 0.9,
      top_k: 5,
      stop_sequences: ['END'],
      stream: true,
      thinking: { type: 'enabled', budget_tokens: 50 },
      metadata: { user_id: 'u1' },
    };
    const call = parse(body);
    assert.deepEqual(call.system, [{ type: 'text', text: 'Be brief.', cacheControl: { type: 'ephemeral' } }]);
    assert.deepEqual(call.messages, [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Weather?' },
          { type: 'image', url: 'data:image/png;base64,AAAA' },
          { type: 'image', url: 'https://x.example/a.png' },
        ],
      },
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'Use the tool.', signature: 'sig' },
          { type: 'reasoning', text: '', signature: 'enc' },
          { type: 'tool_call', id: 'toolu_1', name: 'weather', arguments: '{"city":"Paris"}' },
        ],
      },
      // The tool result comes first as its own message; its image joins the rest of the turn.
      { role: 'tool', content: [{ type: 'tool_result', callId: 'toolu_1', content: 'sunny' }] },
      {
        role: 'user',
        content: [
          { type: 'image', url: 'https://x.example/map.png' },
          { type: 'text', text: 'And so?' },
        ],
      },
    ]);
    assert.deepEqual(call.tools, [
      {
        name: 'weather',
        description: 'Weather of a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ]);
    assert.equal(call.toolChoice, 'required');
    assert.equal(call.maxOutputTokens, 100);
    assert.equal(call.stream, true);
    assert.equal(call.temperature, 0.2);
    assert.equal(call.topP, 0.9);
    assert.equal(call.topK, 5);
    assert.equal(call.metadata, undefined);
    assert.deepEqual(call.native?.body.metadata, { user_id: 'u1' });
    assert.deepEqual(call.stop, ['END']);
    assert.deepEqual(call.reasoning, { budgetTokens: 50 });
    assert.equal(call.native?.protocol, 'anthropic-messages');
    assert.equal(call.native?.body.top_k, 5);
    assert.deepEqual(call.native?.body.system, body.system);
  });

  it('a string system and string contents become text parts; tool choices map to canonical ones', () => {
    const call = parse({
      system: 'Hi.',
      messages: [{ role: 'user', content: 'hello' }],
      tools: [{ name: 'f', input_schema: { type: 'object' } }],
      tool_choice: { type: 'tool', name: 'f' },
    });
    assert.deepEqual(call.system, [{ type: 'text', text: 'Hi.' }]);
    assert.deepEqual(call.messages, [{ role: 'user', content: [{ type: 'text', text: 'hello' }] }]);
    assert.deepEqual(call.toolChoice, { name: 'f' });
    assert.equal(
      parse({ messages: [{ role: 'user', content: 'x' }], tool_choice: { type: 'none' } }).toolChoice,
      'none',
    );
    assert.equal(
      parse({ messages: [{ role: 'user', content: 'x' }], tool_choice: { type: 'auto' } }).toolChoice,
      'auto',
    );
    assert.equal(parse({ messages: [{ role: 'user', content: 'x' }] }).stream, false);
    const configured = parse({
      messages: [{ role: 'user', content: 'x' }],
      output_config: { effort: 'max', format: { type: 'json_schema', schema: { type: 'object' } } },
      service_tier: 'standard_only',
      speed: 'standard',
      cache_control: { type: 'ephemeral' },
    });
    // Anthropic's `max` is an OpenAI effort too: kept as sent, not lowered to `high`.
    assert.deepEqual(configured.reasoning, { effort: 'max' });
    assert.deepEqual(configured.responseFormat, { type: 'json_schema', name: 'output', schema: { type: 'object' } });
    // Claude Code's context_management needs a beta header that is not forwarded: it is left out, the rest kept.
    const claudeCode = parse({
      messages: [{ role: 'user', content: 'x' }],
      context_management: { edits: [{ type: 'clear_thinking_20251015', keep: 'all' }] },
    });
    assert.equal('context_management' in claudeCode.native!.body, false);
    assert.equal(claudeCode.native!.body.max_tokens, 100);
  });

  it('max_tokens is required by /messages (400 naming it) and not by count_tokens', () => {
    const error = refusal(() =>
      parseMessagesRequest({ model: 'a/b', messages: [{ role: 'user', content: 'x' }] }, { requireMaxTokens: true }),
    );
    assert.equal(error.code, 'INVALID_REQUEST');
    assert.equal(error.details.param, 'max_tokens');
    assert.match(error.message, /max_tokens is required/);
    assert.equal(
      parseMessagesRequest({ model: 'a/b', messages: [{ role: 'user', content: 'x' }] }, { requireMaxTokens: false })
        .maxOutputTokens,
      null,
    );
  });

  it('refuses fields, tools, blocks and cache lifetimes whose cost the hold cannot bound, naming them', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ messages: [{ role: 'user', content: 'x' }], service_tier: 'auto' }, 'service_tier'],
      [{ messages: [{ role: 'user', content: 'x' }], speed: 'fast' }, 'speed'],
      [{ messages: [{ role: 'user', content: 'x' }], inference_geo: 'us' }, 'inference_geo'],
      [
        { messages: [{ role: 'user', content: 'x' }], cache_control: { type: 'ephemeral', ttl: '24h' } },
        'cache_control',
      ],
      // Not a string: it would read as "1h" once converted, a lifetime the hold would not have priced.
      [
        { messages: [{ role: 'user', content: 'x' }], cache_control: { type: 'ephemeral', ttl: ['1h'] } },
        'cache_control',
      ],
      [{ messages: [{ role: 'user', content: 'x' }], mcp_servers: [] }, 'mcp_servers'],
      [{ messages: [{ role: 'user', content: 'x' }], compaction: { enabled: true } }, 'compaction'],
      [{ messages: [{ role: 'user', content: 'x' }], brand_new_option: 1 }, 'brand_new_option'],
      [
        {
          messages: [{ role: 'user', content: 'x' }],
          tools: [{ type: 'web_search_20260209', name: 'web_search' }],
        },
        'tools[0].type',
      ],
      [
        {
          messages: [{ role: 'user', content: 'x' }],
          tools: [{ name: 'f', input_schema: {}, input_examples: [{ a: 1 }] }],
        },
        'tools[0].input_examples',
      ],
      [
        {
          messages: [
            { role: 'user', content: [{ type: 'search_result', source: 'https://x', title: 't', content: [] }] },
          ],
        },
        'messages[0].content[0]',
      ],
      [
        { messages: [{ role: 'user', content: [{ type: 'document', source: { type: 'file', file_id: 'file_1' } }] }] },
        'messages[0].content[0].source',
      ],
      [
        {
          messages: [
            { role: 'user', content: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral', ttl: '30m' } }] },
          ],
        },
        'messages[0].content[0].cache_control',
      ],
    ];
    for (const [body, param] of cases) {
      const error = refusal(() => parse(body));
      assert.equal(error.code, 'UNSUPPORTED_PARAMETER', param);
      assert.equal(error.details.param, param);
      assert.equal(error.status, 400);
    }
  });

  it('answers malformed blocks with 400 INVALID_REQUEST naming the block', () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [
        {
          messages: [
            { role: 'user', content: [{ type: 'image', source: { type: 'url', url: 'file:///etc/passwd' } }] },
          ],
        },
        'messages[0].content[0].source',
      ],
      [
        { messages: [{ role: 'user', content: [{ type: 'tool_use', id: 'a', name: 'b', input: {} }] }] },
        'messages[0].content[0]',
      ],
      [
        { messages: [{ role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'a' }] }] },
        'messages[0].content[0]',
      ],
      [{ messages: [{ role: 'user', content: [] }] }, 'messages[0].content'],
      [{ messages: [{ role: 'user', content: [{ type: 'text' }] }] }, 'messages[0].content[0].text'],
      [{ messages: [{ role: 'user', content: 'x' }], system: [{ type: 'image' }] }, 'system[0]'],
      [
        { messages: [{ role: 'user', content: 'x' }], tool_choice: { type: 'tool', name: 'missing' } },
        'tool_choice.name',
      ],
      [
        { messages: [{ role: 'user', content: 'x' }], thinking: { type: 'enabled', budget_tokens: 100 } },
        'thinking.budget_tokens',
      ],
    ];
    for (const [body, param] of cases) {
      const error = refusal(() => parse(body));
      assert.equal(error.code, 'INVALID_REQUEST', param);
      assert.equal(error.details.param, param);
    }
  });
});
