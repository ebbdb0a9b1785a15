import Fastify, {
  LogController,
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  type RawServerDefault,
} from 'fastify';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import cookie from '@fastify/cookie';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { ApiError, ERROR_CODES, type ErrorCode } from '../errors.ts';
import type { AppContext, ServerContext } from '../context.ts';
import { matchesAnySecret } from '../crypto.ts';
import { isDatabaseFull, isDatabaseUnavailable } from '../db/unavailable.ts';
import { refuseNulCharacters } from './nul-characters.ts';
import { forbiddenKeyRefusal } from './json-poisoning.ts';
import { MAX_JSON_NESTING, nestsDeeperThan, tooDeeplyNested } from './json-nesting.ts';
import { refuseNonJsonBody, registerNonJsonParsers } from './json-only-bodies.ts';
import { patternRule } from './pattern-rules.ts';
import { jsonTextOf } from './json-text-encoding.ts';
import { authenticate, bearerChallenge, bearerCredential, requireScope, type Principal } from './principal.ts';
import { SECURITY_SCHEMES, transformDocument, transformRoute, type DocumentedResponse } from './openapi.ts';
import type { ErrorEnvelope, ErrorRenderer } from './error-envelope.ts';
import { sendErrorPage } from './error-page.ts';

// Not a value `import … from 'node:http'`: Node's ES module facade of a built-in reads every export, and
// node:http's WebSocket getters then load Node's own copy of undici (~5 MB resident, never used; see
// events/send.ts). `getBuiltinModule` hands over the CommonJS module without a facade.
const { maxHeaderSize, STATUS_CODES } = process.getBuiltinModule('node:http');

export type { ErrorEnvelope, ErrorRenderer };

declare module 'fastify' {
  interface FastifyContextConfig {
    envelope?: ErrorEnvelope;
    /** The route's own error renderer (an inbound protocol's envelope); see {@link ErrorRenderer}. */
    errorRenderer?: ErrorRenderer;
    /** Scopes of which the caller needs one; `[]` means any authenticated caller. Unset: no authentication. */
    auth?: readonly string[];
    /** Operator route: only a `TOLLGATE_ADMIN_TOKEN` is accepted, never a user credential. */
    admin?: boolean;
    /** Also accept the credential in `x-api-key` (the Anthropic Messages routes, whose clients send it there). */
    apiKeyHeader?: boolean;
    /**
     * Answers the OpenAPI document gives in place of (or beside) the schema's `response`, for what Fastify does
     * not serialise: a stream of events, plain text, audio, a redirect, an HTML page (see openapi.ts).
     */
    documentedResponses?: Record<string, DocumentedResponse>;
    /**
     * The route places a billing hold, so the wallet (402) and the spending limits (429) may refuse it: the
     * OpenAPI document gives those two answers with the contract's fields, as it does for a route that lists them.
     */
    billed?: boolean;
  }
}

/** The Fastify instance with TypeBox types, as every feature receives it. */
export type App = FastifyInstance<
  RawServerDefault,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** The `Retry-After` of a request refused for a full database disk: freeing space takes an operator's while. */
export const DATABASE_FULL_RETRY_AFTER_SECONDS = 30;

/** The two levels {@link logFailure} writes at: Fastify's request logger, or the service's. */
export interface FailureLog {
  warn(fields: Record<string, unknown>, message: string): void;
  error(fields: Record<string, unknown>, message: string): void;
}

/**
 * The log line of a request that failed on Tollgate's side (`status`, the one it is answered with): the error
 * with its stack under `message`, or for a full database disk, which is the operator's to fix and no fault of
 * Tollgate's, one warning naming the route (a pattern, never a path with ids) and no stack (the database logs
 * once when it fills up and once when it has room again: platform/db/unavailable.ts); a feature the deployment has
 * not set up (an {@link ApiError} with `missingSetting`) is one warning naming the setting. A client's mistake (4xx)
 * logs nothing here. Every route follows it, oidc-provider's included (oauth/provider.ts).
 */
