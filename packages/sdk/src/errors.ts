/**
 * How a client tells a restriction from a generic failure (contract §7.2): a non-2xx response whose JSON body
 * has an `error` property is a restriction; any other non-2xx response is a generic failure that may carry a
 * `message`. This module is the only place that decides it, so every call of the SDK classifies alike.
 * The restrictions' fields are the gateway's own wire types (@tollgate/wire), imported as types only.
 */
import type { InsufficientCreditsRefusal, SpendingLimitRefusal } from '@tollgate/wire';

/** A spending limit (an app's or a key's) would be exceeded by the request (429, contract §2.2). */
export interface SpendingLimitRestriction extends SpendingLimitRefusal {
  kind: 'spending_limit';
}

/** The wallet holds fewer available credits than the request needs (402, contract §2.2). */
export interface InsufficientCreditsRestriction extends InsufficientCreditsRefusal {
  kind: 'insufficient_credits';
}

/** Any other error object (`UNAUTHENTICATED`, `PERMISSION_DENIED`, a `{ success: false, error: "…" }` text…). */
export interface OtherRestriction {
  kind: 'other';
  code: string;
  message: string;
  type?: string;
}

/** The typed data of a restriction; switch on `kind` to narrow it. */
export type Restriction = SpendingLimitRestriction | InsufficientCreditsRestriction | OtherRestriction;

/** Base of the SDK's errors: the HTTP status of the failed response. */
export abstract class TollgateError extends Error {
  readonly status: number;
  constructor(message: string, status: number) {
    super(message);
    this.status = status;
  }
}

/** A non-2xx response whose JSON body has an `error` property (contract §7.2). */
export class TollgateRestrictionError extends TollgateError {
  override name = 'TollgateRestrictionError';
  /** `SPENDING_LIMIT_EXCEEDED`, `INSUFFICIENT_CREDITS` or another code (`UNKNOWN` when the body named none). */
  readonly code: string;
  /** Code, message and the extra fields, typed by kind. */
  readonly restriction: Restriction;
  /** Every field of the body's `error` object as sent (or `{ message }` when `error` was a string). */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(status: number, restriction: Restriction, details: Record<string, unknown>) {
    super(restriction.message, status);
    this.code = restriction.code;
    this.restriction = restriction;
    this.details = details;
  }
}

/** Any other non-2xx response (or one that could not be read); `serverMessage` is the body's `message`, if any. */
export class TollgateRequestError extends TollgateError {
  override name = 'TollgateRequestError';
  readonly serverMessage: string | undefined;
  /** The parsed JSON body, or the text when it was not JSON. */
  readonly body: unknown;

  constructor(status: number, serverMessage: string | undefined, body: unknown) {
    super(serverMessage ?? (status ? `Request failed with status ${status}` : 'Request failed'), status);
    this.serverMessage = serverMessage;
    this.body = body;
  }
}

function asNumber(value: unknown): number {
  return typeof value === 'number' ? value : Number(value);
}

function restrictionOf(
  errorField: unknown,
  fallbackMessage: string,
): { restriction: Restriction; details: Record<string, unknown> } {
  const details: Record<string, unknown> =
    errorField !== null && typeof errorField === 'object' && !Array.isArray(errorField)
      ? { ...(errorField as Record<string, unknown>) }
      : { message: typeof errorField === 'string' ? errorField : fallbackMessage };
  const code = typeof details.code === 'string' && details.code ? details.code : 'UNKNOWN';
  const message = typeof details.message === 'string' ? details.message : fallbackMessage;
  const type = typeof details.type === 'string' ? details.type : undefined;
  if (code === 'SPENDING_LIMIT_EXCEEDED') {
    const restriction: SpendingLimitRestriction = {
      kind: 'spending_limit',
      code,
      message,
      type: type ?? 'spending_limit_error',
      limitType: typeof details.limitType === 'string' ? details.limitType : 'daily',
      limit: asNumber(details.limit),
      current: asNumber(details.current),
      requested: asNumber(details.requested),
    };
    if (typeof details.resetsAt === 'string') restriction.resetsAt = details.resetsAt;
    return { restriction, details };
  }
  if (code === 'INSUFFICIENT_CREDITS') {
    const restriction: InsufficientCreditsRestriction = {
      kind: 'insufficient_credits',
      code,
      message,
      type: type ?? 'insufficient_credits_error',
      available: asNumber(details.available),
      required: asNumber(details.required),
    };
    if (typeof details.owed === 'number') restriction.owed = details.owed;
    return { restriction, details };
  }
  const other: OtherRestriction = { kind: 'other', code, message };
  if (type) other.type = type;
  return { restriction: other, details };
}

/**
 * Classifies a finished response from its status and body text: null for a 2xx, else the error to throw.
 * Exactly contract §7.2: restriction iff the body parses as a JSON object with an own `error` property.
 */
export function classifyResponse(
  status: number,
  bodyText: string,
): TollgateRestrictionError | TollgateRequestError | null {
  if (status >= 200 && status < 300) return null;
  let body: unknown = bodyText;
  try {
    body = bodyText ? JSON.parse(bodyText) : undefined;
  } catch {}
  const isObject = body !== null && typeof body === 'object' && !Array.isArray(body);
  if (isObject && Object.hasOwn(body as object, 'error')) {
    const fallback = `Request failed with status ${status}`;
    const { restriction, details } = restrictionOf((body as { error: unknown }).error, fallback);
    return new TollgateRestrictionError(status, restriction, details);
  }
  const message =
    isObject && typeof (body as { message?: unknown }).message === 'string'
      ? (body as { message: string }).message
      : undefined;
  return new TollgateRequestError(status, message, body);
}

/** Reads a response and throws its classified error when it is not 2xx; returns the body text otherwise. */
export async function readOrThrow(response: Response): Promise<string> {
  const text = await response.text().catch(() => '');
  const error = classifyResponse(response.status, text);
  if (error) throw error;
  return text;
}

/** True when `error` is a restriction of kind `spending_limit` (narrows `error.restriction`). */
export function isSpendingLimitError(
  error: unknown,
): error is TollgateRestrictionError & { restriction: SpendingLimitRestriction } {
  return error instanceof TollgateRestrictionError && error.restriction.kind === 'spending_limit';
}

/** True when `error` is a restriction of kind `insufficient_credits` (narrows `error.restriction`). */
export function isInsufficientCreditsError(
  error: unknown,
): error is TollgateRestrictionError & { restriction: InsufficientCreditsRestriction } {
  return error instanceof TollgateRestrictionError && error.restriction.kind === 'insufficient_credits';
}
