import { ApiError, errors } from '../../platform/errors.ts';
import type { CanonicalCall, CanonicalDocument, CanonicalPart } from '../../gateway/canonical.ts';
import type { CatalogueModel } from '../../models/catalogue.ts';
import { fileParserRefusal } from '../../gateway/documents.ts';

/**
 * Anthropic's `document` blocks (a PDF as base64 data or by URL, a plain text, a list of text and image blocks) as
 * canonical parts, and what a model other than Anthropic's cannot take of them.
 *
 * Billing invariant: every document is in the canonical call, so the pipeline holds for it: a text (or content)
 * document is counted as its title, context and text (its images at the model's image budget); a PDF, a URL and a
 * document with citations hold the model's whole context (`gateway/chat-plan.ts`, `documentHeldAtContext`, says
 * why nothing smaller bounds them). A `file` source (a Files API upload) is refused: the upload is of any length,
 * the request does not show it, and the Files beta header is not forwarded.
 */

const invalid = (param: string, message: string): ApiError => errors.invalid(message, { param });

/** An optional string field of the block (`title`, `context`): null and absent are none. */
function optionalText(block: Record<string, unknown>, field: string, param: string): string | undefined {
  const value = block[field];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalid(`${param}.${field}`, `${param}.${field} must be a string.`);
  return value;
}

/**
 * One `document` block as canonical parts: the document, then the images of a `content` source (each held at the
 * model's image budget). `imagePart` and `checkCacheControl` are the parser's own (the same checks as elsewhere).
 */
