import type { AnthropicErrorEnvelope } from '#wire/errors.ts';
import { ApiError } from '../../platform/errors.ts';

/**
 * Anthropic's error `type` for an HTTP status, as its clients read it (the Anthropic SDK picks its error
 * class by status, Claude Code and the Vercel AI SDK show `type` and `message`). Our own `code` and the
 * contract's restriction fields travel beside it, so a 402/429 still says which restriction it is.
 */
export function anthropicErrorType(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request_error';
    case 401:
      return 'authentication_error';
    case 402:
      return 'billing_error';
    case 403:
      return 'permission_error';
    case 404:
      return 'not_found_error';
    case 413:
      return 'request_too_large';
    case 429:
      return 'rate_limit_error';
    case 503:
    case 529:
      return 'overloaded_error';
    default:
      return status >= 500 ? 'api_error' : 'invalid_request_error';
  }
}

/** Anthropic's error envelope: `{ type: "error", error: { type, message, code, ...details } }`. */
export type AnthropicErrorBody = AnthropicErrorEnvelope;

/**
 * The envelope of an error answered by the Messages routes, and of the `event: error` frame of a stream
 * that already began. The contract's fields (`limitType`, `limit`, `current`, `requested`, `resetsAt`,
 * `available`, `required`) are kept inside `error`, where the Tollgate SDK's restriction check finds them.
 */
export function anthropicErrorBody(error: ApiError): AnthropicErrorBody {
  return {
    type: 'error',
    error: { ...error.details, type: anthropicErrorType(error.status), message: error.message, code: error.code },
  };
}

/** The SSE frame of an error after a stream began (Anthropic's `event: error`). */
export function anthropicErrorFrame(error: ApiError): string {
  return `event: error\ndata: ${JSON.stringify(anthropicErrorBody(error))}\n\n`;
}
