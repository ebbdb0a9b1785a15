import type { IncomingHttpHeaders, ServerResponse } from 'node:http';
import { deflateSync } from 'node:zlib';
import { startRecordingUpstream, type RecordingUpstream } from '../../../testing/recording-upstream.ts';

/**
 * A real HTTP server reading documents, in both wire formats: Anthropic Messages at `/v1/messages` (streamed or
 * not) and OpenAI chat at `/v1/chat/completions`. It answers {@link DOCUMENT_ANSWER}, which on the Anthropic route
 * cites the first document (a `char_location` citation, as Anthropic answers a document with citations enabled)
 * when that document asked for citations, and reports {@link DOCUMENT_USAGE} (a PDF is thousands of input tokens).
 * Anthropic's `/v1/messages/count_tokens` answers {@link DOCUMENT_COUNT}, or fails as {@link COUNT_FAILURES} says for
 * the upstream model named; `countHeaders` keeps the headers of each count request.
 * `gate()` holds the next answer until its `release()`, so that a test can read the hold while the call is upstream.
 * Its `url` is the Anthropic base URL; the OpenAI one is `${url}/v1`.
 */
export type DocumentUpstream = RecordingUpstream & { countHeaders: IncomingHttpHeaders[] };

/** The answer's text. */
export const DOCUMENT_ANSWER = 'The grass is green.';
/** The counts every answer reports. */
export const DOCUMENT_USAGE = { input: 3210, output: 7 };

/** What Anthropic's count_tokens answers (as `input_tokens`), far from any count of the gateway's. */
export const DOCUMENT_COUNT = 4321;

/**
 * Upstream models whose count fails, and how: `count-fails` a 500, `count-unknown` the 404 of a model Anthropic does
 * not know, `count-refuses` the 400 of a body Anthropic finds invalid ({@link COUNT_REFUSAL}), `count-hangs` no
 * answer for 2 seconds.
 */
export const COUNT_FAILURES = {
  fails: 'count-fails',
  unknown: 'count-unknown',
  refuses: 'count-refuses',
  hangs: 'count-hangs',
} as const;

/** The message of the 400 of `count-refuses`. */
export const COUNT_REFUSAL = 'messages.0.content.0.source.data: The PDF specified was not valid.';

/** The citation of the first document's opening, as Anthropic returns it. */
export function citationOf(body: any): Record<string, unknown> | null {
  const documents = (body.messages ?? []).flatMap((message: any) =>
    Array.isArray(message.content) ? message.content.filter((block: any) => block?.type === 'document') : [],
  );
  const first = documents[0];
  if (!first?.citations?.enabled) return null;
  return {
    type: 'char_location',
    cited_text: DOCUMENT_ANSWER,
    document_index: 0,
    document_title: first.title ?? null,
    start_char_index: 0,
    end_char_index: DOCUMENT_ANSWER.length,
  };
}