export function logFailure(
  log: FailureLog,
  error: unknown,
  failure: { status: number; route: string | undefined },
  message = 'request failed',
): void {
  if (isDatabaseFull(error))
    log.warn(
      { route: failure.route, reason: (error as Error).message },
      'request refused (503): the database disk is full',
    );
  // A database away is not a fault of Tollgate's code: its stack says nothing, and every request in an outage
  // would log one. One warning line a request, with the driver's reason, as for a full disk.
  else if (isDatabaseUnavailable(error))
    log.warn(
      { route: failure.route, reason: (error as Error).message },
      'request refused (503): the database is not reachable',
    );
  else if (error instanceof ApiError && error.missingSetting)
    log.warn(
      { route: failure.route, setting: error.missingSetting },
      `request refused (${failure.status}): ${error.missingSetting} is not set`,
    );
  else if (failure.status >= 500) log.error({ err: error }, message);
}

/** {@link logFailure} for a Fastify request. */
function logRequestFailure(request: FastifyRequest, error: unknown, apiError: ApiError): void {
  logFailure(request.log, error, { status: apiError.status, route: request.routeOptions.url });
}

/**
 * The field a schema refusal is about, as the other refusals name theirs (`param`: `limits.daily`,
 * `messages[0].role`): the first failure's path in the body or query string, and the property it misses. Clients
 * (the dashboard's forms, an SDK) then point at the field without reading the sentence. Absent for a failure of
 * the whole body, or of headers and path parameters.
 */
function validationParam(validation: unknown, context: string | undefined): string | undefined {
  if (context !== 'body' && context !== 'querystring') return undefined;
  const first = (Array.isArray(validation) ? validation[0] : undefined) as
    { instancePath?: unknown; params?: { missingProperty?: unknown } } | undefined;
  const path = String(first?.instancePath ?? '')
    .split('/')
    .filter(Boolean)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'));
  const missing = first?.params?.missingProperty;
  if (typeof missing === 'string' && missing) path.push(missing.replace(/^\./, ''));
  return path.length === 0
    ? undefined
    : path.map((segment, i) => (/^\d+$/.test(segment) ? `[${segment}]` : i === 0 ? segment : `.${segment}`)).join('');
}

/**
 * A value outside a list of choices (a union of constants, such as a scope, or an enum), said as the list: the
 * validator reports one "must be equal to constant" per choice, then "must match a schema in anyOf" (or "must be
 * equal to one of the allowed values"), which named nothing a person could pick. Null for any other failure.
 */
function choiceReason(validation: unknown): string | null {
  if (!Array.isArray(validation) || validation.length === 0) return null;
  const errors = validation as Array<{
    keyword?: string;
    instancePath?: string;
    params?: { allowedValue?: unknown; allowedValues?: unknown };
  }>;
  const path = errors[0]!.instancePath;
  const oneOf = (values: unknown[]) =>
    `${String(path ?? '').replace(/^\//, '')} must be one of ${values.map((value) => JSON.stringify(value)).join(', ')}`;
  // An enum says "must be equal to one of the allowed values" without them.
  const allowed = errors[0]!.params?.allowedValues;
  if (errors[0]!.keyword === 'enum' && Array.isArray(allowed)) return oneOf(allowed);
  if (!errors.every((e) => e.instancePath === path && (e.keyword === 'const' || e.keyword === 'anyOf'))) return null;
  const choices = errors.filter((e) => e.keyword === 'const').map((e) => e.params?.allowedValue);
  return choices.length === 0 ? null : oneOf(choices);
}

/**
 * A value that fits none of a field's shapes, said as the rule of the shape it has (a prompt that is an empty list:
 * "prompt must NOT have fewer than 1 items") and, when the field also takes null (a limit that may be removed),
 * "or null": the validator adds each other shape's "must be <type>" (or "must be null") and "must match a schema in
 * anyOf", sentences that only hide the one that helps. Null for any other failure.
 */
function shapeReason(validation: unknown): string | null {
  if (!Array.isArray(validation) || validation.length < 3) return null;
  const errors = validation as Array<{ keyword?: string; instancePath?: string; message?: string; params?: any }>;
  const path = errors[0]!.instancePath;
  if (!errors.every((e) => e.instancePath === path) || errors.at(-1)!.keyword !== 'anyOf') return null;
  const rules = errors.filter((e) => e.keyword !== 'type' && e.keyword !== 'anyOf').map((e) => e.message);
  if (rules.length === 0) return null;
  const orNull = errors.some((e) => e.keyword === 'type' && e.params?.type === 'null') ? ', or null' : '';
  return `${String(path ?? '').replace(/^\//, '')} ${rules.join(', ')}${orNull}`;
}

