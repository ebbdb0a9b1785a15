/**
 * The error answer of a page a person opens in a browser: a small self-contained HTML page (renderPage's look,
 * no script) with a heading, the error's message and, for a 503 or a 429, when to try again, instead of the
 * JSON envelope an API client reads. Same status, same headers (Retry-After kept).
 *
 * Who gets it (the rule): only a route that declares `config.envelope: 'page'` (a route that serves HTML: the
 * sign-in and sign-up pages and their form posts, the OAuth authorization and interaction pages), and what
 * matches no route under a prefix a feature declared `'page'` for. The request's Accept header is never read:
 * every other route answers its JSON whatever a client sends, so no API client's answer can change, and a
 * page's answer does not depend on who asks.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiError } from '../errors.ts';
import { escapeHtml, renderPage, safeReturnTo, STRICT_PAGE_CSP } from './page.ts';

/** What the error page needs of the request: how it came (to say how to retry) and its id (for a 5xx). */
export interface PageRequest {
  method: string;
  /** The path and query the browser asked for. */
  url: string;
  id: string;
}

/** The page's heading: what happened, in the person's words. */
function headingOf(status: number): string {
  if (status === 503) return 'Tollgate is unavailable for a moment';
  if (status === 429) return 'Too many attempts';
  if (status === 404) return 'Page not found';
  if (status >= 500) return 'Something went wrong';
  return 'This request could not be completed';
}

/** "30 seconds" from a Retry-After of delay-seconds; null for none or an HTTP date. */
function waitOf(retryAfter: unknown): string | null {
  const seconds = Number(retryAfter);
  if (retryAfter === undefined || !Number.isInteger(seconds) || seconds < 0) return null;
  return seconds === 1 ? '1 second' : `${seconds} seconds`;
}

/** The HTML of the error page for `error` met by `request`. */
export function errorPageHtml(error: ApiError, request: PageRequest): string {
  const heading = headingOf(error.status);
  const wait = error.status === 503 || error.status === 429 ? waitOf(error.headers['retry-after']) : null;
  // What passes can be asked again: a GET as it is, a form's post by the person, from the page it was on.
  const again = safeReturnTo(request.url, '');
  const retry =
    request.method === 'GET' && again !== ''
      ? `<p><a href="${escapeHtml(again)}">Try again</a></p>`
      : '<p class="hint">Go back to the page you came from and send it again.</p>';
  return renderPage(
    heading,
    `
<h1>${escapeHtml(heading)}</h1>
<p class="error" role="alert">${escapeHtml(error.message)}</p>
${wait ? `<p>Try again in ${wait}.</p>` : ''}
${error.status >= 500 || error.status === 429 ? retry : '<p><a href="/">Go to Tollgate</a></p>'}
${error.status >= 500 ? `<p class="hint">Request id: <code>${escapeHtml(request.id)}</code></p>` : ''}`,
  );
}

/**
 * Sends `error` as the error page, with the headers of every page of ours (no script, no cache). The status
 * and the error's own headers are the caller's to set, as for the JSON envelopes.
 */
export function sendErrorPage(request: FastifyRequest, reply: FastifyReply, error: ApiError): FastifyReply {
  return reply
    .header('content-security-policy', STRICT_PAGE_CSP)
    .header('cache-control', 'no-store')
    .type('text/html; charset=utf-8')
    .send(errorPageHtml(error, request));
}
