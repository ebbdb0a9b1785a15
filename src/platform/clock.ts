/** A source of the current time in epoch milliseconds. Billing periods and expiries read it, never `Date.now()`. */
export interface Clock {
  now(): number;
  /**
   * Runs `tick` every `ms` of this clock's time until the returned function is called. The timer never keeps
   * the process alive, and a tick that throws or rejects is the caller's to catch. Optional: a clock without
   * it (a plain `{ now }`) gets wall-clock timers from {@link everyOn}.
   */
  every?(ms: number, tick: () => unknown): () => void;
}

/** Wall-clock repetition that never keeps the process alive. */
function wallEvery(ms: number, tick: () => unknown): () => void {
  const timer = setInterval(tick, ms);
  timer.unref();
  return () => clearInterval(timer);
}

/** Runs `tick` every `ms` of `clock`'s time (its own timers when it has them, else the wall clock's). */
export function everyOn(clock: Clock, ms: number, tick: () => unknown): () => void {
  return clock.every ? clock.every(ms, tick) : wallEvery(ms, tick);
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now(), every: wallEvery };

interface ManualTimer {
  ms: number;
  due: number;
  tick: () => unknown;
}

/**
 * A clock that tests set and advance by hand, to land exactly on period boundaries. Its timers fire only
 * when the test moves it: each timer that came due fires once (as a late event loop would), and the promise
 * `advance`/`set` return resolves when what those ticks started has finished.
 */
export class ManualClock implements Clock {
  #now: number;
  readonly #timers = new Set<ManualTimer>();
  constructor(start: number | string | Date = Date.now()) {
    this.#now = typeof start === 'number' ? start : new Date(start).getTime();
  }
  now(): number {
    return this.#now;
  }
  set(to: number | string | Date): Promise<void> {
    this.#now = typeof to === 'number' ? to : new Date(to).getTime();
    return this.#fireDue();
  }
  advance(ms: number): Promise<void> {
    this.#now += ms;
    return this.#fireDue();
  }
  every(ms: number, tick: () => unknown): () => void {
    const timer: ManualTimer = { ms, due: this.#now + ms, tick };
    this.#timers.add(timer);
    return () => void this.#timers.delete(timer);
  }
  async #fireDue(): Promise<void> {
    const running: unknown[] = [];
    for (const timer of [...this.#timers]) {
      if (timer.due > this.#now) continue;
      timer.due = this.#now + timer.ms;
      running.push(timer.tick());
    }
    await Promise.allSettled(running);
  }
}
