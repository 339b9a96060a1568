// Handing a request on to another listener and streaming its answer back, both ways with backpressure:
// a serving thread to its main thread's loopback door, a cluster's replica to the primary.
import { request, Agent, type ClientRequest, type IncomingMessage } from 'node:http'
import { BODY_IDLE_MS } from '../core/limits.js'
import { counters } from '../core/metrics.js'
import type { Logger } from '../core/log.js'
import { errorBody, ApiError } from '../core/errors.js'
import { sendError } from './respond.js'
import { statusLine } from './status-line.js'
import { packHeaders } from '../actors/website/snapshot.js'
import type { DeferredBody } from './exchange-body.js'
import { FORWARD_PEER_HEADER, FORWARD_SECRET_HEADER, type Exchange } from './uws.js'

/** What a serving thread hands the main thread: its secret and the client, and a replica's proof passed through (the main thread checks it). */
export function threadProof(secret: string): Pick<ForwardTarget, 'proof' | 'strip'> {
  return {
    proof: (request) => ({ [FORWARD_SECRET_HEADER]: secret, [FORWARD_PEER_HEADER]: request.peer }),
    strip: new Set([FORWARD_SECRET_HEADER, FORWARD_PEER_HEADER]),
  }
}

/** Request headers that describe one connection, not the request: never handed on (RFC 9110 7.6.1). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'transfer-encoding'])
/** Response headers this side's own uWS writes (or must not repeat). */
const NOT_FORWARDED = new Set([...HOP_BY_HOP, 'content-length', 'date', 'uwebsockets'])
/** Answers up to this size are taken whole and sent in one piece; larger ones are streamed. */
const WHOLE_MAX_BYTES = 1 << 20
/** Methods sent again after a kept-alive connection was closed under them (safe: doing them twice changes nothing). */
const RETRIED = new Set(['GET', 'HEAD', 'OPTIONS'])
const NO_BODY: AsyncIterable<Uint8Array> = {
  [Symbol.asyncIterator]: () => ({ next: () => Promise.resolve({ done: true, value: undefined }) }),
}

/** The headers a cluster's replica proves a handed-on request with (checked by the primary: plinth/start.ts). */
export const CLUSTER_FORWARD_HEADER = 'x-plinth-cluster-forward'
export const CLUSTER_PEER_HEADER = 'x-plinth-cluster-peer'

/** A request as the proof of its hand-on covers it. */
export interface HandedOn {
  method: string
  /** The Host header as sent. */
  host: string
  /** Path and query as sent. */
  target: string
  /** The client's address (this side's peer, or the one a thread or proxy named). */
  peer: string
}

/**
 * Where requests go: a listener, the headers that prove to it where a request comes from (and name
 * its client), and what to say when it cannot be reached.
 */
export interface ForwardTarget {
  host: string
  port: number
  /** The headers added to each request handed on: a serving thread's secret, or a replica's signature. */
  proof: (request: HandedOn) => Record<string, string>
  /** Request headers never handed on from the client to this target (proofs a client sent itself). */
  strip: ReadonlySet<string>
  /** The log line when the listener cannot be reached. */
  unreachable: string
  /** What the client is told then (default: a 502 that says to try again), its headers (`Retry-After`) included. */
  failure?: ApiError
  /** A new connection not made within this long is given up as unreachable (default: the system's own, minutes). */
  connectMs?: number
  /**
   * Whether the target may be handed requests now; a promise while that is being found out (the request
   * waits, its body held), false: it is answered `failure`. Absent: always.
   */
  ready?: () => boolean | Promise<boolean>
}

/** A request in flight that `abandon` ended: the client is told `answer`. */
class Abandoned extends Error {
  constructor(readonly answer: ApiError) {
    super(answer.message)
  }
}

/**
 * Hands requests to `target()` (asked per request: a cluster's primary can change) with the client's
 * address and the secret that proves where they come from; the answer streams back.
 */