/**
 * An object of a field that also takes another shape (`stream_options`: an object or null) whose member is wrong,
 * said as that member's rule ("stream_options.include_usage must be true or false"): the validator adds the other
 * shapes' "must be null" and "must match a schema in anyOf", which hide the member at fault. The shape the value
 * has is the branch whose errors lie inside it. Null for any other failure.
 */
function memberReason(validation: unknown): string | null {
  if (!Array.isArray(validation) || validation.length < 2) return null;
  const errors = validation as Array<{ keyword?: string; instancePath?: string; message?: string; params?: any }>;
  const union = errors.at(-1)!;
  if (union.keyword !== 'anyOf') return null;
  const inside = errors.find((e) => String(e.instancePath ?? '').startsWith(`${union.instancePath ?? ''}/`));
  if (!inside) return null;
  const rule =
    inside.keyword === 'type' && inside.params?.type === 'boolean'
      ? 'must be true or false'
      : ((inside.keyword === 'pattern' ? patternRule(inside.params?.pattern) : undefined) ?? inside.message);
  return `${dottedPath(String(inside.instancePath ?? ''))} ${rule}`;
}

/** A JSON pointer (`/messages/0/content`) as a person reads it (`messages[0].content`). */
function dottedPath(pointer: string): string {
  return pointer
    .split('/')
    .filter(Boolean)
    .map((segment) => segment.replaceAll('~1', '/').replaceAll('~0', '~'))
    .map((segment, i) => (/^\d+$/.test(segment) ? `[${segment}]` : i === 0 ? segment : `.${segment}`))
    .join('');
}

/** A value that fails a pattern its owner described (pattern-rules.ts), said in those words. Null otherwise. */
function patternReason(validation: unknown): string | null {
  if (!Array.isArray(validation) || validation.length === 0) return null;
  const first = validation[0] as { keyword?: string; instancePath?: string; params?: { pattern?: unknown } };
  const rule = first.keyword === 'pattern' ? patternRule(first.params?.pattern) : undefined;
  return rule ? `${String(first.instancePath ?? '').replace(/^\//, '')} ${rule}` : null;
}

