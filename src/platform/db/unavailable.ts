/**
 * Telling "the database cannot be reached" from every other error, so that a client hears a 503 that says so
 * (and may retry) instead of a 500 "Internal error" that blames Tollgate. The pool marks the errors of its
 * connections (`markUnavailable` in connect.ts); the HTTP layer asks {@link isDatabaseUnavailable}.
 */

const UNAVAILABLE = Symbol('tollgate.databaseUnavailable');

/** PostgreSQL's SQLSTATEs for a connection that failed or ended: class 08, shutdowns, too many connections. */
const CONNECTION_STATES = /^(08[0-9A-Z]{3}|57P0[123]|53300)$/;

/** pg's own sentences for a connection that ended under a query, or was unusable. */
const CONNECTION_MESSAGES =
  /Connection terminated|not queryable|Query read timeout|timeout exceeded when trying to connect/;

/**
 * Marks `error` as a lost or refused connection when it is one: an error of the connection itself (a socket
 * error such as ECONNRESET or ECONNREFUSED, pg's "Connection terminated unexpectedly"), or PostgreSQL saying
 * it is shutting down or refusing connections. `connecting` marks every error: none of a connection attempt
 * is the query's own. A query's own error (a constraint, a syntax error) is left as it is.
 */
export function markUnavailable(error: unknown, connecting = false): unknown {
  if (typeof error !== 'object' || error === null) return error;
  const { code, severity, message } = error as { code?: unknown; severity?: unknown; message?: unknown };
  const lost =
    connecting ||
    (typeof severity === 'string'
      ? typeof code === 'string' && CONNECTION_STATES.test(code)
      : (typeof code === 'string' && /^E[A-Z]+$/.test(code)) ||
        (typeof message === 'string' && CONNECTION_MESSAGES.test(message)));
  if (lost) Object.defineProperty(error, UNAVAILABLE, { value: true });
  return error;
}

/** True when `error` (or its cause) was marked by {@link markUnavailable}. */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; typeof e === 'object' && e !== null && depth < 3; depth++) {
    if (UNAVAILABLE in e) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}
