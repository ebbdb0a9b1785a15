/** A source of the current time in epoch milliseconds. Billing periods and expiries read it, never `Date.now()`. */
export interface Clock {
  now(): number;
}

/** The wall clock. */
export const systemClock: Clock = { now: () => Date.now() };

/** A clock that tests set and advance by hand, to land exactly on period boundaries. */
export class ManualClock implements Clock {
  #now: number;
  constructor(start: number | string | Date = Date.now()) {
    this.#now = typeof start === 'number' ? start : new Date(start).getTime();
  }
  now(): number {
    return this.#now;
  }
  set(to: number | string | Date): void {
    this.#now = typeof to === 'number' ? to : new Date(to).getTime();
  }
  advance(ms: number): void {
    this.#now += ms;
  }
}