/** Maps any thrown value to an ApiError; client mistakes never become a 500. */
export function toApiError(error: unknown): ApiError {
  if (error instanceof ApiError) return error;
  const fastifyError = error as FastifyError & { validation?: unknown; validationContext?: string };
  if (fastifyError?.validation) {
    const param = validationParam(fastifyError.validation, fastifyError.validationContext);
    const reason =
      patternReason(fastifyError.validation) ??
      choiceReason(fastifyError.validation) ??
      shapeReason(fastifyError.validation) ??
      memberReason(fastifyError.validation) ??
      fastifyError.message;
    return new ApiError(
      'INVALID_REQUEST',
      `Invalid ${fastifyError.validationContext ?? 'request'}: ${reason.replace(/^(body|querystring|params|headers)(\/| +)?/, '')}`.trim(),
      param ? { details: { param } } : {},
    );
  }
  switch (fastifyError?.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new ApiError('PAYLOAD_TOO_LARGE', 'The request body is too large.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new ApiError('UNSUPPORTED_MEDIA_TYPE', `Unsupported Content-Type; send application/json.`);
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return new ApiError('INVALID_REQUEST', 'The JSON body is empty.');
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return new ApiError('INVALID_REQUEST', 'The body is not valid JSON.');
  }
  const status = fastifyError?.statusCode;
  if (status && status >= 400 && status < 500) {
    const code: ErrorCode =
      status === 401
        ? 'UNAUTHENTICATED'
        : status === 403
          ? 'PERMISSION_DENIED'
          : status === 404
            ? 'NOT_FOUND'
            : status === 413
              ? 'PAYLOAD_TOO_LARGE'
              : status === 415
                ? 'UNSUPPORTED_MEDIA_TYPE'
                : status === 429
                  ? 'RATE_LIMITED'
                  : 'INVALID_REQUEST';
    return new ApiError(code, fastifyError.message || 'Bad request.', { status });
  }
  // A full disk: nothing of the request is wrong, and it succeeds once the operator frees space. Every write
  // of it was in a transaction SQLite (or PostgreSQL) rolled back, so nothing is half-written.
  if (isDatabaseFull(error))
    return new ApiError(
      'SERVICE_UNAVAILABLE',
      "Tollgate could not save this request: its database's disk is full. Nothing was charged; retry once the operator has freed disk space.",
      { cause: error, headers: { 'retry-after': String(DATABASE_FULL_RETRY_AFTER_SECONDS) } },
    );
  // Not a fault of Tollgate's but a dependency away: said so, and worth a retry.
  if (isDatabaseUnavailable(error))
    return new ApiError('SERVICE_UNAVAILABLE', 'The database is not reachable; retry shortly.', {
      cause: error,
      headers: { 'retry-after': '1' },
    });
  return new ApiError('INTERNAL_ERROR', 'Internal error.', { cause: error });
}

/** The RFC 6749 §5.2 error code an OAuth client reads for each of our codes. */
function oauthErrorCode(error: ApiError): string {
  switch (error.code) {
    case 'UNAUTHENTICATED':
      return 'invalid_client';
    case 'RATE_LIMITED':
    case 'SERVICE_UNAVAILABLE':
      return 'temporarily_unavailable';
    case 'INTERNAL_ERROR':
      return 'server_error';
    default:
      return 'invalid_request';
  }
}

/** An abort error: undici's when a body is destroyed, a stream's premature close, an AbortSignal's. */
function isAbort(error: unknown): boolean {
  const { code, name } = (error ?? {}) as { code?: unknown; name?: unknown };
  return code === 'UND_ERR_ABORTED' || code === 'ERR_STREAM_PREMATURE_CLOSE' || name === 'AbortError';
}

/** Writes an error in the envelope of the route's family, or with the route's own renderer. */
export function sendError(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  const envelope = request.routeOptions.config?.envelope ?? 'api';
  reply.code(error.status).headers(error.headers);
  const render = request.routeOptions.config?.errorRenderer;
  if (render) return reply.send(render(error));
  if (envelope === 'page') return sendErrorPage(request, reply, error);
  if (envelope === 'oauth')
    return reply
      .header('cache-control', 'no-store')
      .send({ error: oauthErrorCode(error), error_description: error.message });
  return reply.send(envelope === 'keys' ? { success: false, error: error.message } : error.toEnvelope());
}

/**
 * `TRUST_PROXY` as Fastify's `trustProxy` takes it: false (the peer is the client), a hop count, or the
 * list of proxy addresses/CIDRs whose `X-Forwarded-For` entries are believed. Never `true`, which would
 * believe whatever address a client writes into the header.
 */
export function trustProxyOption(value: string): false | string[] | ((address: string, hop: number) => boolean) {
  if (value === 'false') return false;
  if (/^\d+$/.test(value)) {
    // What Fastify does with a number (its types only miss it): the nearest `hops` peers are proxies.
    const hops = Number(value);
    return hops === 0 ? false : (_address, hop) => hop < hops;
  }
  return value
    .split(',')
    .map((entry) => entry.trim())
    .filter(Boolean);
}

/** The body limit of a route: AI calls get `BODY_LIMIT_API_BYTES`, every other route the default. */
function bodyLimitOf(url: string, config: AppContext['config']): number {
  return url.startsWith('/api/v1/') ? config.BODY_LIMIT_API_BYTES : config.BODY_LIMIT_DEFAULT_BYTES;
}

/** The authenticated principal of a route that declared `config.auth`. */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw new ApiError('UNAUTHENTICATED', 'Authentication required.');
  return request.principal;
}

/**
 * Builds the Fastify server every feature registers on: TypeBox schemas, the OpenAPI document at
 * `/api/openapi.json` and `/docs`, cookies, form bodies, the error envelopes and bearer authentication.
 */