export class Forwarder {
  /** Connections kept alive; an idle one is closed after 5 s, before uWS's own 10 s would close it under a request. */
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 512, timeout: 5000 })
  /** Requests in flight, by the target they went to (`abandon`). */
  readonly #inflight = new Map<ForwardTarget, Set<ClientRequest>>()
  /**
   * Targets whose last request failed: the log says so once when one stops answering and once when it
   * answers again, not once a request (a failover handed 116 requests to a dead primary in 5.7 s).
   */
  readonly #unreachable = new WeakSet<ForwardTarget>()

  constructor(
    private readonly target: () => ForwardTarget | null,
    private readonly log: Logger,
  ) {}

  forward(exchange: Exchange): void {
    const target = this.target()
    if (target === null) {
      const failure = new ApiError(
        'unavailable',
        'No node of the cluster leads right now (an election is under way); try again in a few seconds',
        undefined,
        { 'retry-after': '2' },
      )
      counted('no_primary')
      return sendError(exchange, failure, this.log)
    }
    const query = exchange.query
    exchange.detach()
    const chunked = exchange.header('transfer-encoding') !== ''
    const body = chunked || exchange.header('content-length') !== '' ? exchange.deferBody() : null
    const headers: Record<string, string> = {}
    const given = exchange.captureHeaders()
    for (const name in given) if (!HOP_BY_HOP.has(name) && !target.strip.has(name)) headers[name] = given[name]!
    // A body without a length goes in chunks, whatever the method: Node frames a GET's body only when told,
    // and unframed bytes on a shared kept-alive connection would be read as the next request.
    if (chunked) {
      delete headers['content-length']
      headers['transfer-encoding'] = 'chunked'
    }
    const path = query === '' ? exchange.path : `${exchange.path}?${query}`
    const send = () => {
      Object.assign(
        headers,
        target.proof({ method: exchange.method, host: given['host'] ?? '', target: path, peer: exchange.remoteAddress() }),
      )
      this.#send(exchange, target, path, headers, body, 0)
    }
    const ready = target.ready?.() ?? true
    if (ready === true) return send()
    const refuse = () => {
      if (exchange.responded || exchange.aborted) return
      sendError(exchange, target.failure ?? new ApiError('unavailable', 'The server could not answer this request; try again'), this.log)
    }
    if (ready === false) return refuse()
    void ready.then(
      (ok) => (exchange.aborted ? undefined : ok ? send() : refuse()),
      () => refuse(),
    )
  }

  close(): void {
    this.#agent.destroy()
  }

  /**
   * Ends every request in flight to `target` (a cluster's primary that lost its lease answers nothing
   * more): each client gets `answer`.
   */
  abandon(target: ForwardTarget, answer: ApiError): void {
    const requests = this.#inflight.get(target)
    if (requests === undefined) return
    this.#inflight.delete(target)
    for (const upstream of requests) upstream.destroy(new Abandoned(answer))
  }

  /** One attempt (a request without a body gets a second on a kept-alive connection that was closed under it). */
  #send(
    exchange: Exchange,
    target: ForwardTarget,
    path: string,
    headers: Record<string, string>,
    body: DeferredBody | null,
    attempt: number,
  ): void {
    const upstream = request({
      host: target.host,
      port: target.port,
      method: exchange.method,
      path,
      headers,
      agent: this.#agent,
      setHost: false,
    })
    let inflight = this.#inflight.get(target)
    if (inflight === undefined) this.#inflight.set(target, (inflight = new Set()))
    inflight.add(upstream)
    upstream.once('close', () => inflight.delete(upstream))
    if (target.connectMs !== undefined) {
      const connectMs = target.connectMs
      upstream.once('socket', (socket) => {
        if (!socket.connecting) return
        const timer = setTimeout(
          () => socket.destroy(Object.assign(new Error(`no connection in ${connectMs} ms`), { code: 'ETIMEDOUT' })),
          connectMs,
        )
        socket.once('connect', () => clearTimeout(timer))
        socket.once('close', () => clearTimeout(timer))
      })
    }
    exchange.onAborted(() => upstream.destroy())
    upstream.on('response', (answer: IncomingMessage) => {
      counted('answered')
      if (this.#unreachable.delete(target)) this.log.info('answered again after failing', { what: target.unreachable })
      respond(exchange, answer)
    })
    upstream.on('error', (error: NodeJS.ErrnoException) => {
      if (exchange.responded || exchange.aborted) return
      if (error instanceof Abandoned) return (counted('abandoned'), sendError(exchange, error.answer, this.log))
      if (
        attempt === 0 &&
        body === null &&
        RETRIED.has(exchange.method) &&
        upstream.reusedSocket &&
        (error.code === 'ECONNRESET' || error.code === 'EPIPE')
      )
        return this.#send(exchange, target, path, headers, null, 1)
      counted('unreachable')
      if (!this.#unreachable.has(target)) {
        this.#unreachable.add(target)
        this.log.error(`${target.unreachable}; until it answers again, the requests that fail are not logged one by one`, {
          error: String(error),
        })
      }
      if (target.failure !== undefined) return sendError(exchange, target.failure, this.log)
      const failure = new ApiError('internal', 'The server could not answer this request; try again')
      exchange.send(502, { 'content-type': 'application/json; charset=utf-8' }, JSON.stringify(errorBody(failure)))
    })
    if (body === null) return void upstream.end()
    body
      // The other side judges the body (its limits, its 408 for a stalled one): this side waits longer than it would.
      .pipe(
        Number.MAX_SAFE_INTEGER,
        { write: (chunk) => upstream.write(chunk), onceDrained: (resume) => upstream.once('drain', resume) },
        2 * BODY_IDLE_MS,
      )
      .then(
        () => upstream.end(),
        (error: unknown) => upstream.destroy(error instanceof Error ? error : new Error(String(error))),
      )
  }
}

