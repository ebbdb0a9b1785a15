/**
 * The one catalogue of error codes: each has its HTTP status, its OpenAI-style `type` and when it happens,
 * and `retryable: false` when no retry can succeed before the caller or its user acts (see
 * {@link ApiError.headers}). Every error a route answers is an {@link ApiError} built from a code here; a test
 * fails when a code is missing from the README's error table.
 */
export const ERROR_CODES = {
  INVALID_REQUEST: {
    status: 400,
    type: 'invalid_request_error',
    when: 'The request body, query or path is malformed or fails validation; the field, when there is one, is named in `param` (`limits.daily`, `messages[0].role`).',
  },
  UNAUTHENTICATED: {
    status: 401,
    type: 'authentication_error',
    when: 'The bearer token, API key or session is missing, malformed, expired or revoked.',
  },
  UNSUPPORTED_PARAMETER: {
    status: 400,
    type: 'invalid_request_error',
    when: "A request field (named in `param`) would change what the call costs in a way the gateway cannot hold for, or is not on the provider's pass-through allow-list.",
  },
  IMAGE_INPUT_UNSUPPORTED: {
    status: 400,
    type: 'invalid_request_error',
    when: 'A chat sent image parts, or an image edit its images, to a model with no image-token budget in the catalogue.',
  },
  TOO_MANY_IMAGES: {
    status: 400,
    type: 'invalid_request_error',
    when: 'A chat sent more image parts than `MAX_IMAGES_PER_REQUEST`, or an image edit more source images than 16 (or `MAX_IMAGES_PER_REQUEST` if lower).',
  },
  AUDIO_DURATION_UNREADABLE: {
    status: 400,
    type: 'invalid_request_error',
    when: "A transcription's audio duration cannot be read from its header (WAV and MP3 are read).",
  },
  AUDIO_TOO_LONG: {
    status: 400,
    type: 'invalid_request_error',
    when: "A transcription's audio is longer than the model's (or `MAX_TRANSCRIPTION_SECONDS`) cap.",
  },
  INSUFFICIENT_CREDITS: {
    status: 402,
    type: 'insufficient_credits_error',
    when: "The wallet's available credits are below the request's worst-case cost.",
    retryable: false,
  },
  PERMISSION_DENIED: {
    status: 403,
    type: 'permission_error',
    when: 'The caller is authenticated but lacks the scope or permission the route needs, or an API key created with `models` names another model.',
  },
  NOT_FOUND: { status: 404, type: 'not_found_error', when: 'The object does not exist or belongs to someone else.' },
  MODEL_NOT_FOUND: { status: 404, type: 'not_found_error', when: 'The model id is not in the catalogue.' },
  CONFLICT: {
    status: 409,
    type: 'conflict_error',
    when: 'The object already exists (for example an email address already registered), or a Stripe event refers to a payment not credited yet (not recorded; Stripe delivers it again).',
  },
  IDEMPOTENCY_KEY_REUSED: {
    status: 422,
    type: 'invalid_request_error',
    when: 'An `Idempotency-Key` came again with another request than the one it was first used for; the first stands, this one did nothing.',
    retryable: false,
  },
  PAYLOAD_TOO_LARGE: {
    status: 413,
    type: 'invalid_request_error',
    when: 'The request body is larger than the route accepts.',
  },
  HEADERS_TOO_LARGE: {
    status: 431,
    type: 'invalid_request_error',
    when: "The request's headers are larger than the server reads (Node's 16 KiB): too many, or a cookie or token too long.",
  },
  EXPECTATION_FAILED: {
    status: 417,
    type: 'invalid_request_error',
    when: 'The `Expect` header asks for something other than `100-continue`, the one expectation the server meets.',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    type: 'invalid_request_error',
    when: 'The Content-Type is not one the route accepts, or the body is compressed (a Content-Encoding).',
  },
  SPENDING_LIMIT_EXCEEDED: {
    status: 429,
    type: 'spending_limit_error',
    when: "An app's or key's spending limit would be exceeded by the request's worst-case cost.",
    retryable: false,
  },
  RATE_LIMITED: {
    status: 429,
    type: 'rate_limit_error',
    when: 'Too many requests (or tokens) per minute for this key, app or address, or too many failed sign-ins for this account or address; see Retry-After.',
  },
  INTERNAL_ERROR: { status: 500, type: 'api_error', when: 'A fault inside Tollgate; the log has the request id.' },
  UPSTREAM_ERROR: {
    status: 502,
    type: 'upstream_error',
    when: 'The upstream provider failed (502) or timed out (504) before producing output.',
  },
  SERVICE_UNAVAILABLE: {
    status: 503,
    type: 'api_error',
    when: "A dependency is not configured or not reachable (for example no webhook secret), the database's disk is full, or the instance is shutting down and cut the call at the end of its grace period.",
  },
  TOPUPS_DISABLED: {
    status: 403,
    type: 'permission_error',
    when: 'Top-ups are off on this deployment: the operator has not set `STRIPE_SECRET_KEY` and `STRIPE_WEBHOOK_SECRET`.',
  },
  SIGNUP_CLOSED: {
    status: 403,
    type: 'permission_error',
    when: 'Sign-up is closed on this deployment (`SIGNUP=closed`): only the operator creates accounts.',
  },
  PAYMENT_PROVIDER_ERROR: {
    status: 502,
    type: 'upstream_error',
    when: 'Stripe refused or failed a request of a top-up (the message says why); nothing was charged or credited.',
  },
  WEBHOOK_INVALID: {
    status: 400,
    type: 'invalid_request_error',
    when: 'A webhook delivery lacks a header or its headers or body are malformed.',
  },
  WEBHOOK_UNVERIFIED: {
    status: 401,
    type: 'authentication_error',
    when: "A webhook delivery's signature does not verify or its timestamp is more than 5 minutes away.",
  },
  WEBHOOK_URL_REFUSED: {
    status: 400,
    type: 'invalid_request_error',
    when: 'An outbound webhook URL is not https, or its host resolves to a loopback, private or link-local address (unless the operator allows it).',
  },
} as const satisfies Record<string, { status: number; type: string; when: string; retryable?: false }>;