/** A real one-page PDF showing `text` (its cross-reference table at the right byte offsets), as base64. */
export function tinyPdf(text: string): string {
  const stream = `BT /F1 24 Tf 72 720 Td (${text}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${stream.length} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let pdf = '%PDF-1.4\n';
  const offsets = objects.map((object, i) => {
    const offset = pdf.length;
    pdf += `${i + 1} 0 obj\n${object}\nendobj\n`;
    return offset;
  });
  const xref = pdf.length;
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  for (const offset of offsets) pdf += `${String(offset).padStart(10, '0')} 00000 n \n`;
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1').toString('base64');
}

/**
 * A PDF 1.5 of `pages` pages whose page objects (and catalog and page tree) sit in one Flate-encoded object stream,
 * as pdfTeX and many writers store them: no `/Type /Page` is readable without inflating it. Only what a page count
 * reads (no cross-reference stream: not for a PDF reader). As base64.
 */
export function objectStreamPdf(pages: number): string {
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    `<< /Type /Pages /Kids [${Array.from({ length: pages }, (_, i) => `${i + 3} 0 R`).join(' ')}] /Count ${pages} >>`,
    ...Array.from({ length: pages }, () => '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>'),
  ];
  let offsets = '';
  let bodies = '';
  objects.forEach((object, i) => {
    offsets += `${i + 1} ${bodies.length} `;
    bodies += `${object}\n`;
  });
  const data = deflateSync(Buffer.from(offsets + bodies, 'latin1'));
  const head = `%PDF-1.5\n${objects.length + 1} 0 obj\n<< /Type /ObjStm /N ${objects.length} /First ${offsets.length} /Filter /FlateDecode /Length ${data.length} >>\nstream\n`;
  const tail = '\nendstream\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n';
  return Buffer.concat([Buffer.from(head, 'latin1'), data, Buffer.from(tail, 'latin1')]).toString('base64');
}

/** Starts the document upstream on a random loopback port. */
export async function startDocumentUpstream(): Promise<DocumentUpstream> {
  const countHeaders: IncomingHttpHeaders[] = [];
  const upstream = await startRecordingUpstream((path, body, res) => {
    if (path === '/v1/messages') return anthropic(body, res);
    if (path === '/v1/messages/count_tokens') {
      countHeaders.push(res.req.headers);
      return countTokens(body, res);
    }
    if (path === '/v1/chat/completions') return openai(body, res);
    res.writeHead(404).end();
  });
  return Object.assign(upstream, { countHeaders });
}

/** Anthropic's count_tokens: {@link DOCUMENT_COUNT}, or the failure {@link COUNT_FAILURES} names for the model. */
async function countTokens(body: any, res: ServerResponse): Promise<void> {
  const error = (status: number, type: string, message: string) => {
    res
      .writeHead(status, { 'content-type': 'application/json' })
      .end(JSON.stringify({ type: 'error', error: { type, message } }));
  };
  switch (body.model) {
    case COUNT_FAILURES.fails:
      return error(500, 'api_error', 'Internal server error');
    case COUNT_FAILURES.unknown:
      return error(404, 'not_found_error', `model: ${body.model}`);
    case COUNT_FAILURES.refuses:
      return error(400, 'invalid_request_error', COUNT_REFUSAL);
    case COUNT_FAILURES.hangs:
      await new Promise((resolve) => setTimeout(resolve, 2000));
      if (!res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end('{"input_tokens":1}');
      return;
  }
  res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ input_tokens: DOCUMENT_COUNT }));
}

function anthropic(body: any, res: ServerResponse): void {
  const usage = {
    input_tokens: DOCUMENT_USAGE.input,
    output_tokens: DOCUMENT_USAGE.output,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
  const citation = citationOf(body);
  const text = { type: 'text', text: DOCUMENT_ANSWER, ...(citation ? { citations: [citation] } : {}) };
  if (!body.stream) {
    res.writeHead(200, { 'content-type': 'application/json' }).end(
      JSON.stringify({
        id: 'msg_doc1',
        type: 'message',
        role: 'assistant',
        model: body.model,
        content: [text],
        stop_reason: 'end_turn',
        stop_sequence: null,
        usage,
      }),
    );
    return;
  }
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  const event = (type: string, data: object) =>
    res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
  event('message_start', {
    message: {
      id: 'msg_doc1',
      type: 'message',
      role: 'assistant',
      model: body.model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 },
    },
  });
  event('content_block_start', {
    index: 0,
    content_block: { type: 'text', text: '', ...(citation ? { citations: [] } : {}) },
  });
  if (citation) event('content_block_delta', { index: 0, delta: { type: 'citations_delta', citation } });
  event('content_block_delta', { index: 0, delta: { type: 'text_delta', text: DOCUMENT_ANSWER } });
  event('content_block_stop', { index: 0 });
  event('message_delta', {
    delta: { stop_reason: 'end_turn', stop_sequence: null },
    usage: { output_tokens: usage.output_tokens },
  });
  event('message_stop', {});
  res.end();
}

function openai(body: any, res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'application/json' }).end(
    JSON.stringify({
      id: 'chatcmpl-doc1',
      object: 'chat.completion',
      created: 1,
      model: body.model,
      choices: [{ index: 0, message: { role: 'assistant', content: DOCUMENT_ANSWER }, finish_reason: 'stop' }],
      usage: {
        prompt_tokens: DOCUMENT_USAGE.input,
        completion_tokens: DOCUMENT_USAGE.output,
        total_tokens: DOCUMENT_USAGE.input + DOCUMENT_USAGE.output,
      },
    }),
  );
}
