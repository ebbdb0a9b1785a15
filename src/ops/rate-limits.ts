import type { FastifyRequest } from 'fastify';
import type { App } from '../platform/http/server.ts';
import type { AppContext } from '../platform/context.ts';
import { ApiError } from '../platform/errors.ts';
import type { Principal } from '../platform/http/principal.ts';
import type { RateLimiter } from '../platform/ratelimit.ts';

/** What the gateway calls to count tokens against the per-minute token limits. */
export interface RateLimits {
  /** Throws RATE_LIMITED when the caller's tokens this minute already reached the limit. */
  checkTokens(principal: Principal): Promise<void>;
  /** Adds the tokens a call used to the caller's current minute. */
  addTokens(principal: Principal, tokens: number): Promise<void>;
}

declare module '../platform/context.ts' {
  interface Services {
    rateLimits: RateLimits;
  }
}

const AUTH_PATHS = new Set(['/signin', '/signup', '/api/auth/signin', '/api/auth/signup', '/api/oauth/token']);

/** The buckets a principal's AI calls count in: its key, and the app acting for the user. */
function subjectsOf(principal: Principal, ctx: AppContext): Array<{ subject: string; rpm: number }> {
  const subjects: Array<{ subject: string; rpm: number }> = [];
  if (principal.keyId) subjects.push({ subject: `key:${principal.keyId}`, rpm: ctx.config.RATE_LIMIT_KEY_RPM });
  if (principal.appId) subjects.push({ subject: `app:${principal.appId}:${principal.userId}`, rpm: ctx.config.RATE_LIMIT_APP_RPM });
  return subjects;
}

function rateLimited(what: string, retryAfterSeconds: number, limit: number): ApiError {
  return new ApiError('RATE_LIMITED', `Rate limit reached: at most ${limit} ${what} per minute. Retry after ${retryAfterSeconds} s.`, {
    headers: { 'retry-after': String(retryAfterSeconds) },
    details: { limit, retryAfter: retryAfterSeconds },
  });
}

/**
 * Request-rate limits (429 RATE_LIMITED with Retry-After; never confused with a spending limit, which
 * is SPENDING_LIMIT_EXCEEDED): per API key and per app on `/api/v1/*`, after authentication; per client
 * address on sign-in, sign-up and the token endpoint, before anything else runs.
 */
export function registerRateLimits(app: App, ctx: AppContext, limiter: RateLimiter): void {
  const authLimit = ctx.config.RATE_LIMIT_AUTH_PER_MINUTE;
  if (authLimit > 0) {
    app.addHook('onRequest', async (request: FastifyRequest) => {
      if (request.method !== 'POST') return;
      const path = request.url.split('?')[0];
      if (!AUTH_PATHS.has(path) && !path.startsWith('/api/oauth/interaction/')) return;
      const decision = await limiter.take(`auth:${request.ip}`, 1, authLimit, ctx.clock.now());
      if (!decision.allowed) throw rateLimited('sign-in and token requests', decision.retryAfterSeconds, authLimit);
    });
  }

  app.addHook('preHandler', async (request) => {
    const principal = request.principal;
    if (!principal || !request.url.startsWith('/api/v1/')) return;
    for (const { subject, rpm } of subjectsOf(principal, ctx)) {
      if (rpm <= 0) continue;
      const decision = await limiter.take(`rpm:${subject}`, 1, rpm, ctx.clock.now());
      if (!decision.allowed) throw rateLimited('requests', decision.retryAfterSeconds, rpm);
    }
  });

  const tpm = ctx.config.RATE_LIMIT_KEY_TPM;
  ctx.services.rateLimits = {
    async checkTokens(principal) {
      if (tpm <= 0) return;
      const now = ctx.clock.now();
      for (const { subject } of subjectsOf(principal, ctx)) {
        if ((await limiter.peek(`tpm:${subject}`, now)) >= tpm) {
          throw rateLimited('tokens', Math.max(1, Math.ceil((60_000 - (now % 60_000)) / 1000)), tpm);
        }
      }
    },
    async addTokens(principal, tokens) {
      if (tpm <= 0 || tokens <= 0) return;
      for (const { subject } of subjectsOf(principal, ctx)) await limiter.take(`tpm:${subject}`, tokens, tpm, ctx.clock.now());
    },
  };
}