/** One request handed on, by outcome (/metrics: a replica's forwards to the primary). */
function counted(outcome: 'answered' | 'unreachable' | 'abandoned' | 'no_primary'): void {
  counters.forwarded.set(outcome, (counters.forwarded.get(outcome) ?? 0) + 1)
}

function respond(exchange: Exchange, answer: IncomingMessage): void {
  const status = answer.statusCode ?? 502
  const pairs: string[] = []
  const raw = answer.rawHeaders
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase()
    if (!NOT_FORWARDED.has(name)) pairs.push(name, raw[i + 1]!)
  }
  // The other side closes this connection after the answer (a refused upload, a stalled body): so does
  // this one with the client's. uWS says `Connection: close` itself on a keep-alive connection it
  // closes; a client that asked to close is told here.
  const closing = answer.headers.connection === 'close'
  const clientCloses = /\bclose\b/i.test(exchange.header('connection'))
  if (closing && clientCloses) pairs.push('connection', 'close')
  const declared = answer.headers['content-length']
  if (status === 304 || status === 204 || status < 200) {
    answer.resume()
    return exchange.sendBlock(statusLine(status), packHeaders(pairs.length === 0 ? ['cache-control', 'no-store'] : pairs), null)
  }
  const length = declared === undefined ? null : Number(declared)
  if (exchange.method === 'HEAD') {
    // No body comes: the connection stays open for the next request.
    answer.resume()
    return void exchange.sendStream(status, pairs, NO_BODY, length)
  }
  if (length !== null && length <= WHOLE_MAX_BYTES) {
    // An answer of known small size (nearly every API answer) goes whole.
    const chunks: Buffer[] = []
    answer.on('data', (chunk: Buffer) => chunks.push(chunk))
    answer.on('end', () => exchange.send(status, pairs, Buffer.concat(chunks), closing && !clientCloses))
    answer.on('error', () => exchange.send(502, { 'content-type': 'text/plain; charset=utf-8' }, 'The answer was cut off; try again\n'))
    return
  }
  void exchange.sendStream(status, pairs, answer, length).catch(() => undefined)
}
