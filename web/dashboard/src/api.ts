/** The dashboard's calls to the gateway: the session cookie goes along, and every write echoes the CSRF token. */
import type { ApiErrorEnvelope, KeysErrorEnvelope } from '@tollgate/wire';

let csrfToken = '';

/** Remembers the CSRF token of the current session (from sign-in, sign-up or `GET /api/auth/session`). */
export function setCsrfToken(token: string): void {
  csrfToken = token;
}

/**
 * A failed call: the status and the text to show (from either error envelope), with the code and the request
 * field at fault (`param`) when the envelope gives them, so that a form can show the refusal at its field.
 */
export class ApiFailure extends Error {
  readonly status: number;
  readonly code: string | undefined;
  readonly param: string | undefined;
  constructor(status: number, message: string, code?: string, param?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.param = param;
  }
}

let sessionEnded: (() => void) | null = null;

/**
 * Runs `handler` when a call answers 401 outside `/api/auth/`: the session cookie expired, or the user signed
 * out in another tab. Without it the dashboard stayed on its pages, each showing the API's 401 sentence, with
 * nothing left to do but find "Sign out".
 */
export function onSessionEnded(handler: (() => void) | null): void {
  sessionEnded = handler;
}

/** What a call that never got an answer says, instead of the browser's own "Failed to fetch". */
export const UNREACHABLE = 'Tollgate could not be reached. Check your connection and try again.';

/** Calls the gateway; resolves with the parsed JSON, or throws {@link ApiFailure}. */
export async function api<T = any>(method: string, path: string, body?: unknown): Promise<T> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (method !== 'GET') headers['x-csrf-token'] = csrfToken;
  let response: Response;
  try {
    response = await fetch(path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'same-origin',
    });
  } catch {
    // fetch rejects only when no answer came (offline, the server down, the connection cut).
    throw new ApiFailure(0, UNREACHABLE);
  }
  if (response.status === 401 && !path.startsWith('/api/auth/')) sessionEnded?.();
  const text = await response.text();
  let parsed: any;
  try {
    parsed = text ? JSON.parse(text) : undefined;
  } catch {}
  if (!response.ok) {
    const error = (parsed as Partial<ApiErrorEnvelope | KeysErrorEnvelope> | undefined)?.error;
    const message =
      typeof error === 'string'
        ? error
        : (error?.message ?? parsed?.message ?? `The gateway answered ${response.status}.`);
    const object = typeof error === 'object' ? error : undefined;
    throw new ApiFailure(response.status, message, object?.code, object?.param);
  }
  return parsed as T;
}
