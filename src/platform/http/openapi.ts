import { ApiErrorObjectSchema, ApiErrorSchema, KeysErrorSchema, OAuthErrorSchema } from '#wire/errors.ts';
import { InsufficientCreditsRefusalSchema, SpendingLimitRefusalSchema } from '#wire/restrictions.ts';
import type { ErrorEnvelope } from './error-envelope.ts';
import { SESSION_COOKIE } from './principal.ts';

/**
 * What the OpenAPI document says about every route, derived here in one place from how the route is
 * served (its `config.admin`, `config.auth` and `config.envelope`), so that a route cannot be listed
 * without security, an operationId or its client errors, whoever adds it (`@redocly/cli lint`, whose
 * recommended rules `openapi.test.ts` applies, checks the result).
 */

/** The security schemes: bearer credentials, the operator token, and the dashboard's session cookie with its CSRF header. */
export const SECURITY_SCHEMES = {
  bearer: { type: 'http', scheme: 'bearer', description: 'OAuth access token or API key (ak_…)' },
  admin: { type: 'http', scheme: 'bearer', description: 'Operator token (TOLLGATE_ADMIN_TOKEN)' },
  session: {
    type: 'apiKey',
    in: 'cookie',
    name: SESSION_COOKIE,
    description: 'Dashboard session cookie, set by `POST /api/auth/signin`.',
  },
  apiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description:
      "API key (ak_…) or OAuth access token in x-api-key, as Anthropic's clients send it (routes with `config.apiKeyHeader` only).",
  },
  csrf: {
    type: 'apiKey',
    in: 'header',
    name: 'x-csrf-token',
    description:
      "A dashboard session's writes echo its CSRF token (the `csrfToken` of `GET /api/auth/session`) in this header.",
  },
} as const;

// The envelopes' one declaration each (packages/wire), which the routes that list their own errors reference too.
const ERROR_SCHEMAS: Record<ErrorEnvelope, object> = {
  api: ApiErrorSchema,
  keys: KeysErrorSchema,
  oauth: OAuthErrorSchema,
  page: { content: { 'text/html': { schema: { type: 'string' } } } },
};

const ERROR_DESCRIPTIONS: Record<ErrorEnvelope, string> = {
  api: "A client error (bad input, missing or insufficient credentials, not found, a limit): `error.code` names it (every code is listed under the document's `x-error-codes`).",
  keys: "A client error, in the API-key routes' envelope (contract §7.1): `error` says what was wrong.",
  oauth: 'An OAuth error (RFC 6749 §5.2): `error` is its code, `error_description` says what was wrong.',
  page: 'An HTML page saying what is wrong (and, for a 429 or 503, when to try again), for a person in a browser.',
};

/** `{ error: <one of objects> }` in the API envelope. */
const apiEnvelopeOf = (...objects: object[]) => ({
  type: 'object',
  required: ['error'],
  properties: { error: objects.length === 1 ? objects[0] : { anyOf: objects } },
});

/**
 * The restriction answers of a billed route in the API envelope, with the contract's fields (§2.2, §7.2) that a
 * client's restriction dialog reads: documented here, not in the routes' `response` schemas, which Fastify
 * serialises with and which stay open so that every field is sent. A 402 is only `INSUFFICIENT_CREDITS`; a 429
 * is a spending limit or a request rate.
 */
const RESTRICTION_ANSWERS: Record<'402' | '429', object> = {
  '402': {
    description:
      'The wallet cannot pay the most the call can cost: `INSUFFICIENT_CREDITS` with `available` and `required` (contract §2.2, §7.2).',
    ...apiEnvelopeOf({ ...InsufficientCreditsRefusalSchema, additionalProperties: true }),
  },
  '429': {
    description:
      'A spending limit would be exceeded: `SPENDING_LIMIT_EXCEEDED` with `limitType`, `limit`, `current`, `requested` and `resetsAt` (contract §2.2, §7.2); or too many requests: `RATE_LIMITED`, see `Retry-After`.',
    ...apiEnvelopeOf(
      { ...SpendingLimitRefusalSchema, additionalProperties: true },
      {
        ...ApiErrorObjectSchema,
        properties: { ...ApiErrorObjectSchema.properties, code: { type: 'string', enum: ['RATE_LIMITED'] } },
      },
    ),
  },
};

/** An answer as the OpenAPI document gives it: its description, and its body by media type (none for a redirect). */
export interface DocumentedResponse {
  description: string;
  content?: Record<string, { schema: object }>;
}

/**
 * A JSON answer that is a stream of Server-Sent Events instead when the request asks for `stream: true`:
 * Fastify serialises the JSON one from the route's schema, the stream is written event by event.
 */
export function jsonOrEventStream(json: object, description: string, events: string): DocumentedResponse {
  return {
    description,
    content: {
      'application/json': { schema: json },
      'text/event-stream': { schema: { type: 'string', description: events } },
    },
  };
}

/** An answer whose body is not JSON: text, or bytes (`binary`) such as audio. */
export function nonJsonResponse(description: string, mediaTypes: string[], binary = false): DocumentedResponse {
  const schema = binary ? { type: 'string', format: 'binary' } : { type: 'string' };
  return { description, content: Object.fromEntries(mediaTypes.map((type) => [type, { schema }])) };
}

