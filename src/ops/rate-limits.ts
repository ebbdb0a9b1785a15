import type { FastifyRequest } from 'fastify';
import type { App } from '../platform/http/server.ts';
import type { OpsDeps } from './deps.ts';
import { ApiError } from '../platform/errors.ts';
import type { Principal } from '../platform/http/principal.ts';
import type { Backoff, RateLimiter } from '../platform/ratelimit.ts';
import { subjectKey, subjectsOf } from '../billing/limits.ts';

/** What the gateway calls to count tokens against the per-minute token limits. */
export interface RateLimits {
  /** Throws RATE_LIMITED when the caller's tokens this minute already reached the limit. */
  checkTokens(principal: Principal): Promise<void>;
  /** Adds the tokens a call used to the caller's current minute. */
  addTokens(principal: Principal, tokens: number): Promise<void>;
}

/**
 * The counters other features throttle with (sign-in failures, OAuth clients): in Redis when `REDIS_URL`
 * is set, so every instance sees the same counts, else in this process.
 */
export interface Throttles {
  /** Fixed one-minute windows. */
  windows: RateLimiter;
  /** Growing delays. */
  backoff: Backoff;
}

/**
 * The sign-up routes, matched by the route Fastify chose and not by the raw URL, so that an encoded path
 * (`/api/auth/%73ignup`) counts like the plain one. Sign-in is throttled on its failures instead (src/accounts).
 */
const SIGNUP_ROUTES = new Set(['/signup', '/api/auth/signup']);

/**
 * The buckets a principal's AI calls count in: its key's, then the app's acting for the user (key first). They
 * are the subjects of billing's spending limits, named as billing names them (one `subjectsOf`, one
 * `subjectKey`: `key:<keyId>`, `app:<userId>:<appId>`).
 */
function bucketsOf(principal: Principal, ctx: OpsDeps): Array<{ subject: string; rpm: number }> {
  return subjectsOf(principal)
    .sort((a, b) => Number(a.kind !== 'key') - Number(b.kind !== 'key'))
    .map((subject) => ({
      subject: subjectKey(subject),
      rpm: subject.kind === 'key' ? ctx.config.RATE_LIMIT_KEY_RPM : ctx.config.RATE_LIMIT_APP_RPM,
    }));
}

function rateLimited(what: string, retryAfterSeconds: number, limit: number): ApiError {
  return new ApiError(
    'RATE_LIMITED',
    `Rate limit reached: at most ${limit} ${what} per minute. Retry after ${retryAfterSeconds} s.`,
    {
      headers: { 'retry-after': String(retryAfterSeconds) },
      details: { limit, retryAfter: retryAfterSeconds },
    },
  );
}

/**
 * Request-rate limits (429 RATE_LIMITED with Retry-After; never confused with a spending limit, which
 * is SPENDING_LIMIT_EXCEEDED): per API key and per app on `/api/v1/*`, after authentication; per client
 * address on sign-up, before anything else runs. Every match is on the route, never on the raw URL.
 */
export function registerRateLimits(app: App, ctx: OpsDeps, limiter: RateLimiter): void {
  if (ctx.config.TRUST_PROXY === 'false') {
    // Behind a proxy with TRUST_PROXY off, every client has the proxy's address: say so once.
    let warned = false;
    app.addHook('onRequest', async (request) => {
      if (warned || request.headers['x-forwarded-for'] === undefined) return;
      warned = true;
      ctx.log.warn(
        'A request carries X-Forwarded-For but TRUST_PROXY is off, so the header is ignored: if Tollgate runs behind a proxy or load balancer, every client has its address and shares its per-address limits (sign-in failures, sign-ups). Set TRUST_PROXY to the number of proxies, or their addresses.',
      );
    });
  }
  const signupLimit = ctx.config.RATE_LIMIT_SIGNUP_PER_MINUTE;
  if (signupLimit > 0) {
    app.addHook('onRequest', async (request: FastifyRequest) => {
      if (request.method !== 'POST' || !SIGNUP_ROUTES.has(request.routeOptions.url ?? '')) return;
      const decision = await limiter.take(`signup:${request.ip}`, 1, signupLimit, ctx.clock.now());
      if (!decision.allowed) throw rateLimited('sign-ups from one address', decision.retryAfterSeconds, signupLimit);
    });
  }

  app.addHook('preHandler', async (request) => {
    const principal = request.principal;
    if (!principal || !request.routeOptions.url?.startsWith('/api/v1/')) return;
    for (const { subject, rpm } of bucketsOf(principal, ctx)) {
      if (rpm <= 0) continue;
      const decision = await limiter.take(`rpm:${subject}`, 1, rpm, ctx.clock.now());
      if (!decision.allowed) throw rateLimited('requests', decision.retryAfterSeconds, rpm);
    }
  });
}

/** The per-minute token limits of AI calls, counted in `limiter` (see {@link RateLimits}). */
export function createTokenRateLimits(ctx: OpsDeps, limiter: RateLimiter): RateLimits {
  const tpm = ctx.config.RATE_LIMIT_KEY_TPM;
  return {
    async checkTokens(principal) {
      if (tpm <= 0) return;
      const now = ctx.clock.now();
      for (const { subject } of bucketsOf(principal, ctx)) {
        if ((await limiter.peek(`tpm:${subject}`, now)) >= tpm) {
          throw rateLimited('tokens', Math.max(1, Math.ceil((60_000 - (now % 60_000)) / 1000)), tpm);
        }
      }
    },
    async addTokens(principal, tokens) {
      if (tpm <= 0 || tokens <= 0) return;
      for (const { subject } of bucketsOf(principal, ctx))
        await limiter.take(`tpm:${subject}`, tokens, tpm, ctx.clock.now());
    },
  };
}
