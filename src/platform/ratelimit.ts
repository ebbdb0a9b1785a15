import type { Redis } from './redis.ts';
import type { Logger } from './logger.ts';

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
      const results = await redis
        .multi()
        .incrby(name, units)
        .pexpire(name, WINDOW_MS * 2)
        .exec();
      const used = Number(results?.[0]?.[1] ?? units);
      return { allowed: used <= limit, used, limit, retryAfterSeconds };
    },
    async peek(subject, now) {
      const value = await redis.get(`${prefix}${subject}:${windowOf(now).start}`);
      return Number(value ?? 0);
    },
  };
}

/** The outcome of an attempt under a {@link Backoff}. */
export interface BackoffDecision {
  /** False while the subject must still wait; nothing was counted then. */
  allowed: boolean;
  /** Seconds left to wait (0 when allowed). */
  retryAfterSeconds: number;
}

/**
 * Growing delays per subject, for guesses that must get slower the more of them fail: each attempt is
 * counted before the work it guards is done (so parallel attempts cannot slip past one another), the first
 * `free` attempts go ahead at once, and every one after that makes the next wait 1 s, 2 s, 4 s… up to
 * `maxDelayMs`. A success resets the subject (or gives its attempt back, for a subject many people share).
 * A subject with no attempt for a day is forgotten. With `forgetEveryMs`, one counted attempt is also
 * forgotten every `forgetEveryMs` (a leaking bucket): a subject many people share, such as an office's
 * address, then never adds its occasional failures up to a wait, while a burst of them still waits.
 */
export interface Backoff {
  /** Counts an attempt unless the subject is still waiting. */
  attempt(
    subject: string,
    free: number,
    maxDelayMs: number,
    now: number,
    forgetEveryMs?: number,
  ): Promise<BackoffDecision>;
  /** Gives `attempts` (default 1) back (a success on a shared subject); below `free` again, the wait is lifted. */
  refund(subject: string, free: number, attempts?: number): Promise<void>;
  /** Forgets the subject's attempts (a success on the subject's own account); resolves how many it held. */
  reset(subject: string): Promise<number>;
}

const FORGET_AFTER_MS = 24 * 60 * 60_000;

/** How many counted attempts leak away between `since` and `now`, one per `forgetEveryMs` (none without it). */
function leaked(since: number, now: number, forgetEveryMs: number | undefined): number {
  return forgetEveryMs && now > since ? Math.floor((now - since) / forgetEveryMs) : 0;
}

/** The wait that the `count`-th attempt imposes on the next one. */
function delayAfter(count: number, free: number, maxDelayMs: number): number {
  return count > free ? Math.min(maxDelayMs, 1000 * 2 ** Math.min(count - free - 1, 30)) : 0;
}

/** Growing delays in this process only. */
export function memoryBackoff(): Backoff {
  const subjects = new Map<string, { count: number; until: number; seen: number; leakedAt: number }>();
  let sweptAt = 0;
  return {
    async attempt(subject, free, maxDelayMs, now, forgetEveryMs) {
      if (now - sweptAt > 60_000) {
        for (const [name, state] of subjects) if (now - state.seen > FORGET_AFTER_MS) subjects.delete(name);
        sweptAt = now;
      }
      const state = subjects.get(subject) ?? { count: 0, until: 0, seen: now, leakedAt: now };
      if (now < state.until) return { allowed: false, retryAfterSeconds: Math.ceil((state.until - now) / 1000) };
      const gone = leaked(state.leakedAt, now, forgetEveryMs);
      if (gone > 0) {
        state.count = Math.max(0, state.count - gone);
        state.leakedAt += gone * forgetEveryMs!;
      }
      if (state.count === 0) state.leakedAt = now;
      state.count++;
      state.seen = now;
      const delay = delayAfter(state.count, free, maxDelayMs);
      if (delay) state.until = now + delay;
      subjects.set(subject, state);
      return { allowed: true, retryAfterSeconds: 0 };
    },
    async refund(subject, free, attempts = 1) {
      const state = subjects.get(subject);
      if (!state || state.count === 0) return;
      state.count = Math.max(0, state.count - attempts);
      if (state.count <= free) state.until = 0;
    },
    async reset(subject) {
      const held = subjects.get(subject)?.count ?? 0;
      subjects.delete(subject);
      return held;
    },
  };
}

