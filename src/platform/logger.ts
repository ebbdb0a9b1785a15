import pino, { type Logger } from 'pino';

/**
 * Paths that may carry a secret; pino replaces their values before a line is written. The HTTP layer logs
 * only these request fields, so a token never reaches a log line through them.
 */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'req.headers["webhook-signature"]',
  'req.headers["x-csrf-token"]',
  'res.headers["set-cookie"]',
  '*.password',
  '*.client_secret',
  '*.clientSecret',
  '*.key',
  '*.token',
  '*.access_token',
  '*.refresh_token',
];

/** The structured JSON logger of the service. */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    { level, redact: { paths: REDACTED_PATHS, censor: '[redacted]' }, base: { service: 'tollgate' } },
    destination as any,
  );
}

export type { Logger };
