import { sessionOf } from '../actors/identity/auth.js'
import { SECRET_PREFIXES } from '../core/ids.js'
import { ApiError } from '../core/errors.js'
import { actorOf, personOf } from '../core/principal.js'
import type { TakeResult } from '../core/rate-limit.js'
import { ANON_RATE_LIMITS, JSON_BODY_MAX_BYTES, type AnonBucket } from '../core/limits.js'
import { parseJsonBody } from './body.js'
import { networkOf } from './client-address.js'
import type { AnonymousContext, AnyAnonymousOperation } from './operation.js'
import type { Pipeline } from './pipeline.js'
import { rateHeaders, rateLimitedError, sendError, sendJson } from './respond.js'
import { coerceQuery, parseQuery } from './pipeline.js'
import type { Exchange } from './uws.js'

const TOKEN = /^Bearer\s+(wa_[A-Za-z0-9_-]{43})\s*$/

/**
 * The anonymous endpoints' own front door (spec: Anonymous endpoints): the mode (off: 404), the
 * caller's network, the credential or person, buckets per credential and per network, then the
 * shared validation and handler of the pipeline. The token is read from the Authorization header
 * only, never from a query string.
 */
export class AnonymousDoor {
  constructor(private readonly pipeline: Pipeline) {}

  /** The client's address (the socket's peer, or X-Forwarded-For behind a trusted proxy). */
  clientAddress(exchange: Exchange): string {
    return this.pipeline.clientAddress(exchange)
  }

  handle(exchange: Exchange, operation: AnyAnonymousOperation, params: Record<string, string>): void {
    const { deps } = this.pipeline
    const { log } = deps
    const network = networkOf(this.clientAddress(exchange))
    // The headers of every answer report the bucket nearest to empty of those this request drew from.
    let tightest: TakeResult | undefined
    const take = (bucket: AnonBucket, subject: string): void => {
      const rate = this.pipeline.limiter.take(anonymousBucketKey(bucket, subject), ANON_RATE_LIMITS[bucket])
      if (tightest === undefined || !rate.allowed || rate.remaining / rate.limit < tightest.remaining / tightest.limit) tightest = rate
      if (!rate.allowed) throw rateLimitedError(rate)
    }
    const limit = (bucket: AnonBucket): void => {
      if (!operation.rateLimits?.includes(bucket))
        throw new Error(`${operation.operationId} draws from the ${bucket} bucket without declaring it`)
      const per = ANON_RATE_LIMITS[bucket].per
      if (per === 'credential' && ctx.credential === null)
        throw new Error(`${operation.operationId}: the ${bucket} bucket is per credential, and this request has none`)
      take(bucket, per === 'credential' ? `cred:${ctx.credential!.id}` : `net:${network}`)
    }
    const fail = (error: unknown) => sendError(exchange, error, log, rateHeaders(tightest))
    let ctx: AnonymousContext
    let query: Record<string, unknown>
    try {
      // Every request draws from the reads bucket first (of its credential, or of its network), so
      // every answer carries X-RateLimit-* (spec: Limits), refusals included.
      ctx = {
        registry: deps.registry,
        urls: deps.urls,
        clock: deps.clock,
        config: deps.config,
        network,
        credential: null,
        person: null,
        limit,
        inviteCode: exchange.header('x-invite-code'),
      }
      if (operation.anonymous === 'token')
        ctx.credential = this.#credential(exchange.header('authorization'), network, take, operation.credentialBucket ?? 'reads')
      else take('reads', `net:${network}`)
      if (deps.config.anonymous === 'off' && operation.anonymous !== 'claim')
        throw new ApiError('not_found', 'Anonymous publishing is off on this server; sign in to publish')
      if (operation.anonymous === 'claim') ctx.person = this.#person(exchange)
      query = coerceQuery(operation.query, parseQuery(exchange.query))
    } catch (error) {
      fail(error)
      return
    }
    const contentType = exchange.header('content-type')
    const hasBody = exchange.method !== 'GET' && exchange.method !== 'HEAD'
    exchange.detach()
    const streamed = hasBody && operation.streamsBody !== undefined
    const body = hasBody && !streamed ? exchange.readBody(operation.bodyLimitBytes ?? JSON_BODY_MAX_BYTES) : Promise.resolve(undefined)
    // A streamed body (shared-file bytes) is taken now and read by the handler, as on /v1.
    const deferred = streamed ? exchange.deferBody() : null
    const stream =
      deferred === null
        ? {}
        : {
            stream: {
              contentType,
              contentRange: exchange.header('content-range'),
              contentLength: exchange.header('content-length') === '' ? null : Number(exchange.header('content-length')),
              header: (name: string) => exchange.header(name),
              pipe: deferred.pipe,
            },
          }
    body
      .then((bytes) =>
        this.pipeline.runAnonymous(operation, ctx, {
          params,
          query,
          body: streamed ? undefined : parseJsonBody(bytes, contentType),
          ...stream,
        }),
      )
      .then(({ status, output }) => sendJson(exchange, status, output, rateHeaders(tightest)))
      .catch((error: unknown) => {
        if (!exchange.aborted) fail(error)
      })
  }