/**
 * The header the official OpenAI and Anthropic SDKs read before retrying: they retry every 429 (and 408,
 * 409, 5xx) with backoff unless it says `false`. A spending limit stays exceeded until its period resets and
 * a wallet stays short until it is topped up, so a retry only repeats the refusal, late.
 */
export const NOT_RETRYABLE_HEADERS: Readonly<Record<string, string>> = { 'x-should-retry': 'false' };

/** A code of the catalogue. */
export type ErrorCode = keyof typeof ERROR_CODES;

/** An error with a stable code; the HTTP layer turns it into the envelope of its route family. */
export class ApiError extends Error {
  override name = 'ApiError';
  readonly code: ErrorCode;
  readonly status: number;
  readonly type: string;
  /** Extra fields that go into the envelope beside code, message and type (contract §2.2). */
  readonly details: Record<string, unknown>;
  /**
   * Response headers to send with the error (for example Retry-After), and {@link NOT_RETRYABLE_HEADERS} for a
   * code the catalogue marks `retryable: false`.
   */
  readonly headers: Record<string, string>;
  /**
   * The deployment setting whose absence this refusal reports (`REPLICATE_API_TOKEN`…): a state of the deployment
   * that the operator chose or has yet to fix, not a fault, so it is logged as one warning naming the setting,
   * without a stack. Never sent to the client beyond what the message says.
   */
  readonly missingSetting: string | undefined;

  constructor(
    code: ErrorCode,
    message: string,
    options: {
      details?: Record<string, unknown>;
      status?: number;
      headers?: Record<string, string>;
      cause?: unknown;
      missingSetting?: string;
    } = {},
  ) {
    super(message, { cause: options.cause });
    this.missingSetting = options.missingSetting;
    this.code = code;
    this.status = options.status ?? ERROR_CODES[code].status;
    this.type = ERROR_CODES[code].type;
    this.details = options.details ?? {};
    this.headers =
      'retryable' in ERROR_CODES[code] ? { ...NOT_RETRYABLE_HEADERS, ...options.headers } : (options.headers ?? {});
  }

  /** The `{ error: { code, message, type, ... } }` envelope of `/api/v1/*` and the reads. */
  toEnvelope(): { error: Record<string, unknown> } {
    return { error: { code: this.code, message: this.message, type: this.type, ...this.details } };
  }
}

/** Shorthands for the errors every feature raises. */
export const errors = {
  invalid: (message: string, details?: Record<string, unknown>) =>
    new ApiError('INVALID_REQUEST', message, { details }),
  /** A request field (`param`, its path) that cannot reach the upstream as sent, refused by name. */
  unsupported: (param: string, message: string) =>
    new ApiError('UNSUPPORTED_PARAMETER', message, { details: { param } }),
  unauthenticated: (message = 'A valid bearer token, API key or session is required.') =>
    new ApiError('UNAUTHENTICATED', message),
  forbidden: (message: string) => new ApiError('PERMISSION_DENIED', message),
  notFound: (what = 'Object') => new ApiError('NOT_FOUND', `${what} not found.`),
  conflict: (message: string) => new ApiError('CONFLICT', message),
  /** What a call still running when a shutdown's grace period ends is answered, or its stream ends with. */
  shuttingDown: () =>
    new ApiError(
      'SERVICE_UNAVAILABLE',
      'This Tollgate instance is shutting down and cut the calls still running at the end of its grace period; what this one produced is charged. Retry it: another instance, or this one restarted, answers.',
      { headers: { 'retry-after': '1' } },
    ),
};
