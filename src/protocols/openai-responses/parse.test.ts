import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../platform/errors.ts';
import { toCanonicalCall, type InputItem, type ResponsesRequest } from './parse.ts';

const none = () => null;
const parse = (
  body: Partial<ResponsesRequest>,
  history: InputItem[] = [],
  resolve: (id: string) => InputItem | null = none,
) => toCanonicalCall({ model: 'acme/chat', ...body } as ResponsesRequest, history, resolve);
const refusal = (code: string, param: string | RegExp) => (error: unknown) => {
  assert.ok(error instanceof ApiError, String(error));
  assert.equal(error.code, code);
  if (typeof param === 'string') assert.equal(error.details.param, param);
  else assert.match(String(error.details.param), param);
  return true;
};

describe('parsing a Responses request into the canonical call', () => {
  it('a string input is one user message; instructions are the first system part; the knobs are carried', () => {
    const call = parse({
      input: 'hi',
      instructions: 'be brief',
      max_output_tokens: 50,
      temperature: 0.2,
      top_p: 0.9,
      stream: true,
      reasoning: { effort: 'low' },
    });
    assert.deepEqual(call.system, [{ type: 'text', text: 'be brief' }]);
    assert.deepEqual(call.messages, [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }]);
    assert.equal(call.maxOutputTokens, 50);
    assert.equal(call.temperature, 0.2);
    assert.equal(call.topP, 0.9);
    assert.equal(call.stream, true);
    assert.deepEqual(call.reasoning, { effort: 'low' });
    assert.equal(parse({ input: 'hi' }).maxOutputTokens, null);
  });

  it('message items: developer and system join the instructions; input_text, input_image and output_text become parts', () => {
    const call = parse({
      instructions: 'first',
      input: [
        { role: 'developer', content: 'second' },
        {
          type: 'message',
          role: 'user',
          content: [
            { type: 'input_text', text: 'what is this?' },
            { type: 'input_image', image_url: 'data:image/png;base64,AAAA', detail: 'low' },
          ],
        },
        { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'a dot', annotations: [] }] },
        { role: 'system', content: [{ type: 'input_text', text: 'third' }] },
        { role: 'user', content: 'sure?' },
      ],
    });
    assert.deepEqual(
      call.system.map((p) => (p as any).text),
      ['first', 'second', 'third'],
    );
    assert.deepEqual(call.messages, [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'what is this?' },
          { type: 'image', url: 'data:image/png;base64,AAAA', detail: 'low' },
        ],
      },
      { role: 'assistant', content: [{ type: 'text', text: 'a dot' }] },
      { role: 'user', content: [{ type: 'text', text: 'sure?' }] },
    ]);
  });

  it('reasoning, text and function_call items make one assistant turn; each function_call_output a tool message', () => {
    const call = parse({
      input: [
        { role: 'user', content: 'weather in Paris and Rome?' },
        {
          type: 'reasoning',
          id: 'rs_1',
          summary: [{ type: 'summary_text', text: 'look both up' }],
          encrypted_content: 'sig',
        },
        { type: 'reasoning', id: 'rs_2', summary: [], encrypted_content: null },
        { type: 'function_call', call_id: 'call_1', name: 'weather', arguments: '{"city":"Paris"}' },
        { type: 'function_call', call_id: 'call_2', name: 'weather', arguments: '{"city":"Rome"}' },
        { type: 'function_call_output', call_id: 'call_1', output: 'sunny' },
        { type: 'function_call_output', call_id: 'call_2', output: [{ type: 'input_text', text: 'rain' }] },
      ],
      tools: [
        {
          type: 'function',
          name: 'weather',
          description: 'Weather of a city',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      ],
      tool_choice: { type: 'function', name: 'weather' },
    });
    assert.deepEqual(call.messages.slice(1), [
      {
        role: 'assistant',
        content: [
          { type: 'reasoning', text: 'look both up', signature: 'sig' },
          { type: 'tool_call', id: 'call_1', name: 'weather', arguments: '{"city":"Paris"}' },
          { type: 'tool_call', id: 'call_2', name: 'weather', arguments: '{"city":"Rome"}' },
        ],
      },
      { role: 'tool', content: [{ type: 'tool_result', callId: 'call_1', content: 'sunny' }] },
      { role: 'tool', content: [{ type: 'tool_result', callId: 'call_2', content: 'rain' }] },
    ]);
    assert.deepEqual(call.tools, [
      {
        name: 'weather',
        description: 'Weather of a city',
        parameters: { type: 'object', properties: { city: { type: 'string' } } },
      },
    ]);
    assert.deepEqual(call.toolChoice, { name: 'weather' });
  });

  it('the previous conversation comes first; item_reference items are replaced by the items they name', () => {
    const history: InputItem[] = [
      { role: 'user', content: 'hi' },
      { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'hello' }] },
    ];
    const call = parse(
      {
        input: [
          { type: 'item_reference', id: 'msg_x' },
          { role: 'user', content: 'again' },
        ],
      },
      history,
      (id) =>
        id === 'msg_x'
          ? { type: 'message', role: 'assistant', content: [{ type: 'output_text', text: 'referenced' }] }
          : null,
    );
    // The referenced assistant message joins the assistant turn before it.
    assert.deepEqual(
      call.messages.map((m) => m.role),
      ['user', 'assistant', 'user'],
    );
    assert.deepEqual(call.messages[1].content, [
      { type: 'text', text: 'hello' },
      { type: 'text', text: 'referenced' },
    ]);
    assert.throws(
      () => parse({ input: [{ type: 'item_reference', id: 'msg_unknown' }] }),
      refusal('INVALID_REQUEST', 'input[0]'),
    );
  });

  it('text.format json_schema and json_object become the response format; text is the default', () => {
    assert.deepEqual(
      parse({
        input: 'x',
        text: { format: { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true } },
      }).responseFormat,
      { type: 'json_schema', name: 'out', schema: { type: 'object' }, strict: true },
    );
    assert.deepEqual(parse({ input: 'x', text: { format: { type: 'json_object' } } }).responseFormat, {
      type: 'json_object',
    });
    assert.equal(parse({ input: 'x', text: { format: { type: 'text' } } }).responseFormat, undefined);
  });

  it('built-in tools are refused naming them; other tool choices, parts, items and fields are refused naming the param', () => {
    assert.throws(
      () => parse({ input: 'x', tools: [{ type: 'web_search' }, { type: 'file_search', vector_store_ids: [] }] }),
      (error: any) => {
        assert.equal(error.code, 'UNSUPPORTED_PARAMETER');
        assert.equal(error.details.param, 'tools[0].type');
        assert.match(error.message, /web_search, file_search/);
        return true;
      },
    );
    assert.throws(
      () => parse({ input: 'x', tool_choice: { type: 'web_search_preview' } }),
      refusal('UNSUPPORTED_PARAMETER', 'tool_choice'),
    );
    assert.throws(
      () => parse({ input: 'x', tool_choice: { type: 'function', name: 'nope' } }),
      refusal('INVALID_REQUEST', 'tool_choice'),
    );
    assert.throws(
      () => parse({ input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file_1' }] }] }),
      refusal('UNSUPPORTED_PARAMETER', 'input[0].content[0]'),
    );
    assert.throws(
      () => parse({ input: [{ role: 'user', content: [{ type: 'input_file', file_id: 'file_1' }] }] }),
      refusal('UNSUPPORTED_PARAMETER', 'input[0].content[0]'),
    );
    assert.throws(
      () =>
        parse({ input: [{ role: 'user', content: [{ type: 'input_file', file_url: 'https://a.example/a.pdf' }] }] }),
      refusal('UNSUPPORTED_PARAMETER', 'input[0].content[0]'),
    );
    assert.throws(
      () =>
        parse({
          input: [
            { role: 'assistant', content: [{ type: 'input_file', file_data: 'data:application/pdf;base64,JVBE' }] },
          ],
        }),
      refusal('UNSUPPORTED_PARAMETER', 'input[0].content[0]'),
    );
    assert.throws(
      () =>
        parse({
          input: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'UklG', format: 'wav' } }] }],
        }),
      refusal('UNSUPPORTED_PARAMETER', 'input[0].content[0]'),
    );
    assert.throws(
      () => parse({ input: [{ type: 'web_search_call', id: 'ws_1' }] }),
      refusal('UNSUPPORTED_PARAMETER', 'input[0]'),
    );
    assert.throws(
      () => parse({ input: [{ role: 'tool', content: 'x' }] }),
      refusal('INVALID_REQUEST', 'input[0].role'),
    );
    assert.throws(() => parse({ input: 'x', background: true }), refusal('UNSUPPORTED_PARAMETER', 'background'));
    assert.throws(() => parse({ input: 'x', frobnicate: 1 }), refusal('UNSUPPORTED_PARAMETER', 'frobnicate'));
    assert.throws(
      () => parse({ input: 'x', reasoning: { effort: 'extreme' } }),
      refusal('INVALID_REQUEST', 'reasoning.effort'),
    );
    assert.throws(() => parse({ input: [] }), refusal('INVALID_REQUEST', 'input'));
    assert.throws(
      () => parse({ input: [{ role: 'system', content: 'only rules' }] }),
      refusal('INVALID_REQUEST', 'input'),
    );
    // Harmless fields the SDKs send are accepted.
    assert.doesNotThrow(() =>
      parse({
        input: 'x',
        user: 'u1',
        include: ['reasoning.encrypted_content'],
        truncation: 'disabled',
        background: false,
        service_tier: 'auto',
      }),
    );
  });
});
