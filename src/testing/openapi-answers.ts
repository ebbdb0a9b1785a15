import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { TestResponse } from './harness.ts';

/**
 * Checks of real answers against the served OpenAPI document, as a client generated from it (openapi-typescript,
 * a strict validator) would take them: ajv with ajv-formats, the document's components resolvable.
 */

// ajv-formats is CommonJS: its default export is the plugin under Node's ESM interop.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/**
 * What a client generated from `document` would find wrong in `response` to `method templatePath`: an
 * undocumented status or content type, a body where none is documented, or a body its schema refuses.
 */
export function mismatches(document: any, method: string, templatePath: string, response: TestResponse): string[] {
  const operation = document.paths[templatePath]?.[method.toLowerCase()];
  const where = `${method} ${templatePath} -> ${response.status}`;
  if (!operation) return [`${where}: no such operation in the document`];
  const status = String(response.status);
  const documented = operation.responses[status] ?? operation.responses[`${status[0]}XX`];
  if (!documented) return [`${where}: status not documented (${Object.keys(operation.responses)})`];
  const type = (response.headers.get('content-type') ?? '').split(';')[0]!.trim();
  if (!documented.content) return response.text ? [`${where}: a ${type} body where none is documented`] : [];
  const media = documented.content[type];
  if (!media) return [`${where}: content type ${type} not documented (${Object.keys(documented.content)})`];
  if (!type.endsWith('json') || !media.schema) return [];
  const ajv = new Ajv({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ components: document.components }, 'document');
  const validate = ajv.compile(
    JSON.parse(JSON.stringify(media.schema).replaceAll('"#/components', '"document#/components')),
  );
  return validate(response.body)
    ? []
    : [`${where}: ${ajv.errorsText(validate.errors)}; body ${response.text.slice(0, 300)}`];
}

/** A multipart POST (as the official SDKs send audio and image edits), read whole as the harness reads answers. */
export async function postForm(baseUrl: string, path: string, key: string, fields: Record<string, string | Blob>) {
  const form = new FormData();
  for (const [name, value] of Object.entries(fields)) form.append(name, value);
  const response = await fetch(`${baseUrl}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}` },
    body: form,
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // Not JSON (a text transcript): the text itself.
  }
  return { status: response.status, headers: response.headers, text, body } satisfies TestResponse;
}

/** One call of a route and its answer: the method, the path as the document templates it, the response. */
export type DocumentedCall = [method: string, templatePath: string, response: TestResponse];

/**
 * What is wrong with `calls` taken as happy paths: an answer that is not a 2XX (with its body, to see why), or one
 * the document does not describe (see {@link mismatches}). Empty when every answer succeeded as documented.
 */
export function happyPathProblems(document: any, calls: DocumentedCall[]): string[] {
  return calls.flatMap(([method, path, response]) =>
    response.status >= 200 && response.status < 300
      ? mismatches(document, method, path, response)
      : [`${method} ${path} -> ${response.status}: ${response.text.slice(0, 300)}`],
  );
}
