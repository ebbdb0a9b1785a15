import { ApiError } from '../platform/errors.ts';

/**
 * What the multipart routes (transcriptions, image edits) say when the parser refuses a body: the route's own
 * words for its file and for the parser's count limits, so each refusal tells the client what that route takes.
 */
export interface MultipartWording {
  /** The upload a 413 is about, with its verb ("The audio file is"). */
  file: string;
  /** The parser's count limits reached, by fastify-multipart code (FST_FILES_LIMIT, FST_FIELDS_LIMIT, FST_PARTS_LIMIT). */
  limits: Record<string, string>;
}

/** The 413 of an upload over `BODY_LIMIT_UPLOAD_BYTES`, naming the limit; `file` is its subject and verb ("The audio file is"). */
export function fileTooLarge(limit: number, file: string): ApiError {
  return new ApiError(
    'PAYLOAD_TOO_LARGE',
    `${file} larger than the ${limit} bytes this route accepts (BODY_LIMIT_UPLOAD_BYTES).`,
    { details: { limit } },
  );
}

/** The longest value a multipart field (not a file) may have: the parser's default, given explicitly. */
export const MULTIPART_FIELD_BYTES = 1024 * 1024;

/**
 * The 413 of a multipart field longer than {@link MULTIPART_FIELD_BYTES}. The parser cuts such a value short
 * without a word, so a long `prompt` or a speaker reference's audio went upstream truncated (the audio corrupt)
 * and held for what was left; refused, nothing is held or sent, and the client is told which field and how long
 * (and, with `hint`, the route's own advice).
 */
export function fieldTooLong(name: string, hint = ''): ApiError {
  return new ApiError(
    'PAYLOAD_TOO_LARGE',
    `The field "${name}" is longer than the ${MULTIPART_FIELD_BYTES} bytes a multipart field may hold; send less${hint ? ` (${hint})` : ''}.`,
    { details: { param: name, limit: MULTIPART_FIELD_BYTES } },
  );
}

/**
 * A refusal of the multipart parser as the error a person can act on: a file over the limit names it (413), and
 * a count limit says what to send (400, or the route's own error) — not the parser's own "reach files limit"
 * under a 413; a body it cannot read is a 400 saying so, not a 500.
 */
export function multipartRefusal(error: unknown, limit: number, wording: MultipartWording): unknown {
  const code = (error as { code?: string } | null)?.code;
  if (code === 'FST_REQ_FILE_TOO_LARGE') return fileTooLarge(limit, wording.file);
  if (code && code in wording.limits) return new ApiError('INVALID_REQUEST', wording.limits[code]!);
  // The parser's own errors carry no code or status: a Content-Type without its boundary, a boundary over 256
  // characters, a body that ends before its closing boundary. Each is the client's body, not a fault here.
  if (error instanceof Error && !(error instanceof ApiError) && code === undefined && !('statusCode' in error))
    return new ApiError(
      'INVALID_REQUEST',
      `The multipart body is malformed (${error.message}); send multipart/form-data with the boundary its Content-Type names, ending with that boundary.`,
    );
  return error;
}
