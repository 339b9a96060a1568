/** The one source of time for every deadline, expiry and rate-limit refill. */
export interface Clock {
  /** Milliseconds since the Unix epoch. */
  now(): number
}

/** Wall-clock time. */
export const systemClock: Clock = { now: () => Date.now() }

/** A clock that moves only when told to; tests use it instead of sleeping. */
export class ManualClock implements Clock {
  #now: number

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start
  }

  now(): number {
    return this.#now
  }

  advance(ms: number): void {
    this.#now += ms
  }

  set(ms: number): void {
    this.#now = ms
  }
}

/** ISO-8601 text of a clock reading. */
export function iso(ms: number): string {
  return new Date(ms).toISOString()
}
