/**
 * The closed list of error kinds of the Site Publishing API, with their HTTP statuses, and the one
 * error class every layer throws. The wire shape `{kind, message, details?}` is built only here.
 */

/** Every error kind and its HTTP status (spec: Errors). */
export const ERROR_STATUS = {
  validation: 400,
  unauthorized: 401,
  payment_required: 402,
  forbidden: 403,
  not_found: 404,
  // Not in the spec's list: RFC 9110 answers a known path with an unknown method 405 and Allow.
  method_not_allowed: 405,
  conflict: 409,
  // Not in the spec's kind list, but in its cases: an anonymous edit after the 24-hour cutoff, a
  // spent anonymous credential (RFC 9110 410: gone for good).
  gone: 410,
  // Not in the spec's list either: a request whose body stopped arriving (RFC 9110 15.5.9).
  request_timeout: 408,
  payload_too_large: 413,
  rate_limited: 429,
  upstream: 502,
  // Not in the spec's kind list, but in its cases: anonymous publishing is invite-only (503).
  unavailable: 503,
  internal: 500,
} as const

export type ErrorKind = keyof typeof ERROR_STATUS

/** The closed list of `details.reason` values Plinth answers with. */
export const ERROR_REASONS = [
  'plan_limit',
  'claim_held',
  'storage_limit',
  'suspended',
  'user_required',
  'build_failed',
  'site_already_created',
  'network_limit',
  'edit_window_closed',
  'anonymous_storage_limit',
  'invite_only',
  'credential_consumed',
  'credential_expired',
  'website_deleted',
  'invalid_json',
  'key_revoked',
  'key_expired',
  'billing_not_configured',
  'origin_not_trusted',
  'session_expired',
  'token_expired',
  'not_a_member',
  'claim_code_invalid',
  // Shared files (storage websites).
  'wrong_kind',
  'upload_busy',
  'offset_mismatch',
  'upload_incomplete',
  'name_taken',
] as const

export type ErrorReason = (typeof ERROR_REASONS)[number]

export interface ErrorDetails {
  reason?: ErrorReason
  [key: string]: unknown
}

/** The wire shape of every failure. */
export interface ErrorBody {
  kind: ErrorKind
  message: string
  details?: ErrorDetails
}

/** A failure the caller can act on. Messages say what to do next: agents read them. */
export class ApiError extends Error {
  readonly kind: ErrorKind
  readonly details: ErrorDetails | undefined
  /** Extra response headers, e.g. `Retry-After` on `rate_limited`. */
  readonly headers: Record<string, string> | undefined

  constructor(kind: ErrorKind, message: string, details?: ErrorDetails, headers?: Record<string, string>) {
    super(message)
    this.name = 'ApiError'
    this.kind = kind
    this.details = details
    this.headers = headers
  }

  get status(): number {
    return ERROR_STATUS[this.kind]
  }
}

/** Builds the wire shape of an error. Anything that is not an ApiError becomes `internal`, unexplained. */
export function errorBody(error: unknown): ErrorBody {
  if (error instanceof ApiError) {
    return error.details === undefined
      ? { kind: error.kind, message: error.message }
      : { kind: error.kind, message: error.message, details: error.details }
  }
  return { kind: 'internal', message: 'Internal error; it has been logged. Retry later.' }
}

/** The HTTP status for any thrown value. */
export function errorStatus(error: unknown): number {
  return error instanceof ApiError ? error.status : ERROR_STATUS.internal
}
