import type { Redis } from './redis.ts';

/** The outcome of taking from a rate-limit window. */
export interface RateDecision {
  allowed: boolean;
  /** Units used in the current window, this request included. */
  used: number;
  limit: number;
  /** Seconds until the window ends (for Retry-After). */
  retryAfterSeconds: number;
}

/**
 * Fixed one-minute windows counted per subject (`key:<id>`, `app:<id>`, `ip:<addr>`). In one process a
 * Map; with Redis an INCRBY + PEXPIRE in one MULTI, so every instance shares the counters.
 */
export interface RateLimiter {
  /** Adds `units` to the subject's window and says whether it is still within `limit`. */
  take(subject: string, units: number, limit: number, now: number): Promise<RateDecision>;
  /** The units already used in the current window, without adding any. */
  peek(subject: string, now: number): Promise<number>;
}

const WINDOW_MS = 60_000;

function windowOf(now: number) {
  const start = Math.floor(now / WINDOW_MS) * WINDOW_MS;
  return { start, retryAfterSeconds: Math.max(1, Math.ceil((start + WINDOW_MS - now) / 1000)) };
}

/** Counters in this process only. */
export function memoryRateLimiter(): RateLimiter {
  const counters = new Map<string, { start: number; used: number }>();
  let sweptAt = 0;
  return {
    async take(subject, units, limit, now) {
      const { start, retryAfterSeconds } = windowOf(now);
      if (now - sweptAt > WINDOW_MS) {
        for (const [name, counter] of counters) if (counter.start < start) counters.delete(name);
        sweptAt = now;
      }
      const counter = counters.get(subject);
      const used = (counter && counter.start === start ? counter.used : 0) + units;
      counters.set(subject, { start, used });
      return { allowed: used <= limit, used, limit, retryAfterSeconds };
    },
    async peek(subject, now) {
      const counter = counters.get(subject);
      return counter && counter.start === windowOf(now).start ? counter.used : 0;
    },
  };
}

/** Counters in Redis, shared by every instance. */
export function redisRateLimiter(redis: Redis, prefix = 'tollgate:rl:'): RateLimiter {
  return {
    async take(subject, units, limit, now) {
      const { start, retryAfterSeconds } = windowOf(now);
      const name = `${prefix}${subject}:${start}`;
      const results = await redis.multi().incrby(name, units).pexpire(name, WINDOW_MS * 2).exec();
      const used = Number(results?.[0]?.[1] ?? units);
      return { allowed: used <= limit, used, limit, retryAfterSeconds };
    },
    async peek(subject, now) {
      const value = await redis.get(`${prefix}${subject}:${windowOf(now).start}`);
      return Number(value ?? 0);
    },
  };
}
