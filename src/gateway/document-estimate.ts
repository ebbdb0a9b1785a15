import { constants, inflateSync } from 'node:zlib';
import type { CanonicalCall } from './canonical.ts';

/**
 * An ESTIMATE of what the PDFs of a call add to its input, for `count_tokens` when the gateway counts itself (a
 * model whose provider has no counting endpoint, or Anthropic's failing) and for the input a translated Messages
 * stream shows in its `message_start` before the upstream reports (`run-call.ts`, `CallStream.promptTokens`): the
 * best guess at the input, for a client's context meter (Claude Code's), not the worst case. The HOLD does not use it: a call with a PDF is
 * still held at the model's whole context (`gateway/chat-plan.ts`, `documentHeldAtContext`), since nothing in a
 * PDF's bytes bounds what the upstream bills for it.
 *
 * Anthropic reads each page as its text (about 1,500–3,000 tokens a page by its documentation, fewer on a sparse
 * page) and as an image (about 1,600 tokens at most for a full page): a page is estimated at
 * {@link PDF_PAGE_TOKENS}, the low end of the text plus the image. The pages are read from the PDF (see
 * {@link pdfPageCount}); when they cannot be, from its size ({@link PDF_BYTES_PER_PAGE}). A PDF by URL is not
 * fetched: it is estimated at one page.
 */

/** The text of a page (the low end of Anthropic's 1,500–3,000) plus its image (1,600 at most). An estimate. */
export const PDF_PAGE_TOKENS = 1_500 + 1_600;

/**
 * Bytes of a PDF per page when its pages cannot be read (encrypted, another compression, not a PDF): a page of
 * text with its share of fonts is commonly 20–100 KB. An estimate; at least one page.
 */
export const PDF_BYTES_PER_PAGE = 50_000;

/**
 * The most bytes the object streams of one count's PDFs are inflated to, all together: the page objects they hide
 * are a few hundred bytes each, and deflate bombs (many PDFs of them, too) must not make a count allocate gigabytes
 * or hold the event loop.
 */
const INFLATED_LIMIT = 8 * 1024 * 1024;

/** What is left of {@link INFLATED_LIMIT} for a count. */
interface InflateBudget {
  left: number;
}

/** A page object's type (`/Type /Page`, never the page tree's `/Type /Pages`). */
const PAGE_TYPE = /\/Type\s*\/Page(?![A-Za-z0-9])/g;

/** Tokens the PDFs of a call are estimated at (0 without one): {@link PDF_PAGE_TOKENS} a page. */
export function estimatedPdfTokens(call: CanonicalCall): number {
  const budget: InflateBudget = { left: INFLATED_LIMIT };
  let pages = 0;
  for (const message of [{ content: call.system }, ...call.messages])
    for (const part of message.content) {
      if (part.type !== 'document' || part.source.type !== 'pdf') continue;
      const data = /^data:[^;,]*;base64,/.exec(part.source.url);
      pages += data ? pdfPages(Buffer.from(part.source.url.slice(data[0].length), 'base64'), budget) : 1;
    }
  return pages * PDF_PAGE_TOKENS;
}

/** The pages of a PDF: read from it, else by its size (at least one). */
function pdfPages(pdf: Buffer, budget: InflateBudget): number {
  return pdfPageCount(pdf, budget) ?? Math.max(1, Math.ceil(pdf.length / PDF_BYTES_PER_PAGE));
}

/**
 * The page objects of a PDF, or null when none can be found: each `/Type /Page` in the file, and in its object
 * streams (PDF 1.5 and later may compress the page objects into `/Type /ObjStm` streams, Flate-encoded: those are
 * inflated, within `budget`, shared by the PDFs of a count). An estimate: a page replaced by an incremental update
 * counts twice.
 */
export function pdfPageCount(pdf: Buffer, budget: InflateBudget = { left: INFLATED_LIMIT }): number | null {
  const text = pdf.toString('latin1');
  let pages = text.match(PAGE_TYPE)?.length ?? 0;
  for (let at = text.indexOf('/ObjStm'); at !== -1 && budget.left > 0; at = text.indexOf('/ObjStm', at + 1)) {
    const start = /stream\r?\n/g;
    start.lastIndex = at;
    const opened = start.exec(text);
    const end = opened ? text.indexOf('endstream', start.lastIndex) : -1;
    // The dictionary of this object stream only: its `stream` keyword before the object ends.
    if (!opened || end === -1 || text.slice(at, opened.index).includes('endobj')) continue;
    if (!/\/FlateDecode/.test(text.slice(text.lastIndexOf('obj', at), opened.index))) continue;
    try {
      const inflated = inflateSync(pdf.subarray(start.lastIndex, end), {
        finishFlush: constants.Z_SYNC_FLUSH,
        maxOutputLength: budget.left,
      });
      budget.left -= inflated.length;
      pages += inflated.toString('latin1').match(PAGE_TYPE)?.length ?? 0;
    } catch (error) {
      // Past the budget: it is spent (a bomb inflates it whole before failing, each time). Not Flate after all, or
      // encrypted: this stream's pages are unknown, and its bytes are taken from the budget.
      budget.left = error instanceof RangeError ? 0 : budget.left - (end - start.lastIndex);
    }
  }
  return pages > 0 ? pages : null;
}