export async function createServer(ctx: ServerContext): Promise<App> {
  const app = Fastify({
    loggerInstance: ctx.log,
    // One line per request is written by the onResponse hook below, with the caller's ids and no headers.
    logController: new LogController({ disableRequestLogging: true }),
    return503OnClosing: true,
    // Routes get their family's limit (onRoute below); this one covers what matches no route.
    bodyLimit: ctx.config.BODY_LIMIT_DEFAULT_BYTES,
    trustProxy: trustProxyOption(ctx.config.TRUST_PROXY),
    // Slow clients: Node cuts (408, connection closed) a request whose headers took more than
    // HTTP_HEADERS_TIMEOUT_SECONDS or whose whole body took more than the longest allowance, an upload's;
    // the onRequest hook below holds every other body to HTTP_REQUEST_TIMEOUT_SECONDS. All cover only
    // receiving the request: an answer, an hour-long stream included, is never cut by them. No socket
    // inactivity timeout, which would cut a stream waiting on a slow model.
    requestTimeout: Math.max(ctx.config.HTTP_REQUEST_TIMEOUT_SECONDS, ctx.config.HTTP_UPLOAD_TIMEOUT_SECONDS) * 1000,
    keepAliveTimeout: ctx.config.HTTP_KEEPALIVE_TIMEOUT_SECONDS * 1000,
    connectionTimeout: 0,
    http: {
      // Checked in the onRequest hook below instead, to answer in the family's envelope.
      requireHostHeader: false,
      headersTimeout: Math.min(ctx.config.HTTP_HEADERS_TIMEOUT_SECONDS, ctx.config.HTTP_REQUEST_TIMEOUT_SECONDS) * 1000,
      // How often Node looks for requests past those timeouts (its default, 30 s, would let a slow body
      // live that much longer).
      connectionsCheckingInterval: Math.min(1000, ctx.config.HTTP_HEADERS_TIMEOUT_SECONDS * 500),
    },
    genReqId: (req) =>
      typeof req.headers['x-request-id'] === 'string' && /^[\w.-]{1,64}$/.test(req.headers['x-request-id'])
        ? req.headers['x-request-id']
        : crypto.randomUUID(),
    ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
    routerOptions: { ignoreTrailingSlash: false, maxParamLength: MAX_PARAM_LENGTH },
    // A request Node's HTTP parser refuses never reaches the router: in the family's envelope all the same.
    clientErrorHandler: (error, socket) => answerClientError(ctx, error as Error, socket),
    // A URL the router cannot take apart is refused before any route or hook: in the family's envelope all the same.
    frameworkErrors: (error, request, anyReply) => {
      const reply = anyReply as unknown as FastifyReply;
      const apiError =
        error.code === 'FST_ERR_BAD_URL'
          ? new ApiError('INVALID_REQUEST', 'The URL is not valid: a percent-encoded part of its path is not UTF-8.')
          : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
            ? new ApiError(
                'INVALID_REQUEST',
                `A part of the URL's path is longer than the ${MAX_PARAM_LENGTH} characters an id or name here can have.`,
              )
            : toApiError(error);
      logRequestFailure(request, error, apiError);
      setSecureHeaders(ctx.config, request, reply);
      reply.code(apiError.status).headers(apiError.headers);
      if (envelopeOfPath(ctx, request.url) === 'page') return sendErrorPage(request, reply, apiError);
      return reply.send(errorBodyByPath(ctx, request.url, apiError));
    },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // An empty body labelled JSON is no body at all for a route that takes none: clients that label every request
  // (the replicate client's cancel, fetch wrappers) would otherwise get a 400 on a DELETE or an action POST.
  // Any other JSON goes to Fastify's own parser, poisoning checks included; a route with a body schema still
  // refuses an empty one. A body nested past MAX_JSON_NESTING is refused first, on every route (json-nesting.ts).
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    // Nothing is decompressed: a compressed body is refused as such, not parsed into "not valid JSON".
    const encoding = request.headers['content-encoding'];
    if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity')
      return done(
        new ApiError(
          'UNSUPPORTED_MEDIA_TYPE',
          'A compressed body (Content-Encoding) is not accepted; send the JSON uncompressed.',
        ),
        undefined,
      );
    if (body === '' && !request.routeOptions.schema?.body) return done(null, undefined);
    const text = jsonTextOf(body as string);
    if (text instanceof ApiError) return done(text, undefined);
    if (nestsDeeperThan(text, MAX_JSON_NESTING)) return done(tooDeeplyNested(), undefined);
    // The parser says only "not valid JSON" for a `__proto__` key it refuses: say which key instead.
    parseJson(request, text, (error, value) => done(error && (forbiddenKeyRefusal(text) ?? error), value));
  });
  registerNonJsonParsers(app);
  await app.register(cookie, { secret: ctx.secrets.cookieSecret, hook: 'onRequest' });
  await app.register(swagger, {
    openapi: {
      info: {
        title: 'Tollgate API',
        version: '0.1.0',
        description: 'OpenAI-compatible AI gateway with credits, OAuth apps and spending limits.',
        // The LICENSE at the root (package.json's "license"), so a client generated from the document says it too.
        license: { name: 'MIT', url: 'https://opensource.org/licenses/MIT' },
      },
      servers: [{ url: ctx.config.PUBLIC_BASE_URL }],
      components: {
        securitySchemes: {
          ...SECURITY_SCHEMES,
          ...(ctx.scopedSecurityScheme && { [ctx.scopedSecurityScheme.name]: ctx.scopedSecurityScheme.scheme }),
        },
      },
      // Every error code, so that clients can generate a complete error type.
      'x-error-codes': Object.fromEntries(
        Object.entries(ERROR_CODES).map(([code, v]) => [code, { status: v.status, type: v.type, description: v.when }]),
      ),
    } as any,
    // Security, client errors and operationIds are derived centrally (openapi.ts), for every route alike.
    transform: ((route: Parameters<typeof transformRoute>[0]) =>
      transformRoute(route, ctx.scopedSecurityScheme?.name)) as any,
    transformObject: ((document: Parameters<typeof transformDocument>[0]) =>
      transformDocument(document, ctx.config.PUBLIC_BASE_URL)) as any,
  });
  // Security invariant: Swagger UI runs on the dashboard's origin, where a script could read the session's
  // CSRF token, so it gets a policy as strict as the dashboard's (styles inline apart: it sets them itself).
  // Read on each answer: with PORT=0 the public address is only known once the server listens.
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    transformStaticCSP: () =>
      `default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; font-src 'self' data:; connect-src 'self' ${new URL(ctx.config.PUBLIC_BASE_URL).origin}; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'`,
  });
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  app.addHook('onRequest', async (request, reply) => {
    setSecureHeaders(ctx.config, request, reply);
    // HTTP/1.1 requires a Host header (RFC 9112 §3.2). Node's own check (requireHostHeader, turned off above)
    // answered a bare 400 without a body; this one answers in the family's envelope.
    if (request.headers.host === undefined && request.raw.httpVersion === '1.1')
      throw new ApiError(
        'INVALID_REQUEST',
        'An HTTP/1.1 request needs a Host header naming this server (Host: api.example.com).',
      );
  });

  // One structured line per request: ids of the caller, never a header value, a body or a query string.
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    const seconds = reply.elapsedTime / 1000;
    ctx.metrics.httpRequests.inc({ route, method: request.method, status: String(reply.statusCode) });
    ctx.metrics.httpDuration.observe({ route, method: request.method }, seconds);
    const principal = request.principal;
    // request.log is Fastify's child logger: it already carries `reqId`.
    request.log.info(
      {
        method: request.method,
        route,
        path: request.url.split('?')[0],
        status: reply.statusCode,
        ms: Math.round(reply.elapsedTime * 100) / 100,
        userId: principal?.userId,
        appId: principal?.appId ?? undefined,
        keyId: principal?.keyId ?? undefined,
      },
      'request',
    );
  });

  // A body that is not an upload (multipart) must arrive within HTTP_REQUEST_TIMEOUT_SECONDS, as Node's
  // own timeout would cut it: a bare 408 and the connection closed. Checked once, when the time is up.
  const requestTimeoutMs = ctx.config.HTTP_REQUEST_TIMEOUT_SECONDS * 1000;
  if (requestTimeoutMs < ctx.config.HTTP_UPLOAD_TIMEOUT_SECONDS * 1000) {
    app.addHook('onRequest', (request, reply, done) => {
      const hasBody =
        request.headers['content-length'] !== undefined || request.headers['transfer-encoding'] !== undefined;
      if (!hasBody || request.raw.complete || request.headers['content-type']?.toLowerCase().startsWith('multipart/'))
        return done();
      const timer = setTimeout(() => {
        if (request.raw.complete || reply.raw.headersSent) return;
        request.log.info({ route: request.routeOptions.url }, 'request body too slow: cut');
        request.raw.socket?.end('HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        request.raw.socket?.destroySoon();
      }, requestTimeoutMs);
      timer.unref();
      reply.raw.once('close', () => clearTimeout(timer));
      done();
    });
  }

  // Body limits per route family, unless a route set its own (the webhook, the OAuth endpoints).
  app.addHook('onRoute', (route) => {
    route.bodyLimit ??= bodyLimitOf(route.url, ctx.config);
  });

  // Invariant: every route under /api/admin is an operator route, so none can be added without the check.
  app.addHook('onRoute', (route) => {
    if (route.url.startsWith('/api/admin') && route.config?.admin !== true) {
      throw new Error(`${route.method} ${route.url} is under /api/admin but lacks config.admin`);
    }
  });

  // Who is calling is settled before the body is validated (preValidation, not preHandler): a caller without a
  // valid credential gets 401 whatever it sent, and learns nothing from the validator about the route's body.
  app.addHook('preValidation', async (request) => {
    // Read once: Fastify builds a new `routeOptions` object on every access.
    const config = request.routeOptions.config;
    if (config?.admin) {
      // Read as the user routes read theirs (principal.ts): Bearer in any case, and a 401 with its challenge.
      const header = request.headers.authorization;
      const token = header === undefined ? null : bearerCredential(header);
      if (token === null || !matchesAnySecret(token, ctx.secrets.adminTokens)) {
        const sent = header === undefined ? 'none' : token === null ? 'malformed' : 'credential';
        throw bearerChallenge(
          new ApiError('UNAUTHENTICATED', 'An operator token (TOLLGATE_ADMIN_TOKEN) is required.'),
          sent,
        );
      }
    } else if (config?.auth) {
      const principal = await authenticate(request, ctx.auth, { apiKeyHeader: config.apiKeyHeader });
      requireScope(principal, config.auth, ctx.auth.keyPermissions);
      request.principal = principal;
    }
    // Once the caller is known: a JSON route's body sent as text or a form (json-only-bodies.ts) is a 415.
    refuseNonJsonBody(request);
  });
  // After authentication, so a caller without a credential still gets its 401 first.
  // A callback hook, not an async one: it runs on every call, and an async hook costs a promise each time.
  app.addHook('preValidation', (request, _reply, done) => {
    try {
      refuseNulCharacters(request);
    } catch (error) {
      return done(error as Error);
    }
    done();
  });

  app.setErrorHandler((error, request, reply) => {
    // The client left before the answer's first byte: a relayed body (speech's audio) is then destroyed with the
    // connection and reaches here as an abort. Nobody is left to answer and nothing here failed.
    if (reply.raw.destroyed && !reply.raw.headersSent && isAbort(error)) {
      request.log.info({ route: request.routeOptions.url }, 'client went away before the answer began');
      return reply.hijack();
    }
    let apiError = toApiError(error);
    if ((error as FastifyError)?.code === 'FST_ERR_CTP_BODY_TOO_LARGE') {
      const limit = request.routeOptions.bodyLimit ?? ctx.config.BODY_LIMIT_DEFAULT_BYTES;
      apiError = new ApiError(
        'PAYLOAD_TOO_LARGE',
        `The request body is larger than the ${limit} bytes this route accepts.`,
        { details: { limit } },
      );
    }
    logRequestFailure(request, error, apiError);
    for (const observe of ctx.errorObservers) observe(apiError);
    return sendError(request, reply, apiError);
  });
  app.setNotFoundHandler((request, reply) => {
    const error = new ApiError('NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}.`);
    reply.code(404);
    if (envelopeOfPath(ctx, request.url) === 'page') return sendErrorPage(request, reply, error);
    return errorBodyByPath(ctx, request.url, error);
  });
  app.server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) =>
    answerUnmetExpectation(ctx, request, response),
  );
  return app as unknown as App;
}

