import type { App } from '../platform/http/server.ts';
import type { AppContext } from '../platform/context.ts';
import { allRedirectUris } from '../oauth/clients.ts';

const CORS_PATHS = /^\/api\/(v1|user|wallet|usage|oauth\/(token|revoke))(\/|$)/;
/**
 * The authorization server's metadata (RFC 8414, OpenID Connect discovery): public documents, read by the SDK
 * in any app's page before it redeems a code (to check the response's `iss`, RFC 9207), so readable from any
 * origin, as the SDK bundle is.
 */
const METADATA_PATHS = /^\/\.well-known\/(oauth-authorization-server|openid-configuration)(\?|$)/;
const CACHE_MS = 30_000;
/** Always allowed, asked for or not. */
const BASE_HEADERS = ['authorization', 'content-type', 'x-request-id'];
/** A header name (RFC 9110 token), lower-cased by the caller. */
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9a-z-]{1,64}$/;

/**
 * The headers a preflight allows: ours, and every well-formed name the page asked for. The official SDKs
 * add their own in a browser (OpenAI's `x-stainless-*`; Anthropic's `x-api-key`, `anthropic-version`,
 * `anthropic-beta`, `anthropic-dangerous-direct-browser-access`), and a preflight that leaves one out
 * blocks the call. Echoing is safe here: the origin is already a registered app's, and no credentials
 * mode is granted, so a header can only carry what the page itself holds.
 */
export function allowedHeaders(requested: string | string[] | undefined): string {
  const asked = (Array.isArray(requested) ? requested.join(',') : (requested ?? '')).slice(0, 4096).toLowerCase();
  const names = new Set(BASE_HEADERS);
  for (const name of asked.split(',')) {
    const trimmed = name.trim();
    if (HEADER_NAME.test(trimmed)) names.add(trimmed);
  }
  return [...names].join(', ');
}

/**
 * CORS for the API: the SDK runs in registered apps' pages, so the origins of every registered redirect
 * URI (and our own) may call the bearer-token routes. No credentials mode: these routes take bearer
 * tokens, never cookies, so a page of another origin can never ride a dashboard session.
 */
export function registerCors(app: App, ctx: AppContext): void {
  let cached: { at: number; origins: Set<string> } | null = null;
  ctx.bus.subscribe('oauth:clients-changed', () => (cached = null));

  async function allowedOrigins(): Promise<Set<string>> {
    const now = Date.now();
    if (cached && now - cached.at < CACHE_MS) return cached.origins;
    const origins = new Set<string>([new URL(ctx.config.PUBLIC_BASE_URL).origin]);
    for (const uri of await allRedirectUris(ctx.db)) {
      try {
        origins.add(new URL(uri).origin);
      } catch {}
    }
    cached = { at: now, origins };
    return origins;
  }

  app.addHook('onRequest', async (request, reply) => {
    const origin = request.headers.origin;
    if (origin && METADATA_PATHS.test(request.url)) return void reply.raw.setHeader('access-control-allow-origin', '*');
    if (!origin || !CORS_PATHS.test(request.url)) return;
    if (!(await allowedOrigins()).has(origin)) return;
    // Set on the raw response: the OAuth routes hand the raw response to oidc-provider.
    reply.raw.setHeader('access-control-allow-origin', origin);
    reply.raw.setHeader('vary', 'Origin');
    // x-should-retry: the official SDKs read it in a browser too, and retry a refusal that says nothing.
    reply.raw.setHeader('access-control-expose-headers', 'retry-after, x-request-id, x-should-retry');
    if (request.method === 'OPTIONS') {
      reply.raw.setHeader('access-control-allow-methods', 'GET, POST, PATCH, DELETE, OPTIONS');
      reply.raw.setHeader(
        'access-control-allow-headers',
        allowedHeaders(request.headers['access-control-request-headers']),
      );
      reply.raw.setHeader('access-control-max-age', '600');
      return reply.code(204).send();
    }
  });
}
