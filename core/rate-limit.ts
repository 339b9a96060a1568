import type { Clock } from './clock.js'

export interface BucketPolicy {
  readonly burst: number
  readonly perMinute: number
}

export interface TakeResult {
  allowed: boolean
  limit: number
  remaining: number
  /** Whole seconds until one token is back; 0 when allowed. */
  retryAfterSeconds: number
}

interface Bucket {
  tokens: number
  updatedAt: number
  policy: BucketPolicy
}

/** Buckets beyond this count trigger a sweep of the ones that have refilled completely. */
const SWEEP_THRESHOLD = 10_000

/**
 * Token buckets keyed by caller and class, refilled continuously from the injected clock.
 * A full bucket carries no information, so idle buckets are dropped when the map grows.
 */
export class RateLimiter {
  readonly #clock: Clock
  readonly #buckets = new Map<string, Bucket>()

  constructor(clock: Clock) {
    this.#clock = clock
  }

  /** Takes one token from the bucket `key` under `policy`. */
  take(key: string, policy: BucketPolicy): TakeResult {
    const now = this.#clock.now()
    const ratePerMs = policy.perMinute / 60_000
    let bucket = this.#buckets.get(key)
    if (bucket === undefined) {
      if (this.#buckets.size >= SWEEP_THRESHOLD) this.#sweep(now)
      bucket = { tokens: policy.burst, updatedAt: now, policy }
      this.#buckets.set(key, bucket)
    } else {
      const elapsed = Math.max(0, now - bucket.updatedAt)
      bucket.tokens = Math.min(policy.burst, bucket.tokens + elapsed * ratePerMs)
      bucket.updatedAt = now
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1
      return { allowed: true, limit: policy.burst, remaining: Math.floor(bucket.tokens), retryAfterSeconds: 0 }
    }
    const retryAfterSeconds = Math.max(1, Math.ceil((1 - bucket.tokens) / ratePerMs / 1000))
    return { allowed: false, limit: policy.burst, remaining: 0, retryAfterSeconds }
  }

  #sweep(now: number): void {
    for (const [key, { tokens, updatedAt, policy }] of this.#buckets) {
      if (tokens + ((now - updatedAt) * policy.perMinute) / 60_000 >= policy.burst) this.#buckets.delete(key)
    }
  }
}