/**
 * Answers a request whose `Expect` is not `100-continue` (RFC 9110 §10.1.1), which Node hands to no route: a 417
 * in the envelope of the request's path, saying what to send, where Node alone answers an empty 417 that a
 * client cannot tell from any other failure. The body, if one follows, is not read; the connection closes.
 */
function answerUnmetExpectation(ctx: ServerContext, request: IncomingMessage, response: ServerResponse): void {
  const asked = String(request.headers.expect ?? '').slice(0, 100);
  const error = new ApiError(
    'EXPECTATION_FAILED',
    `The Expect header asks for ${JSON.stringify(asked)}, which this server does not offer: send the request without it (Expect: 100-continue is the one it meets).`,
  );
  const body = JSON.stringify(errorBodyByPath(ctx, request.url ?? '/', error));
  response.writeHead(error.status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(body),
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
    connection: 'close',
  });
  response.end(body);
}

/** The headers every answer carries: its request id and secure defaults. */
function setSecureHeaders(config: AppContext['config'], request: FastifyRequest, reply: FastifyReply): void {
  reply.header('x-request-id', request.id);
  // Secure defaults for every answer; HTML pages set their own CSP where they need more.
  reply.header('x-content-type-options', 'nosniff');
  reply.header('referrer-policy', 'no-referrer');
  reply.header('x-frame-options', 'DENY');
  // Framing is refused by CSP too (X-Frame-Options is its legacy form); pages replace it with a full policy.
  reply.header('content-security-policy', "frame-ancestors 'none'");
  reply.header('cross-origin-opener-policy', 'same-origin');
  // No API answer is for a cache to keep: they are one user's, and some carry secrets (a client secret at app
  // registration, API key values), which a browser's disk cache or a shared cache would otherwise hold. A
  // route may still say otherwise (an event stream's no-cache).
  if (request.url.startsWith('/api/')) reply.header('cache-control', 'no-store');
  if (config.PUBLIC_BASE_URL.startsWith('https://')) reply.header('strict-transport-security', 'max-age=31536000');
}