  /** The bearer's credential: 401 when the header is missing, malformed or names no credential. */
  #credential(authorization: string, network: string, take: (bucket: AnonBucket, subject: string) => void, bucket: AnonBucket) {
    const match = TOKEN.exec(authorization)
    if (match === null) {
      take('reads', `net:${network}`)
      const what =
        authorization === ''
          ? 'Missing anonymous token'
          : `Not an anonymous token (they start with ${SECRET_PREFIXES.anonymous} and have 43 more characters)`
      throw new ApiError(
        'unauthorized',
        `${what}: send Authorization: Bearer wa_… (get one with POST /public/v1/anonymous/credentials; never put it in a URL)`,
      )
    }
    const credential = this.pipeline.deps.registry.anonymous.byToken(match[1])
    if (credential === undefined) {
      take('reads', `net:${network}`)
      throw new ApiError('unauthorized', 'Unknown anonymous token; issue a new one with POST /public/v1/anonymous/credentials')
    }
    take(bucket, `cred:${credential.id}`)
    return credential
  }

  /**
   * A claim's person: a dashboard session (from the trusted Origin) or an OAuth token. No credential
   * at all is fine (the body then carries a claim code); an API key is 403 `user_required`.
   */
  #person(exchange: Exchange): AnonymousContext['person'] {
    const hasSession = sessionOf(exchange.header('cookie'), this.pipeline.deps.urls.sessionCookie) !== 'none'
    if (exchange.header('authorization') === '' && !hasSession) return null
    let principal
    try {
      principal = this.pipeline.authenticate(exchange, this.pipeline.restResource)
    } catch (error) {
      // An agent's token for the MCP endpoint claims here too: a claim is the person's, wherever it is sent.
      if (!/^Bearer\s+wo_/i.test(exchange.header('authorization'))) throw error
      principal = this.pipeline.authenticate(exchange, this.pipeline.deps.urls.api('/v1/mcp'))
    }
    const personId = personOf(principal)
    if (personId === null)
      throw new ApiError(
        'forbidden',
        'API keys cannot claim anonymous sites: a person claims them, signed in at the dashboard, over OAuth, or with a claim code (create_claim_code)',
        { reason: 'user_required' },
      )
    const record = this.pipeline.deps.registry.people.person(personId)
    if (record === undefined) throw new ApiError('unauthorized', 'The person of this credential no longer exists')
    return { record, actor: actorOf(principal) }
  }
}

/** The rate-limit bucket of `subject` (`cred:<id>` or `net:<network>`) for one of the spec's anonymous limits. */
export function anonymousBucketKey(bucket: AnonBucket, subject: string): string {
  return `anon:${bucket}:${subject}`
}
