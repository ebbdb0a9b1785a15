import type { FastifyRequest } from 'fastify';
import type { App } from './server.ts';
import type { AppContext } from '../context.ts';
import { errors } from '../errors.ts';

/**
 * Whether a browser sent `request` from one of our own pages. `Sec-Fetch-Site` (every current browser) is
 * decisive when present: `same-origin`, or `none` (typed or bookmarked). Without it, `Origin` must be the
 * public origin. A request carrying neither comes from no browser that could be driven by another site
 * (browsers send one or both on every POST), such as curl or a server, and is let through.
 */
export function isSameOriginRequest(request: Pick<FastifyRequest, 'headers'>, publicOrigin: string): boolean {
  const site = request.headers['sec-fetch-site'];
  if (typeof site === 'string') return site === 'same-origin' || site === 'none';
  const origin = request.headers.origin;
  if (typeof origin === 'string') return origin === publicOrigin;
  return true;
}

/**
 * Security invariant (login CSRF): a page of another site must not be able to post these forms with the
 * visitor's browser, signing them in to an account of the attacker's choosing or out of their own. The
 * cookie's `SameSite=Lax` does not cover it, since the forms need no cookie. Posts to `paths` (matched by
 * route, so that an encoded path cannot slip past) from another origin are refused with 403.
 */
export function refuseCrossOriginPosts(app: App, ctx: AppContext, paths: readonly string[]): void {
  const guarded = new Set(paths);
  app.addHook('onRequest', async (request) => {
    if (request.method !== 'POST' || !guarded.has(request.routeOptions.url ?? '')) return;
    // Read on each request: with PORT=0 the public address is only known once the server listens.
    const publicOrigin = new URL(ctx.config.PUBLIC_BASE_URL).origin;
    if (!isSameOriginRequest(request, publicOrigin)) {
      throw errors.forbidden(
        `This form only accepts posts from ${publicOrigin}: open the page there and submit it again.`,
      );
    }
  });
}