/** The parts of a Fastify route the derivation reads. */
interface RouteLike {
  method: string | string[];
  config?: {
    admin?: boolean;
    auth?: readonly string[];
    envelope?: ErrorEnvelope;
    errorRenderer?: unknown;
    apiKeyHeader?: boolean;
    documentedResponses?: Record<string, DocumentedResponse>;
    billed?: boolean;
  };
}

/**
 * `@fastify/swagger`'s per-route transform: security from the route's authentication (the operator token;
 * bearer, the scopes of `scopedScheme` when there is one, or the dashboard session, whose writes also need the
 * CSRF header; or public, said explicitly), the
 * route's `config.documentedResponses` over its schema's (what Fastify does not serialise: streams, text,
 * audio, redirects), and a `4XX` answer in the route's error envelope for every client error not listed
 * (a route that lists its own, say 400 and 404, still answers 401, 403, 413 or 415 from the layers before its
 * handler; a route with its own `errorRenderer` lists each of its errors in its own envelope), and the restriction
 * answers (402, 429 with the contract's fields) of a route that lists them or is `billed`.
 */
export function transformRoute(
  { schema, url, route }: { schema: any; url: string; route: RouteLike },
  scopedScheme?: string,
): {
  schema: any;
  url: string;
} {
  if (schema?.hide) return { schema, url };
  // A route given no schema at all is listed by @fastify/swagger all the same: it gets what it lacks too.
  schema ??= {};
  const config = route.config ?? {};
  const methods = ([] as string[]).concat(route.method);
  const writes = methods.some((method) => !['GET', 'HEAD', 'OPTIONS'].includes(method));
  let security = schema.security;
  if (config.admin) security = [{ admin: [] }];
  else if (config.auth)
    security = [
      { bearer: [] },
      // OpenAPI's scopes of one requirement are all needed; the route needs one of its scopes: one requirement each.
      ...(scopedScheme
        ? config.auth.length
          ? config.auth.map((scope) => ({ [scopedScheme]: [scope] }))
          : [{ [scopedScheme]: [] }]
        : []),
      ...(config.apiKeyHeader ? [{ apiKey: [] }] : []),
      writes ? { session: [], csrf: [] } : { session: [] },
    ];
  security ??= [];
  // A route without answer schemas was documented "200 Default Response" by @fastify/swagger; say only what is known.
  // An answer documented without a body (a redirect) is `type: 'null'` to @fastify/swagger, which else gives it JSON.
  const documented = Object.fromEntries(
    Object.entries(config.documentedResponses ?? {}).map(([status, answer]) => [
      status,
      answer.content ? answer : { ...answer, type: 'null' },
    ]),
  );
  const response =
    schema.response || config.documentedResponses
      ? { ...schema.response, ...documented }
      : { '2XX': { description: 'Success.' } };
  const envelope = config.envelope ?? (url.startsWith('/api/user/api-keys') ? 'keys' : 'api');
  if (!response['4XX'] && !(config.errorRenderer && Object.keys(response).some((code) => code.startsWith('4')))) {
    response['4XX'] = { description: ERROR_DESCRIPTIONS[envelope], ...ERROR_SCHEMAS[envelope] };
  }
  if (envelope === 'api' && !config.errorRenderer)
    for (const status of ['402', '429'] as const)
      if (response[status] || config.billed) response[status] = RESTRICTION_ANSWERS[status];
  return { schema: { ...schema, security, response }, url };
}

/** `GET /api/v1/chat/completions` → `getApiV1ChatCompletions`; path parameters become `By<Name>`. */
export function operationIdOf(method: string, path: string): string {
  const words = path
    .split('/')
    .filter(Boolean)
    .map((part) => part.replace(/^\{(.+)\}$/, 'by-$1'))
    .flatMap((part) => part.split(/[^A-Za-z0-9]+/))
    .filter(Boolean);
  return method.toLowerCase() + words.map((word) => word[0]!.toUpperCase() + word.slice(1)).join('');
}

/**
 * `@fastify/swagger`'s whole-document transform: CORS preflight (OPTIONS) operations are not part of the API
 * and are dropped; every operation gets an operationId unless its schema named one; the server is the public
 * address as it is when the document is made.
 */
export function transformDocument({ openapiObject }: { openapiObject: any }, publicBaseUrl?: string): any {
  // Read when the document is made, not at start: with PORT=0 the public address is known only once listening.
  if (publicBaseUrl) openapiObject.servers = [{ url: publicBaseUrl }];
  for (const [path, operations] of Object.entries<Record<string, any>>(openapiObject.paths ?? {})) {
    delete operations.options;
    // A route of several methods shares one operation object between them: each gets its own copy.
    for (const [method, operation] of Object.entries(operations))
      operations[method] = { ...operation, operationId: operation.operationId ?? operationIdOf(method, path) };
    if (Object.keys(operations).length === 0) delete openapiObject.paths[path];
  }
  return openapiObject;
}
