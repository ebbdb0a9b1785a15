import { errors, type ApiError } from '../platform/errors.ts';
import type { CatalogueModel } from '../models/catalogue.ts';
import type { CanonicalCall, CanonicalDocument } from './canonical.ts';

/**
 * The document rules every protocol shares: an inline file (chat's `file` part, Responses' `input_file`) as the
 * canonical document the hold is planned from, and the models that cannot take one.
 *
 * Billing invariant: an inline file is a canonical document with a `pdf` source, so `planCall` holds the call at
 * its model's whole context (`chat-plan.ts`, `documentHeldAtContext`, says why nothing smaller bounds a PDF; a file
 * of another type is read by its bytes the same way, so it is held alike), and its bytes are left out of the
 * counted prompt (`toOpenAiPromptFields`), so they never lower the output cap.
 */

/** A `data:` URL of a base64 PDF: the one form Anthropic's `document` block takes as data. */
const PDF_DATA_URL = /^data:application\/pdf;base64,/;

/**
 * An inline file as a canonical document: its data (a `data:` URL, as the OpenAI SDKs send it) held at the
 * model's context, its `filename` as the title, `param` its path for the 400s that name it.
 */
export function inlineFileDocument(
  file: { fileData: string; filename?: unknown; cacheControl?: Record<string, unknown> },
  param: string,
): CanonicalDocument {
  return {
    type: 'document',
    source: { type: 'pdf', url: file.fileData },
    ...(typeof file.filename === 'string' && file.filename ? { title: file.filename } : {}),
    ...(file.cacheControl ? { cacheControl: file.cacheControl } : {}),
    param,
  };
}

/**
 * Why an `openrouter` model cannot take a PDF at `param`, or null.
 *
 * Billing invariant: OpenRouter parses a PDF for a model that does not read files itself with its file-parser
 * plugin, by default at a fee per page (Mistral OCR) that is not in the tokens the call is billed on (the reason
 * chat's `plugins` is refused). So a PDF goes to an `openrouter` model only when its catalogue `inputModalities`
 * has `file` (the model reads it, billed as input tokens); any other is refused by the PDF's path.
 */
export function fileParserRefusal(model: CatalogueModel, param: string): ApiError | null {
  if (model.provider !== 'openrouter' || model.inputModalities.includes('file')) return null;
  return errors.unsupported(
    param,
    `${param}: "${model.id}" does not read PDFs itself (its catalogue inputModalities has no "file"), and OpenRouter would parse this one at a per-page fee the gateway does not bill; send it to a model that reads files.`,
  );
}

/**
 * The refusal of a model for the inline files of a call (its documents with a `param`: chat's and Responses'), or
 * undefined when it has none. An Anthropic model takes a PDF as a `document` block (base64 data), and no other
 * type (it would be refused upstream after the hold, or misread): a file that is not a `data:application/pdf;
 * base64,…` URL is refused there by its path. An `openrouter` model that does not read files is refused by
 * {@link fileParserRefusal}.
 */
export function inlineFileRefusal(call: CanonicalCall): ((model: CatalogueModel) => ApiError | null) | undefined {
  const files = [call.system, ...call.messages.map((message) => message.content)]
    .flat()
    .filter((part): part is CanonicalDocument & { param: string } => part.type === 'document' && !!part.param);
  if (files.length === 0) return undefined;
  const [first] = files;
  const notPdf = files.find((file) => file.source.type !== 'pdf' || !PDF_DATA_URL.test(file.source.url));
  return (model) => {
    if (model.provider === 'anthropic' && notPdf)
      return errors.unsupported(
        notPdf.param,
        `${notPdf.param}: "${model.id}" (an Anthropic model) reads PDFs only: send the file as data:application/pdf;base64,… or send it to another model.`,
      );
    return fileParserRefusal(model, first.param);
  };
}