export function documentParts(
  block: Record<string, unknown>,
  param: string,
  parser: {
    imagePart: (block: Record<string, unknown>, param: string) => CanonicalPart;
    checkCacheControl: (value: unknown, param: string) => Record<string, unknown> | undefined;
  },
): CanonicalPart[] {
  const cacheControl = parser.checkCacheControl(block.cache_control, `${param}.cache_control`);
  const citations = block.citations as { enabled?: unknown } | null | undefined;
  if (citations !== undefined && citations !== null && typeof citations.enabled !== 'boolean')
    throw invalid(`${param}.citations`, `${param}.citations must be { enabled: true } or { enabled: false }.`);
  const document = {
    type: 'document',
    ...(optionalText(block, 'title', param) ? { title: block.title as string } : {}),
    ...(optionalText(block, 'context', param) ? { context: block.context as string } : {}),
    ...(citations?.enabled === true ? { citations: true } : {}),
    ...(cacheControl ? { cacheControl } : {}),
  } as const;
  const source = block.source as Record<string, unknown> | undefined;
  const at = `${param}.source`;
  switch (source?.type) {
    case 'base64':
      if (source.media_type !== 'application/pdf')
        throw invalid(`${at}.media_type`, `${at}.media_type must be "application/pdf" for base64 data.`);
      if (typeof source.data !== 'string' || !source.data)
        throw invalid(`${at}.data`, `${at}.data must be the PDF's base64 text.`);
      return [{ ...document, source: { type: 'pdf', url: `data:application/pdf;base64,${source.data}` } }];
    case 'url':
      if (typeof source.url !== 'string' || !/^https?:\/\//.test(source.url))
        throw invalid(`${at}.url`, `${at}.url must be an http(s) URL of a PDF.`);
      return [{ ...document, source: { type: 'pdf', url: source.url } }];
    case 'text':
      if (source.media_type !== 'text/plain')
        throw invalid(`${at}.media_type`, `${at}.media_type must be "text/plain" for a text source.`);
      if (typeof source.data !== 'string') throw invalid(`${at}.data`, `${at}.data must be the document's text.`);
      return [{ ...document, source: { type: 'text', text: source.data } }];
    case 'content':
      return contentDocument(document, source.content, at, parser.imagePart);
    case 'file':
      throw errors.unsupported(
        at,
        `${at}: a document by file_id is not accepted: it refers to an upload through Anthropic's Files API (a beta the gateway does not forward), of a length the request does not show, so its cost cannot be held for. Send the PDF inline (source type "base64") or by URL.`,
      );
    default:
      throw invalid(
        at,
        `${at} must be { type: "base64", media_type: "application/pdf", data }, { type: "text", media_type: "text/plain", data }, { type: "content", content } or { type: "url", url }.`,
      );
  }
}

/** A `content` source: its text blocks as the document's text (one paragraph each), its image blocks as images. */
function contentDocument(
  document: Omit<CanonicalDocument, 'source'>,
  content: unknown,
  at: string,
  imagePart: (block: Record<string, unknown>, param: string) => CanonicalPart,
): CanonicalPart[] {
  if (typeof content === 'string') return [{ ...document, source: { type: 'text', text: content } }];
  if (!Array.isArray(content))
    throw invalid(`${at}.content`, `${at}.content must be a string or an array of text and image blocks.`);
  const texts: string[] = [];
  const images: CanonicalPart[] = [];
  content.forEach((inner: Record<string, unknown>, i) => {
    const param = `${at}.content[${i}]`;
    if (inner?.type === 'text' && typeof inner.text === 'string') texts.push(inner.text);
    else if (inner?.type === 'image') images.push(imagePart(inner, param));
    else throw invalid(param, `${param}: a content source holds text and image blocks only.`);
  });
  return [{ ...document, source: { type: 'text', text: texts.join('\n\n') } }, ...images];
}

/** A document a model may refuse: where it is, and why, for the model's id. */
interface DocumentProblem {
  param: string;
  message: (model: string) => string;
}

/**
 * Why a model that is not Anthropic's cannot take the call's documents, or null. A text document reaches an
 * OpenAI-compatible model as text (title and context in front), a base64 PDF as chat's `file` part; a PDF by URL has
 * no chat form (chat's file part carries data only), and citations have none either (the answer could not cite):
 * both are refused there by the block's path, never dropped. An Anthropic model takes the body as sent.
 *
 * Billing invariant: a base64 PDF goes to an `openrouter` model only when the model reads files itself; for any
 * other OpenRouter would parse it at a per-page fee the call is not billed for (`gateway/documents.ts`,
 * `fileParserRefusal`, shared with chat's and Responses' files), so it is refused by the block's path.
 */
export function documentRefusal(call: CanonicalCall): ((model: CatalogueModel) => ApiError | null) | undefined {
  const messages = (call.native?.body as { messages?: unknown } | undefined)?.messages;
  if (!Array.isArray(messages)) return undefined;
  let untranslatable: DocumentProblem | null = null;
  let pdf: string | null = null;
  const look = (block: Record<string, unknown>, param: string) => {
    if (block?.type !== 'document') return;
    const source = block.source as { type?: unknown } | undefined;
    if (!untranslatable && source?.type === 'url')
      untranslatable = {
        param: `${param}.source`,
        message: (model) =>
          `${param}.source: a PDF by URL cannot reach "${model}" (not an Anthropic model): chat's file part carries the data only; send the PDF as base64 data.`,
      };
    else if (!untranslatable && (block.citations as { enabled?: unknown } | null | undefined)?.enabled === true)
      untranslatable = {
        param: `${param}.citations`,
        message: (model) =>
          `${param}.citations: citations are Anthropic's; "${model}" (not an Anthropic model) cannot cite a document. Leave citations out for this model.`,
      };
    if (!pdf && source?.type === 'base64') pdf = param;
  };
  messages.forEach((message: { content?: unknown }, m) => {
    if (!Array.isArray(message?.content)) return;
    message.content.forEach((block: Record<string, unknown>, b) => {
      const param = `messages[${m}].content[${b}]`;
      look(block, param);
      const inner = block?.type === 'tool_result' ? block.content : undefined;
      if (Array.isArray(inner))
        inner.forEach((nested: Record<string, unknown>, i) => look(nested, `${param}.content[${i}]`));
    });
  });
  const found = untranslatable as DocumentProblem | null;
  const parsed = pdf as string | null;
  if (!found && !parsed) return undefined;
  return (model) => {
    if (model.provider === 'anthropic') return null;
    if (found) return errors.unsupported(found.param, found.message(model.id));
    return parsed ? fileParserRefusal(model, parsed) : null;
  };
}