// One script each, so that reading the wait and counting the attempt are one atomic step on the server.
const ATTEMPT_SCRIPT = `
local now = tonumber(ARGV[1])
local untilAt = tonumber(redis.call('HGET', KEYS[1], 'until') or '0')
if now < untilAt then return {0, math.ceil((untilAt - now) / 1000)} end
local every = tonumber(ARGV[5])
if every > 0 then
  local count = tonumber(redis.call('HGET', KEYS[1], 'count') or '0')
  local since = tonumber(redis.call('HGET', KEYS[1], 'leaked') or ARGV[1])
  local gone = math.floor((now - since) / every)
  if gone > 0 then
    count = math.max(0, count - gone)
    since = since + gone * every
    redis.call('HSET', KEYS[1], 'count', count)
  end
  if count == 0 then since = now end
  redis.call('HSET', KEYS[1], 'leaked', string.format('%d', since))
end
local count = redis.call('HINCRBY', KEYS[1], 'count', 1)
local free = tonumber(ARGV[2])
if count > free then
  local delay = math.min(tonumber(ARGV[3]), 1000 * 2 ^ math.min(count - free - 1, 30))
  redis.call('HSET', KEYS[1], 'until', string.format('%d', now + delay))
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {1, 0}`;
const REFUND_SCRIPT = `
local count = tonumber(redis.call('HGET', KEYS[1], 'count') or '0')
if count <= 0 then return 0 end
count = math.max(0, count - tonumber(ARGV[2]))
redis.call('HSET', KEYS[1], 'count', count)
if count <= tonumber(ARGV[1]) then redis.call('HDEL', KEYS[1], 'until') end
return count`;
const RESET_SCRIPT = `
local count = tonumber(redis.call('HGET', KEYS[1], 'count') or '0')
redis.call('DEL', KEYS[1])
return count`;

/** Growing delays in Redis, shared by every instance. */
export function redisBackoff(redis: Redis, prefix = 'tollgate:bo:'): Backoff {
  return {
    async attempt(subject, free, maxDelayMs, now, forgetEveryMs) {
      const [allowed, retryAfterSeconds] = (await redis.eval(
        ATTEMPT_SCRIPT,
        1,
        prefix + subject,
        now,
        free,
        maxDelayMs,
        FORGET_AFTER_MS,
        forgetEveryMs ?? 0,
      )) as [number, number];
      return { allowed: allowed === 1, retryAfterSeconds: Number(retryAfterSeconds) };
    },
    async refund(subject, free, attempts = 1) {
      await redis.eval(REFUND_SCRIPT, 1, prefix + subject, free, attempts);
    },
    async reset(subject) {
      return Number(await redis.eval(RESET_SCRIPT, 1, prefix + subject));
    },
  };
}

/**
 * Runs each step on Redis while it answers, and on this process's own counters while it does not (not
 * connected, or a command failed), so that a Redis outage costs the shared counting, never the calls: each
 * instance then counts on its own (at most the number of instances times a limit), as without `REDIS_URL`.
 * Money never depends on Redis. Falling back and coming back are logged once each.
 *
 * A connection that stays up while Redis is silent (paused, stalled, packets dropped) fails each command only
 * after the client's command timeout: once one has failed so, the steps count in the process without asking
 * Redis, and one PING at a time asks whether it answers again, so that the silence costs the calls that met
 * it a second each, not every call after them.
 */
export function withLocalFallback<T extends object>(shared: T, local: T, redis: Redis, log: Logger, what: string): T {
  let fallingBack = false;
  /** A command failed on a connection that is still up: Redis is not asked until a PING is answered. */
  let silent = false;
  const probe = async () => {
    while (silent && redis.status === 'ready') {
      try {
        await redis.ping();
        break;
      } catch {
        // Failed at once (not after the timeout): wait a little before asking again.
        await new Promise((resolve) => setTimeout(resolve, 200).unref());
      }
    }
    // Answered, or the connection changed (reconnecting, closed): the status check below takes over.
    silent = false;
  };
  const step =
    <A extends unknown[], R>(name: keyof T) =>
    async (...args: A): Promise<R> => {
      const onLocal = () => (local[name] as (...a: A) => Promise<R>)(...args);
      if (redis.status !== 'ready') return fellBack(`Redis is ${redis.status}`, onLocal);
      if (silent) return onLocal();
      try {
        const result = await (shared[name] as (...a: A) => Promise<R>)(...args);
        if (fallingBack) {
          fallingBack = false;
          log.info({ what }, 'Redis answers again: counting in Redis');
        }
        return result;
      } catch (error) {
        if (!silent && redis.status === 'ready') {
          silent = true;
          void probe();
        }
        return fellBack((error as Error).message, onLocal);
      }
    };
  const fellBack = <R>(reason: string, onLocal: () => Promise<R>): Promise<R> => {
    if (!fallingBack) {
      fallingBack = true;
      log.warn({ what, reason }, 'Redis does not answer: counting in this process until it does');
    }
    return onLocal();
  };
  return Object.fromEntries(Object.keys(local).map((name) => [name, step(name as keyof T)])) as T;
}
