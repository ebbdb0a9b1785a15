import { ApiError } from '../errors.ts';

/**
 * A JSON body's text, or the error to answer instead when it is not UTF-8. RFC 8259 §8.1: JSON between systems
 * is UTF-8. A file saved by Windows PowerShell is UTF-16, and sent as is (`curl -d @body.json`) it was "not valid
 * JSON", which sends a person looking for a syntax error that is not there. (A UTF-8 byte order mark, which
 * Windows editors write, is fine: Fastify's parser skips it, as §8.1 allows.)
 */
export function jsonTextOf(body: string): string | ApiError {
  // Read as UTF-8, UTF-16's byte order mark (FF FE or FE FF) is two replacement characters, and ASCII text
  // without one has a NUL before or after each character. Only the first two are looked at: this runs on
  // every JSON body.
  const first = body.charCodeAt(0);
  if ((first === 0xfffd && body.charCodeAt(1) === 0xfffd) || first === 0 || body.charCodeAt(1) === 0)
    return new ApiError(
      'INVALID_REQUEST',
      'The body is not UTF-8 (it looks like UTF-16, the encoding of a file saved by Windows PowerShell): send the JSON encoded as UTF-8.',
    );
  return body;
}
