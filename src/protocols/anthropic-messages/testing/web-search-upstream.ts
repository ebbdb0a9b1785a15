import type { ServerResponse } from 'node:http';
import { startRecordingUpstream, type RecordingUpstream } from '../../../testing/recording-upstream.ts';

/**
 * A real HTTP server answering Anthropic Messages (`/v1/messages`) as Anthropic does with its web search tool,
 * streamed or not: a `server_tool_use` (the query), its `web_search_tool_result` (one result, encrypted content), and
 * a text citing it (`web_search_result_location`), with {@link SEARCH_USAGE} (`server_tool_use.web_search_requests`
 * {@link SEARCHES}). Every request body is kept. {@link RecordingUpstream.gate} keeps the next answer from
 * starting until released, so a test can read what the call holds while it runs. The upstream model
 * {@link STALL_AFTER_SEARCH} streams the search, its result and the first words of the text, then nothing more
 * until the client goes away (a stream the client abandons after a search ran).
 */
export type WebSearchUpstream = RecordingUpstream;

/** The searches every answer reports. */
export const SEARCHES = 2;
/** The counts every answer reports (the results read are in `input_tokens`, as Anthropic bills them). */
export const SEARCH_USAGE = { input_tokens: 3_000, output_tokens: 40 };
/** The answer's text. */
export const SEARCH_ANSWER = 'Paris is sunny today.';
/** The upstream model whose stream stops after its search and the first words of its text. */
export const STALL_AFTER_SEARCH = 'claude-x-stall';
/** The query of the search. */
export const SEARCH_QUERY = 'weather Paris';

const RESULT = {
  type: 'web_search_result',
  url: 'https://weather.example.com/paris',
  title: 'Paris weather',
  encrypted_content: 'EnCrYpTeD'.repeat(40),
  page_age: '1 hour ago',
};
const CITATION = {
  type: 'web_search_result_location',
  url: RESULT.url,
  title: RESULT.title,
  encrypted_index: 'EnCiNdEx',
  cited_text: 'Sunny, 21 °C.',
};

/** The blocks of an answer, as a non-streamed message holds them. */
export const SEARCH_BLOCKS = [
  { type: 'server_tool_use', id: 'srvtoolu_1', name: 'web_search', input: { query: SEARCH_QUERY } },
  { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_1', content: [RESULT] },
  { type: 'text', text: SEARCH_ANSWER, citations: [CITATION] },
];

/** Starts the upstream on a random loopback port. */
export function startWebSearchUpstream(): Promise<WebSearchUpstream> {
  return startRecordingUpstream((path, body, res) => {
    if (path !== '/v1/messages') return void res.writeHead(404).end();
    answer(body, res);
  });
}

function answer(body: any, res: ServerResponse): void {
  const usage = {
    input_tokens: SEARCH_USAGE.input_tokens,
    output_tokens: SEARCH_USAGE.output_tokens,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    server_tool_use: { web_search_requests: SEARCHES },
  };
  const message = {
    id: 'msg_search1',
    type: 'message',
    role: 'assistant',
    model: body.model,
    stop_reason: 'end_turn',
    stop_sequence: null,
  };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' });
    return void res.end(JSON.stringify({ ...message, content: SEARCH_BLOCKS, usage }));
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const event = (type: string, data: object) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event('message_start', {
    message: {
      ...message,
      content: [],
      stop_reason: null,
      usage: { ...usage, output_tokens: 1, server_tool_use: { web_search_requests: 0 } },
    },
  });
  event('content_block_start', { index: 0, content_block: { ...SEARCH_BLOCKS[0], input: {} } });
  event('content_block_delta', {
    index: 0,
    delta: { type: 'input_json_delta', partial_json: JSON.stringify({ query: SEARCH_QUERY }) },
  });
  event('content_block_stop', { index: 0 });
  event('content_block_start', { index: 1, content_block: SEARCH_BLOCKS[1] });
  event('content_block_stop', { index: 1 });
  event('content_block_start', { index: 2, content_block: { type: 'text', text: '', citations: [] } });
  if (body.model === STALL_AFTER_SEARCH) {
    event('content_block_delta', { index: 2, delta: { type: 'text_delta', text: 'Paris is' } });
    return;
  }
  event('content_block_delta', { index: 2, delta: { type: 'citations_delta', citation: CITATION } });
  event('content_block_delta', { index: 2, delta: { type: 'text_delta', text: SEARCH_ANSWER } });
  event('content_block_stop', { index: 2 });
  event('message_delta', {
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: {
      input_tokens: usage.input_tokens,
      output_tokens: usage.output_tokens,
      server_tool_use: usage.server_tool_use,
    },
  });
  event('message_stop', {});
  res.end();
}