/** Longest path parameter the router takes (Fastify's default); longer is a 400. No id or name comes near it. */
const MAX_PARAM_LENGTH = 100;

/**
 * Answers a request Node's HTTP parser refused (Fastify's `clientErrorHandler`), which no route or hook sees:
 * headers past Node's limit are a 431 HEADERS_TOO_LARGE, anything else it cannot read (a request line with raw
 * bytes that are not ASCII, bytes that are not HTTP) a 400 INVALID_REQUEST, each in the envelope of the path the
 * request line names, then the connection is closed, as Fastify's own handler does. A request too slow to arrive
 * gets the bare 408 of the server's own cut (see the onRequest hook).
 */
function answerClientError(
  ctx: ServerContext,
  error: Error & { code?: string; reason?: string; rawPacket?: unknown },
  socket: Duplex,
) {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  let head: string;
  if (error.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    head = 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';
  } else {
    const apiError =
      error.code === 'HPE_HEADER_OVERFLOW'
        ? new ApiError(
            'HEADERS_TOO_LARGE',
            `The request headers are larger than the ${maxHeaderSize} bytes the server reads; send fewer or shorter ones (a cookie or token too long?).`,
          )
        : new ApiError(
            'INVALID_REQUEST',
            `The request is not valid HTTP/1.1 (${error.reason ?? error.code ?? 'unreadable'}): ${unreadableRequestHint(error.code)}.`,
          );
    const packet = Buffer.isBuffer(error.rawPacket) ? error.rawPacket.toString('latin1', 0, 2048) : '';
    const path = /^[A-Z]+ (\/\S*)/.exec(packet)?.[1] ?? '/';
    const body = JSON.stringify(errorBodyByPath(ctx, path, apiError));
    head =
      `HTTP/1.1 ${apiError.status} ${STATUS_CODES[apiError.status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n${body}`;
  }
  if (socket.writable) socket.write(head);
  socket.destroy(error);
}

