import { ApiError, errorBody, errorStatus } from '../core/errors.js'
import type { Logger } from '../core/log.js'
import type { TakeResult } from '../core/rate-limit.js'
import type { Exchange, Headers } from './uws.js'

const JSON_HEADERS: Headers = { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }

/** `X-RateLimit-*` headers for a bucket reading. */
export function rateHeaders(rate: TakeResult | undefined): Headers {
  if (rate === undefined) return {}
  const headers: Headers = { 'x-ratelimit-limit': String(rate.limit), 'x-ratelimit-remaining': String(rate.remaining) }
  if (!rate.allowed) headers['retry-after'] = String(rate.retryAfterSeconds)
  return headers
}

/**
 * The one 429 of every door: `what` says which limit (the API's buckets, form posts, analytics
 * events, claims, sign-in), then when to try again, and `details.retryAfterSeconds` carries the wait.
 */
export function rateLimitedError(rate: TakeResult, what = 'Rate limit reached'): ApiError {
  return new ApiError('rate_limited', `${what}; try again in ${rate.retryAfterSeconds} s`, { retryAfterSeconds: rate.retryAfterSeconds })
}

export function sendJson(exchange: Exchange, status: number, value: unknown, headers: Headers = {}): void {
  exchange.send(status, { ...JSON_HEADERS, ...headers }, status === 204 ? undefined : JSON.stringify(value))
}

/** Sends any thrown value in the wire shape; unexpected ones are logged with their stack. */
export function sendError(exchange: Exchange, error: unknown, log: Logger, headers: Headers = {}): void {
  if (!(error instanceof ApiError)) {
    log.error('unexpected error', { method: exchange.method, path: exchange.path, error: (error as Error)?.stack ?? String(error) })
  }
  const extra: Headers = error instanceof ApiError && error.headers ? { ...error.headers } : {}
  // RFC 9110 11.6.1: a 401 names the scheme it wants.
  if (error instanceof ApiError && error.kind === 'unauthorized' && headers['www-authenticate'] === undefined)
    extra['www-authenticate'] ??= 'Bearer realm="plinth"'
  const { close, connection } = connectionAfter(error)
  exchange.send(errorStatus(error), { ...JSON_HEADERS, ...headers, ...extra, ...connection }, JSON.stringify(errorBody(error)), close)
}

/**
 * What becomes of the connection after an error. A 413 answers before the rest of the body is read:
 * uWS discards what follows, and `Connection: close` tells the client not to reuse the connection.
 * Closing at once would reset a client still sending, which then reports EPIPE instead of the 413
 * (Node's fetch for 10 MB and more, Node's http always). A 408's request will never complete: close.
 */
export function connectionAfter(error: unknown): { close: boolean; connection: Headers } {
  const kind = error instanceof ApiError ? error.kind : null
  return { close: kind === 'request_timeout', connection: kind === 'payload_too_large' ? { connection: 'close' } : {} }
}
