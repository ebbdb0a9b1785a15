import type { ServerResponse } from 'node:http';
import { startRecordingUpstream, type RecordingUpstream } from '../../../testing/recording-upstream.ts';

/**
 * A real HTTP server reading documents, in both wire formats: Anthropic Messages at `/v1/messages` (streamed or
 * not) and OpenAI chat at `/v1/chat/completions`. It answers {@link DOCUMENT_ANSWER}, which on the Anthropic route
 * cites the first document (a `char_location` citation, as Anthropic answers a document with citations enabled)
 * when that document asked for citations, and reports {@link DOCUMENT_USAGE} (a PDF is thousands of input tokens).
 * `gate()` holds the next answer until its `release()`, so that a test can read the hold while the call is upstream.
 * Its `url` is the Anthropic base URL; the OpenAI one is `${url}/v1`.
 */
export type DocumentUpstream = RecordingUpstream;

/** The answer's text. */
export const DOCUMENT_ANSWER = 'The grass is green.';
/** The counts every answer reports. */
export const DOCUMENT_USAGE = { input: 3210, output: 7 };

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

/** Starts the document upstream on a random loopback port. */
export function startDocumentUpstream(): Promise<DocumentUpstream> {
  return startRecordingUpstream((path, body, res) => {
    if (path === '/v1/messages') return anthropic(body, res);
    if (path === '/v1/chat/completions') return openai(body, res);
    res.writeHead(404).end();
  });
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
