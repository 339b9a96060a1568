import { DOOR } from '../core/metrics.js'
import { ApiError } from '../core/errors.js'
import { JSON_BODY_MAX_BYTES } from '../core/limits.js'
import { parseJsonBody } from './body.js'
import { coerceQuery, parseQuery, type Authorized, type Pipeline } from './pipeline.js'
import { rateHeaders, sendError, sendJson } from './respond.js'
import type { Router } from './router.js'
import type { AnonymousDoor } from './anonymous.js'
import { isAnonymous } from './operation.js'
import type { Exchange, Headers } from './uws.js'
import type { Principal } from '../core/principal.js'
import { TICKET_DEPLOY_PATH } from '../actors/website/deploy-tickets.js'

/** Methods in the order an Allow header lists them; HEAD wherever GET is. */
const METHOD_ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'] as const

/** A CSV page says where the next one is (the JSON answer's nextCursor) in X-Next-Cursor. */
function csvHeaders(output: unknown): Headers {
  const next = (output as { nextCursor?: unknown } | null)?.nextCursor
  return typeof next === 'string' ? { 'x-next-cursor': next } : {}
}

/** Serves one REST request: route, authenticate, rate-limit, read body, then the pipeline. */
export function handleRest(exchange: Exchange, router: Router, pipeline: Pipeline, door: AnonymousDoor): void {
  const { log } = pipeline.deps
  const match = router.match(exchange.method, exchange.path)
  if (match.kind !== 'found') {
    const rate = pipeline.takeAddressToken(exchange)
    let error: ApiError
    if (match.kind === 'method') {
      const allowed = METHOD_ORDER.filter((m) => match.allowed.includes(m === 'HEAD' ? 'GET' : m))
      error = new ApiError(
        'method_not_allowed',
        `${exchange.method} is not allowed on ${exchange.path}; allowed: ${allowed.join(', ')}`,
        { allowed },
        { allow: allowed.join(', ') },
      )
    } else {
      error = new ApiError('not_found', `No API route ${exchange.method} ${exchange.path}; see ${pipeline.deps.urls.api('/openapi.json')}`)
    }
    sendError(exchange, error, log, rateHeaders(rate))
    return
  }
  const { operation, params } = match
  pipeline.watchStatus(exchange, `${operation.method} ${operation.path}`)
  if (isAnonymous(operation)) {
    exchange.door = DOOR.anonymous
    return door.handle(exchange, operation, params)
  }
  let principal: Principal | null = null
  let authorized: Authorized | null = null
  let headers: Headers
  if (operation.public === true) {
    // No credentials: the caller's address's bucket, for the headers (public reads are never refused).
    headers = rateHeaders(pipeline.takeAddressToken(exchange))
    if (operation.headers !== undefined) headers = { ...headers, ...operation.headers }
  } else {
    // The deploy endpoints take a ticket, and nothing else: their resource says so to authentication.
    const admitted =
      (operation.uploadToken === true ? pipeline.admitUploadToken(exchange, params) : null) ??
      pipeline.admit(exchange, operation.rateClass, operation.ticket === true ? pipeline.deps.urls.api(TICKET_DEPLOY_PATH) : undefined)
    if (!admitted.ok) {
      sendError(exchange, admitted.error, log, admitted.headers)
      return
    }
    principal = admitted.principal
    headers = admitted.headers
    // Scope and capability first: a caller who may not run the operation never gets its body read.
    try {
      authorized = pipeline.authorize(operation, principal, params)
    } catch (error) {
      pipeline.giveBackTicket(principal)
      sendError(exchange, error, log, headers)
      return
    }
  }
  const contentType = exchange.header('content-type')
  const csv = operation.public !== true ? operation.csv : undefined
  const wantsCsv = csv !== undefined && /\btext\/csv\b/i.test(exchange.header('accept'))
  // Operations without a body still read one: a stray body is refused, never silently ignored.
  const hasBody = exchange.method !== 'GET' && exchange.method !== 'HEAD'
  let body: Promise<Buffer | undefined>
  let deferred: ReturnType<Exchange['deferBody']> | null = null
  let query: Record<string, unknown>
  try {
    query = coerceQuery(operation.query, parseQuery(exchange.query))
    exchange.detach()
    body =
      hasBody && operation.streamsBody === undefined
        ? exchange.readBody(operation.bodyLimitBytes ?? JSON_BODY_MAX_BYTES)
        : Promise.resolve(undefined)
    // A streamed body is taken now (uWS gives body data only to a handler attached at dispatch) and read by the handler.
    deferred = hasBody && operation.streamsBody !== undefined ? exchange.deferBody() : null
  } catch (error) {
    authorized?.release()
    throw error
  }
  body
    .then(async (bytes) => {
      const streamed = operation.streamsBody !== undefined
      const parsed = streamed
        ? undefined
        : operation.bodyMedia && bytes !== undefined
          ? await operation.bodyMedia.parse(bytes, contentType)
          : parseJsonBody(bytes, contentType)
      const raw = {
        params,
        query,
        body: parsed,
        ...(streamed
          ? {
              stream: {
                contentType,
                contentRange: exchange.header('content-range'),
                contentLength: exchange.header('content-length') === '' ? null : Number(exchange.header('content-length')),
                header: (name: string) => exchange.header(name),
                pipe: (limit: number, sink: Parameters<ReturnType<Exchange['deferBody']>['pipe']>[1]) =>
                  deferred === null ? Promise.resolve(0) : deferred.pipe(limit, sink),
              },
            }
          : {}),
      }
      return operation.public === true
        ? pipeline.runPublic(operation, raw)
        : pipeline.run(operation, authorized!.principal, raw, authorized!)
    })
    .then(({ status, output, lagging }) => {
      const answered = withLagging(headers, lagging)
      return wantsCsv
        ? exchange.send(
            status,
            { ...answered, ...csvHeaders(output), 'content-type': 'text/csv; charset=utf-8', 'cache-control': 'no-store' },
            csv(output),
          )
        : sendJson(exchange, status, output, answered)
    })
    .catch((error: unknown) => {
      // A ticket's request that failed deployed nothing (its commit is the last step that can fail it):
      // the ticket stays good for the corrected one, or the retry.
      pipeline.giveBackTicket(principal)
      if (!exchange.aborted) sendError(exchange, error, log, headers)
    })
    .finally(() => authorized?.release())
}

/**
 * A cluster's primary names the replicas that had not applied a change when its answer went
 * (`X-Plinth-Lagging`: node names, checked when heard). A write's answer waits for the replicas, so a
 * client reads its own writes on any node without knowing the log's position, which is not said: it
 * counts every tenant's writes. The embedded server adds nothing.
 */
function withLagging(headers: Headers, lagging: string[] | undefined): Headers {
  return lagging === undefined ? headers : { ...headers, 'x-plinth-lagging': lagging.join(', ') }
}
