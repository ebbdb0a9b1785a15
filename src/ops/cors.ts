import type { App } from '../platform/http/server.ts';
import type { AppContext } from '../platform/context.ts';
import { allRedirectUris } from '../oauth/clients.ts';

const CORS_PATHS = /^\/api\/(v1|user|wallet|usage|oauth\/(token|revoke))(\/|$)/;
const CACHE_MS = 30_000;

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
    if (!origin || !CORS_PATHS.test(request.url)) return;
    if (!(await allowedOrigins()).has(origin)) return;
    // Set on the raw response: the OAuth routes hand the raw response to oidc-provider.
    reply.raw.setHeader('access-control-allow-origin', origin);
    reply.raw.setHeader('vary', 'Origin');
    reply.raw.setHeader('access-control-expose-headers', 'retry-after, x-request-id');
    if (request.method === 'OPTIONS') {
      reply.raw.setHeader('access-control-allow-methods', 'GET, POST, PATCH, DELETE, OPTIONS');
      reply.raw.setHeader('access-control-allow-headers', 'authorization, content-type, x-request-id');
      reply.raw.setHeader('access-control-max-age', '600');
      return reply.code(204).send();
    }
  });
}