/** What to send instead of a request Node's parser refused with `code` (llhttp's HPE_* codes). */
function unreadableRequestHint(code: string | undefined): string {
  if (/CONTENT_LENGTH|TRANSFER_ENCODING|CHUNK/.test(code ?? ''))
    return 'send the body with one Content-Length that matches it, or with Transfer-Encoding: chunked alone';
  if (code === 'HPE_PAUSED_H2_UPGRADE') return 'this server speaks HTTP/1.1, not HTTP/2 without TLS';
  if (/URL|HEADER|CONSTANT/.test(code ?? ''))
    return 'its URL and header values must be ASCII, other characters percent-encoded (é as %C3%A9)';
  return 'send a request line such as "GET /api/v1/models HTTP/1.1", then headers, each line ending in CRLF';
}

/** The envelope of the family a path belongs to, for an error answered before any route was chosen. */
function envelopeOfPath(ctx: ServerContext, url: string): ErrorEnvelope | ErrorRenderer {
  // A prefix ending in `/` covers the path without it too: `/api/v1/messages/` is also `POST /api/v1/messages`.
  const path = url.split('?')[0]!;
  return ctx.errorEnvelopes.find(({ prefix }) => path.startsWith(prefix) || `${path}/` === prefix)?.envelope ?? 'api';
}

/**
 * The JSON body of an error answered before any route was chosen, in the envelope of the family the path belongs
 * to. A page family's HTML is sent by the handlers that have a reply (see error-page.ts); what Node's parser
 * refused never comes from a browser's navigation, and gets the API envelope.
 */
function errorBodyByPath(ctx: ServerContext, url: string, error: ApiError): unknown {
  const envelope = envelopeOfPath(ctx, url);
  if (typeof envelope === 'function') return envelope(error);
  if (envelope === 'oauth') return { error: oauthErrorCode(error), error_description: error.message };
  return envelope === 'keys' ? { success: false, error: error.message } : error.toEnvelope();
}
