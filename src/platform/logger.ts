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
  const logger = pino(
    {
      level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      base: { service: 'tollgate' },
      serializers: { err: errorSaidOnce },
    },
    destination as any,
  );
  skipRedactionOfPrimitives(logger);
  return logger;
}

/**
 * pino's error serializer, except that a cause's message the error already says is not said again: pino writes
 * "<message>: <cause's message>", and an error that relays its cause's words (an upstream's refusal) was logged
 * as "The upstream provider answered 500: boom.: The upstream provider answered 500: boom.".
 */
function errorSaidOnce(error: unknown): unknown {
  const serialized = pino.stdSerializers.err(error as Error);
  if (!(error instanceof Error) || typeof serialized !== 'object' || serialized === null) return serialized;
  let message = error.message;
  const seen = new Set<unknown>([error]);
  for (let cause = error.cause; cause instanceof Error && !seen.has(cause); cause = cause.cause) {
    seen.add(cause);
    if (!message.includes(cause.message)) message = `${message}: ${cause.message}`;
  }
  return Object.assign(serialized, { message });
}

/**
 * With a `*.x` path, pino hands every field of every line (bindings and message included) to the wildcard
 * redactor, which parses all the paths again on each call: about 3.5 KB of garbage per string or number, some
 * 30 KB per request line. A string, number or boolean has no property to redact and the redactor would only
 * have returned `JSON.stringify(value)`, so those get exactly that; objects still go through it. Children
 * share the root's stringifiers, so this covers every child (Fastify's request loggers included).
 */
function skipRedactionOfPrimitives(logger: Logger): void {
  const { stringifiersSym, wildcardFirstSym } = pino.symbols as unknown as Record<string, symbol>;
  const stringifiers = (logger as any)[stringifiersSym];
  const redact = stringifiers?.[wildcardFirstSym];
  // Another pino version may keep these elsewhere: then lines are only slower, never less redacted.
  if (typeof redact !== 'function') return;
  stringifiers[wildcardFirstSym] = (value: unknown, stringifySafe?: unknown) => {
    const type = typeof value;
    return type === 'string' || type === 'number' || type === 'boolean'
      ? JSON.stringify(value)
      : redact(value, stringifySafe);
  };
}

export type { Logger };
