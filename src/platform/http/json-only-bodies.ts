import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parse as parseQueryString } from 'node:querystring';
import { ApiError } from '../errors.ts';

/**
 * Stands for a body sent as text or as a form to a route that takes JSON only. The text and form parsers hand
 * it on in place of the body, and the authentication hook refuses it once the caller is known (so a caller
 * without a credential still gets its 401 first). Only those parsers produce it: a JSON body never meets this
 * code, so an AI call sent as JSON pays nothing for the check but one comparison.
 */
export const BODY_NOT_JSON: unique symbol = Symbol('a body sent as text or a form to a route that takes JSON');

/**
 * Whether the route reads its body as JSON only: an API route that declares a body schema (all of them describe
 * JSON). Not the HTML pages (sign-in, sign-up), the OAuth endpoints and pages, which read forms (RFC 6749), and,
 * for a form, the account routes' JSON twins of the sign-in forms, which have always taken one too.
 */
function takesJsonOnly(request: FastifyRequest, form: boolean): boolean {
  // Read once, and only here: Fastify builds a new `routeOptions` object on every access.
  const { schema, url } = request.routeOptions;
  if (!schema?.body || !url?.startsWith('/api/') || url.startsWith('/api/oauth/')) return false;
  return !(form && url.startsWith('/api/auth/'));
}

/**
 * The server's text and form parsers. Without this, a JSON body labelled `text/plain` (fetch's label for a
 * string) reached a JSON route as a string and was answered 400 "must be object", and a form (curl -d's label)
 * as an object of strings, answered 400 about a field or even taken; such a body is now a 415 asking for
 * application/json, as an XML one already was. Forms are read as @fastify/formbody read them (the same
 * null-prototype object, repeated fields as arrays).
 */
export function registerNonJsonParsers(app: FastifyInstance<any, any, any, any, any>): void {
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('text/plain', { parseAs: 'string' }, (request, body, done) => {
    done(null, takesJsonOnly(request, false) ? BODY_NOT_JSON : body);
  });
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (request, body, done) => {
    done(
      null,
      takesJsonOnly(request, true) ? BODY_NOT_JSON : parseQueryString(body as string, '&', '=', { maxKeys: 0 }),
    );
  });
}

/** Throws the 415 of a body that a JSON route received as text or as a form. */
export function refuseNonJsonBody(request: FastifyRequest): void {
  if (request.body === BODY_NOT_JSON)
    throw new ApiError('UNSUPPORTED_MEDIA_TYPE', 'Unsupported Content-Type; send application/json.');
}
