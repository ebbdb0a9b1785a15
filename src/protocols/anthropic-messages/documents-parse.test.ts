import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../platform/errors.ts';
import { parseMessagesRequest, type MessagesRequest } from './parse.ts';
import { documentHeldAtContext } from '../../gateway/chat-plan.ts';
import { toOpenAiPromptFields } from '../../providers/openai-compatible/wire.ts';

const parse = (content: unknown[]) =>
  parseMessagesRequest(
    { model: 'anthropic/claude', max_tokens: 100, messages: [{ role: 'user', content }] } as MessagesRequest,
    { requireMaxTokens: true },
  );

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

describe('document blocks in the canonical call', () => {
  it('each source becomes a document part, a content source its text and its images, a tool result its documents too', () => {
    const call = parse([
      { type: 'document', source: { type: 'base64', media_type: 'application/pdf', data: 'JVBERi0=' }, title: 'a.pdf' },
      { type: 'document', source: { type: 'url', url: 'https://x.example/a.pdf' }, context: 'Q3 report' },
      {
        type: 'document',
        source: { type: 'text', media_type: 'text/plain', data: 'Green grass.' },
        citations: { enabled: true },
        cache_control: { type: 'ephemeral' },
      },
      {
        type: 'document',
        source: {
          type: 'content',
          content: [
            { type: 'text', text: 'One.' },
            { type: 'image', source: { type: 'url', url: 'https://x.example/a.png' } },
            { type: 'text', text: 'Two.' },
          ],
        },
      },
      {
        type: 'tool_result',
        tool_use_id: 'toolu_1',
        content: [{ type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'Fetched.' } }],
      },
    ]);
    assert.deepEqual(call.messages, [
      { role: 'tool', content: [{ type: 'tool_result', callId: 'toolu_1', content: '' }] },
      {
        role: 'user',
        content: [
          { type: 'document', source: { type: 'pdf', url: 'data:application/pdf;base64,JVBERi0=' }, title: 'a.pdf' },
          { type: 'document', source: { type: 'pdf', url: 'https://x.example/a.pdf' }, context: 'Q3 report' },
          {
            type: 'document',
            source: { type: 'text', text: 'Green grass.' },
            citations: true,
            cacheControl: { type: 'ephemeral' },
          },
          { type: 'document', source: { type: 'text', text: 'One.\n\nTwo.' } },
          { type: 'image', url: 'https://x.example/a.png' },
          { type: 'document', source: { type: 'text', text: 'Fetched.' } },
        ],
      },
    ]);
    // PDFs and the cited document are held at the context; the others are counted, as text, PDFs left out.
    assert.deepEqual(call.messages[1]!.content.map(documentHeldAtContext), [true, true, true, false, false, false]);
    assert.deepEqual(toOpenAiPromptFields(call).messages, [
      { role: 'tool', tool_call_id: 'toolu_1', content: '' },
      {
        role: 'user',
        content: [
          { type: 'text', text: 'Green grass.' },
          { type: 'text', text: 'One.\n\nTwo.' },
          { type: 'image_url', image_url: { url: 'https://x.example/a.png' } },
          { type: 'text', text: 'Fetched.' },
        ],
      },
    ]);
  });

  it('malformed documents are a 400 INVALID_REQUEST naming the field; a file source is UNSUPPORTED_PARAMETER', () => {
    const cases: Array<[Record<string, unknown>, string, string]> = [
      [{ source: { type: 'base64', media_type: 'image/png', data: 'x' } }, 'source.media_type', 'INVALID_REQUEST'],
      [{ source: { type: 'base64', media_type: 'application/pdf' } }, 'source.data', 'INVALID_REQUEST'],
      [{ source: { type: 'text', media_type: 'text/html', data: 'x' } }, 'source.media_type', 'INVALID_REQUEST'],
      [{ source: { type: 'url', url: 'file:///etc/passwd' } }, 'source.url', 'INVALID_REQUEST'],
      [{ source: { type: 'content', content: [{ type: 'document' }] } }, 'source.content[0]', 'INVALID_REQUEST'],
      [{ source: { type: 'nope' } }, 'source', 'INVALID_REQUEST'],
      [{ source: { type: 'text', media_type: 'text/plain', data: 'x' }, title: 3 }, 'title', 'INVALID_REQUEST'],
      [
        { source: { type: 'text', media_type: 'text/plain', data: 'x' }, citations: { enabled: 'yes' } },
        'citations',
        'INVALID_REQUEST',
      ],
      [{ source: { type: 'file', file_id: 'file_1' } }, 'source', 'UNSUPPORTED_PARAMETER'],
    ];
    for (const [fields, param, code] of cases) {
      const error = refusal(() =>
        parse([
          { type: 'text', text: 'Read.' },
          { type: 'document', ...fields },
        ]),
      );
      assert.equal(error.code, code, param);
      assert.equal(error.details?.param, `messages[0].content[1].${param}`);
    }
    const assistant = refusal(() =>
      parseMessagesRequest(
        {
          model: 'anthropic/claude',
          max_tokens: 100,
          messages: [
            { role: 'user', content: 'hi' },
            { role: 'assistant', content: [{ type: 'document', source: { type: 'url', url: 'https://x/a.pdf' } }] },
          ],
        } as MessagesRequest,
        { requireMaxTokens: true },
      ),
    );
    assert.equal(assistant.details?.param, 'messages[1].content[0]');
  });
});
