import type { App } from '../platform/http/server.ts';
import type { AppContext } from '../platform/context.ts';
import { refuseCrossOriginPosts } from '../platform/http/same-origin.ts';

/** The HTML sign-in, sign-up and sign-out routes, and their JSON twins used by the dashboard. */
const FORM_ROUTES = ['/signin', '/signup', '/signout', '/api/auth/signin', '/api/auth/signup', '/api/auth/signout'];
const PAGE_ROUTES = new Set(['/signin', '/signup']);

/**
 * The sign-in and sign-up pages are self-contained (an inline style, no script), so their policy allows
 * nothing else; `form-action 'self'` keeps an injected form from posting the password elsewhere.
 */
export const FORM_PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/**
 * Guards the account forms: cross-origin posts are refused (login CSRF), and the pages carry a strict CSP.
 * Their referrer policy is `same-origin` rather than the server's `no-referrer`: under `no-referrer` a
 * browser sends `Origin: null` with a form post even to its own site, which a browser without
 * `Sec-Fetch-Site` would then see refused. Nothing leaves for other sites either way.
 */
export function protectFormPages(app: App, ctx: AppContext): void {
  refuseCrossOriginPosts(app, ctx, FORM_ROUTES);
  app.addHook('onSend', async (request, reply, payload) => {
    if (
      !PAGE_ROUTES.has(request.routeOptions.url ?? '') ||
      !String(reply.getHeader('content-type') ?? '').startsWith('text/html')
    )
      return payload;
    reply.header('content-security-policy', FORM_PAGE_CSP);
    reply.header('referrer-policy', 'same-origin');
    return payload;
  });
}
