/**
 * Named limits, each with its unit and the place in the spec it comes from.
 */

/** List `limit`: 1-100, default 20 (spec: Limits, request and data limits). */
export const LIST_LIMIT_MIN = 1
export const LIST_LIMIT_MAX = 100
export const LIST_LIMIT_DEFAULT = 20

/** Subdomain label: 1-56 chars; generated labels stay within 40 (spec: Website.subdomain). */
export const SUBDOMAIN_LABEL_MAX_CHARS = 56
export const SUBDOMAIN_GENERATED_MAX_CHARS = 40

/** Length of the random suffix appended to a taken slug or generated label. */
export const RANDOM_SUFFIX_CHARS = 6

/** Website names and descriptions: generous bounds so nobody stores a novel in a name. */
export const WEBSITE_NAME_MAX_CHARS = 200
export const WEBSITE_DESCRIPTION_MAX_CHARS = 2000
export const SLUG_MAX_CHARS = 100
export const API_KEY_NAME_MAX_CHARS = 200

/** Default JSON request body limit for API operations; operations may declare their own. */
export const JSON_BODY_MAX_BYTES = 1 << 20

/** Rate limits per key (spec: Limits, rate limits). `perMinute` is the sustained refill rate. */
export const RATE_LIMITS = {
  standard: { burst: 120, perMinute: 600 },
  expensive: { burst: 20, perMinute: 30 },
} as const

export type RateClass = keyof typeof RATE_LIMITS

/** Unauthenticated callers share a bucket per remote address so guessing keys stays slow. */
export const ANONYMOUS_RATE_LIMIT = { burst: 30, perMinute: 60 } as const

/** How long SIGTERM waits for in-flight requests before closing anyway. */
export const SHUTDOWN_DRAIN_MS = 10_000
