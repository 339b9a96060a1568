import { DOOR, observeLatency, STATUS_CLASSES, traffic } from '../core/metrics.js'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js'
import { admitted } from './admission.js'
import { deferBodyStream, readWholeBody, type DeferredBody } from './exchange-body.js'
import { hostname, type Headers } from './headers.js'
import { statusLine } from './status-line.js'

export type { Headers } from './headers.js'

/**
 * The only module that knows uWebSockets.js. It loads the native binary itself (the package's
 * loader silently falls back to a slow pure-JS server; Plinth refuses to run on that), and wraps
 * each request in an Exchange that the rest of `http/` uses.
 */

const require = createRequire(import.meta.url)

interface UwsModule {
  App(): TemplatedApp
  us_listen_socket_close(socket: us_listen_socket): void
  us_socket_local_port(socket: us_listen_socket): number
}

function loadNative(): UwsModule {
  const dir = dirname(require.resolve('uWebSockets.js/package.json'))
  const file = join(dir, 'binaries', `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`)
  try {
    return require(file) as UwsModule
  } catch (error) {
    throw new Error(
      `the native uWebSockets.js binary did not load (${file}: ${(error as Error).message}); ` +
        'Plinth does not run on the pure-JS fallback. Use a Node.js version this package ships a binary for.',
    )
  }
}

let uws: UwsModule | undefined

/** `close` among a Connection header's options (RFC 9110 7.6.1: a comma-separated list, case-insensitive). */
const CLOSE_OPTION = /(?:^|,)\s*close\s*(?:,|$)/i

/** State only slow paths need (async API handlers), allocated on first use. */
interface Late {
  headers: Headers | null
  remote: string | null
  query: string | null
  abortHandlers: (() => void)[]
  detached: boolean
}

/**
 * One request and its response. Request headers are readable only during the synchronous part of
 * the handler, unless `captureHeaders()` was called then. Kept small: the hosting plane makes one
 * per request.
 */
export class Exchange {
  /** The method as sent (methods are case-sensitive, RFC 9110: "get" is not GET). */
  readonly method: string
  /** Path as sent (still percent-encoded), starting with `/`. */
  readonly path: string
  /** Host header with the port removed, as sent (hostnames compare case-insensitively). */
  readonly host: string
  aborted = false
  /** Headers written on whatever answer this exchange gets (CORS on the endpoints browsers may call). */
  alwaysHeaders: Headers | null = null
  /** Told the status of the answer as it is sent (tests check each against the OpenAPI document). */
  onResponse: ((status: number) => void) | null = null
  /** Where the request entered (core/metrics.ts DOOR), set by the dispatcher (`enter`): the metrics' `door` label. */
  door = 0
  /** When the answer's clock started (performance.now()): at `enter` for a timed door, else at `detach`; 0 when untimed. */
  #startedAt = 0
  /** The status class (1-5) of the answer sent, for its latency. */
  #statusClass = 0
  #responded = false
  #res: HttpResponse
  #req: HttpRequest | null
  #counter: { inflight: number } | null
  #late: Late | null = null

  constructor(res: HttpResponse, req: HttpRequest, counter: { inflight: number }, method: string) {
    this.#res = res
    this.#req = req
    this.#counter = counter
    counter.inflight++
    this.method = method
    this.path = req.getUrl()
    this.host = hostname(req.getHeader('host'))
    let hosts = 0
    let lengths = 0
    let close = false
    req.forEach((name, value) => {
      if (name === 'host') hosts++
      else if (name === 'content-length') lengths++
      else if (name === 'connection' && CLOSE_OPTION.test(value)) close = true
    })
    this.duplicateHost = hosts > 1
    this.repeatedLength = lengths > 1
    this.#closeAsked = close
  }

  /**
   * The client asked to close the connection (`Connection: close`): uWS closes it after the answer but,
   * the client having said it, writes no `Connection: close` of its own; without one a keep-alive
   * client (Node's agent, undici) pools the connection and sends its next request into the close
   * (ECONNRESET). RFC 9112 9.6: the server SHOULD say it, so every answer to such a request does.
   */
  readonly #closeAsked: boolean

  /** The request carried more than one Host header (answered 400 before any routing). */
  readonly duplicateHost: boolean
  /** The request carried more than one Content-Length header, equal or not (answered 400 before any routing). */
  readonly repeatedLength: boolean

  #slow(): Late {
    return (this.#late ??= { headers: null, remote: null, query: null, abortHandlers: [], detached: false })
  }

  /** Raw query string without `?`; readable during the synchronous part of the handler. */
  get query(): string {
    const late = this.#slow()
    if (late.query === null) {
      if (this.#req === null) throw new Error('query read after the synchronous part of the handler')
      late.query = this.#req.getQuery() ?? ''
    }
    return late.query
  }

  /** A request header (lowercase name), '' when absent. */
  header(name: string): string {
    const captured = this.#late?.headers
    if (captured != null) return captured[name] ?? ''
    if (this.#req === null) throw new Error(`header ${name} read after the synchronous part of the handler`)
    return this.#req.getHeader(name)
  }

  /** Copies every request header so they stay readable after an await. */
  captureHeaders(): Headers {
    const late = this.#slow()
    if (late.headers === null) {
      const headers: Headers = {}
      this.#req?.forEach((key, value) => {
        headers[key] = headers[key] === undefined ? value : `${headers[key]}, ${value}`
      })
      late.headers = headers
    }
    return late.headers
  }

  /**
   * The peer address is the one a serving thread forwarded this request for (serve-thread.ts), not the
   * thread's own loopback connection; set by `listen` only after the request proved it came from a thread.
   */
  forwardedFor(address: string): void {
    this.#slow().remote = address
  }

  /** The peer address as text. */
  remoteAddress(): string {
    const late = this.#slow()
    if (late.remote === null) late.remote = Buffer.from(this.#res.getRemoteAddressAsText()).toString()
    return late.remote
  }

  get responded(): boolean {
    return this.#responded
  }

  /**
   * The door the dispatcher sends the request through. Every answer of a door but the hosting plane's
   * is timed from here (the hosting plane's prepared files are answered synchronously in microseconds;
   * its asynchronous answers are timed from `detach`).
   */
  enter(door: number): void {
    this.door = door
    if (door !== DOOR.hosting) this.#startedAt = performance.now()
  }

  /** Marks the exchange asynchronous: from now on only captured headers are readable. */
  detach(): void {
    const late = this.#slow()
    if (late.detached) return
    late.detached = true
    if (this.#startedAt === 0) this.#startedAt = performance.now()
    this.captureHeaders()
    this.remoteAddress()
    this.#req = null
    this.#res.onAborted(() => {
      this.aborted = true
      for (const handler of late.abortHandlers) handler()
      this.#finish()
    })
  }

  onAborted(handler: () => void): void {
    this.#slow().abortHandlers.push(handler)
  }

  /**
   * Reads the whole body, at most `limitBytes`. Call `detach()` first. Rejects with 413 as soon as
   * the declared or received length passes the limit, and with 408 when the body stops arriving for
   * BODY_IDLE_MS. A client still sending must see the 413, not a reset (EPIPE): on a keep-alive
   * connection uWS discards the rest of a refused body by itself; a client that asked to close the
   * connection is closed right after the answer, so its body is drained first (up to DRAIN_MAX_BYTES).
   */
  readBody(limitBytes: number): Promise<Buffer> {
    return readWholeBody(this, (handler) => this.#res.onData(handler), limitBytes)
  }

  /**
   * Takes the body for reading later, chunk by chunk (never held whole): uWS hands body data only to
   * a handler attached while the request is being dispatched, so the data handler is attached now
   * and the socket paused until `pipe` gives the sink. Call `detach()` first. `pipe` resolves with the
   * bytes received once the body ended and the sink took it all; it rejects with 413 past
   * `limitBytes`, 408 when the body stops arriving for BODY_IDLE_MS, or the sink's error. A sink's
   * `write` returning false pauses the socket until its drain.
   */
  deferBody(): DeferredBody {
    return deferBodyStream(this, {
      onData: (handler) => this.#res.onData(handler),
      pause: () => this.#pause(),
      resume: () => this.#resume(),
    })
  }

  #paused = false

  #pause(): void {
    // Never after the answer ended: uWS may have freed the response (a closed connection) by then.
    if (this.#paused || this.aborted || this.#counter === null) return
    this.#paused = true
    this.#res.pause()
  }

  #resume(): void {
    if (!this.#paused || this.aborted || this.#counter === null) return
    this.#paused = false
    this.#res.resume()
  }

  /**
   * Streams a response body from `source` with backpressure: `size` bytes exactly (Content-Length,
   * written by uWS), or, when null, chunked until the source ends. For HEAD only the headers (with
   * the length when known). Stops reading the source when the client goes away.
   */
  async sendStream(
    status: number,
    /** By name, or as a flat list of name, value pairs (a name may repeat: Set-Cookie). */
    headers: Headers | readonly string[],
    source: AsyncIterable<Uint8Array> & { destroy?(): void },
    size: number | null,
  ): Promise<void> {
    if (this.aborted || this.#responded) {
      source.destroy?.()
      return
    }
    this.#responded = true
    this.onResponse?.(status)
    this.#count(status, 0)
    const res = this.#res
    res.cork(() => {
      res.writeStatus(statusLine(status))
      if (isPairs(headers)) for (let i = 0; i < headers.length; i += 2) res.writeHeader(headers[i]!, headers[i + 1]!)
      else for (const name in headers) res.writeHeader(name, headers[name])
      if (this.alwaysHeaders !== null) for (const name in this.alwaysHeaders) res.writeHeader(name, this.alwaysHeaders[name])
      if (this.#closeAsked) res.writeHeader('connection', 'close')
      if (this.method === 'HEAD') endHead(res, size ?? 0)
      else if (size === 0) res.end()
    })
    if (this.method === 'HEAD' || size === 0) {
      source.destroy?.()
      this.#finish()
      return
    }
    try {
      for await (const chunk of source) {
        if (this.aborted) break
        await this.#write(chunk, size)
        if (this.aborted) break
      }
      if (!this.aborted && size === null) res.cork(() => res.end())
    } catch (error) {
      // The source failed part way: the client must not wait for the rest of a body that never comes.
      if (!this.aborted) res.close()
      throw error
    } finally {
      source.destroy?.()
      this.#finish()
    }
  }

  /** One chunk of a streamed body, waiting while the socket is full. */
  #write(chunk: Uint8Array, size: number | null): Promise<void> {
    const res = this.#res
    traffic.bytes[this.door]! += chunk.byteLength
    if (size === null) {
      // write() buffers what it cannot send: false only says to wait before the next.
      let ok = true
      res.cork(() => (ok = res.write(chunk)))
      if (ok) return Promise.resolve()
      return new Promise((resolve) => {
        this.onAborted(resolve)
        res.onWritable(() => {
          resolve()
          return true
        })
      })
    }
    const start = res.getWriteOffset()
    let result: [boolean, boolean] = [true, false]
    res.cork(() => (result = res.tryEnd(chunk, size)))
    if (result[0] || result[1]) return Promise.resolve()
    // tryEnd keeps nothing it could not send: the rest is offered again as the socket drains.
    return new Promise((resolve) => {
      this.onAborted(resolve)
      res.onWritable((offset) => {
        const [ok, done] = res.tryEnd(chunk.subarray(offset - start), size)
        if (ok || done) resolve()
        return ok
      })
    })
  }

  /** Writes a whole response (headers by name, or as name, value pairs). Does nothing if the client went away or a response was sent. */
  /** `body` null: an answer that has none (a 204, a 304), sent without a Content-Length (and `closeConnection` not honoured). */
  send(status: number, headers: Headers | readonly string[], body?: string | Uint8Array | null, closeConnection = false): void {
    if (this.aborted || this.#responded) return
    this.#responded = true
    this.onResponse?.(status)
    this.#count(status, body == null || this.method === 'HEAD' ? 0 : byteLength(body))
    // A body still held back (an upload refused before it was read) is let go: uWS drops the rest.
    this.#resume()
    this.#res.cork(() => {
      this.#res.writeStatus(statusLine(status))
      if (isPairs(headers)) for (let i = 0; i < headers.length; i += 2) this.#res.writeHeader(headers[i]!, headers[i + 1]!)
      else for (const name in headers) this.#res.writeHeader(name, headers[name])
      if (this.alwaysHeaders !== null) for (const name in this.alwaysHeaders) this.#res.writeHeader(name, this.alwaysHeaders[name])
      if (this.#closeAsked && (isPairs(headers) ? !headers.includes('connection') : headers.connection === undefined))
        this.#res.writeHeader('connection', 'close')
      // No arguments: this uWS writes a Content-Length of 2^63 when handed an undefined length.
      if (body === null) this.#res.endWithoutBody()
      else if (this.method === 'HEAD') endHead(this.#res, body === undefined ? 0 : byteLength(body))
      else this.#res.end(body ?? '', closeConnection)
    })
    this.#finish()
  }

  /**
   * The hosting plane's response: a status line, a header block prepared ahead of time (one
   * `[name, value]` pair carrying every header), optional extra pairs, and a body (for HEAD only its
   * length; null: no body at all, as for 304).
   */
  sendBlock(
    status: Uint8Array | string,
    headers: readonly [Uint8Array, Uint8Array],
    body: Uint8Array | string | null,
    extra?: readonly string[],
  ): void {
    if (this.aborted || this.#responded) return
    this.#responded = true
    // One increment and one add: the status line's first digit is its class.
    this.#statusClass = (typeof status === 'string' ? status.charCodeAt(0) : status[0]!) - 48
    traffic.responses[this.door * STATUS_CLASSES + this.#statusClass]!++
    if (body !== null && this.method !== 'HEAD') traffic.bytes[this.door]! += typeof body === 'string' ? body.length : body.byteLength
    // uWS corks the synchronous part of a handler by itself; only a late answer needs cork().
    if (this.#req !== null) this.#writeBlock(status, headers, body, extra)
    else this.#res.cork(() => this.#writeBlock(status, headers, body, extra))
    this.#finish()
  }

  #writeBlock(
    status: Uint8Array | string,
    headers: readonly [Uint8Array, Uint8Array],
    body: Uint8Array | string | null,
    extra?: readonly string[],
  ): void {
    const res = this.#res
    res.writeStatus(status)
    res.writeHeader(headers[0], headers[1])
    if (extra !== undefined) for (let i = 0; i < extra.length; i += 2) res.writeHeader(extra[i], extra[i + 1])
    if (this.#closeAsked) res.writeHeader('connection', 'close')
    if (body === null) res.endWithoutBody()
    else if (this.method === 'HEAD') endHead(res, typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength)
    else res.end(body)
  }

  /** A response's status class and body bytes (streamed bodies add theirs as they are written). */
  #count(status: number, bytes: number): void {
    this.#statusClass = Math.min(5, Math.max(1, Math.floor(status / 100)))
    traffic.responses[this.door * STATUS_CLASSES + this.#statusClass]!++
    traffic.bytes[this.door]! += bytes
  }

  #finish(): void {
    if (this.#counter !== null) this.#counter.inflight--
    this.#counter = null
    // A client gone before any answer has no status to file it under.
    if (this.#startedAt !== 0 && this.#statusClass !== 0)
      observeLatency(this.door, this.#statusClass, (performance.now() - this.#startedAt) / 1000)
    this.#startedAt = 0
  }
}

/**
 * Ends a HEAD response: its headers with the length of the body a GET would carry, and no body.
 * In this uWS build `end(body)` sends the body even for HEAD (corrupting keep-alive connections), and
 * `endWithoutBody(n)` waits for n more bytes and never completes; `endWithoutBody()` without a length
 * ends at once and writes no Content-Length of its own, so the header is written here.
 */
function endHead(res: HttpResponse, length: number): void {
  res.writeHeader('content-length', String(length))
  res.endWithoutBody()
}

function isPairs(headers: Headers | readonly string[]): headers is readonly string[] {
  return Array.isArray(headers)
}

function byteLength(body: string | Uint8Array): number {
  return typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength
}

export interface HttpServer {
  readonly port: number
  /** Its socket is on the port (until `stopListening` or `closeAll`). */
  readonly listening: boolean
  /** Requests in flight. */
  readonly inflight: number
  /** Stops accepting connections; requests in flight go on. */
  stopListening(): void
  /** Closes every connection at once. */
  closeAll(): void
}

export type Handler = (exchange: Exchange) => void

export { FORWARD_PEER_HEADER, FORWARD_SECRET_HEADER } from './admission.js'

/**
 * Starts listening; `handler` gets every request of every method and path. With `forwardSecret`,
 * the listener is the main thread's loopback door for requests a serving thread hands on: each must
 * carry the secret (403 otherwise), and its client's address is the one the thread names. `peer` (a
 * cluster's nodes) looks at each request first, on either listener: one another node handed on, with
 * a signature that holds, is given the client that node names (`Exchange.forwardedFor`).
 */
export function listen(
  host: string,
  port: number,
  handler: Handler,
  onError: (error: unknown) => void,
  forwardSecret?: Buffer,
  peer?: (exchange: Exchange) => void,
): Promise<HttpServer> {
  uws ??= loadNative()
  const native = uws
  const app = native.App()
  const counter = { inflight: 0 }
  const serve = (exchange: Exchange) => {
    if (!admitted(exchange, forwardSecret, peer)) return
    try {
      handler(exchange)
    } catch (error) {
      onError(error)
      exchange.send(500, { 'content-type': 'application/json' }, JSON.stringify({ kind: 'internal', message: 'Internal error' }))
    }
    if (!exchange.responded && !exchange.aborted) exchange.detach()
  }
  // uWS routes by method natively: GET and HEAD (nearly all site traffic) skip reading the method.
  app.get('/*', (res, req) => serve(new Exchange(res, req, counter, 'GET')))
  app.head('/*', (res, req) => serve(new Exchange(res, req, counter, 'HEAD')))
  app.any('/*', (res, req) => serve(new Exchange(res, req, counter, req.getCaseSensitiveMethod())))
  return new Promise((resolve, reject) => {
    app.listen(host, port, (socket) => {
      if (socket === false) {
        reject(new Error(`could not listen on ${host}:${port} (address in use or not available)`))
        return
      }
      let listening = true
      resolve({
        port: native.us_socket_local_port(socket),
        get listening() {
          return listening
        },
        get inflight() {
          return counter.inflight
        },
        stopListening: () => {
          if (!listening) return
          listening = false
          native.us_listen_socket_close(socket)
        },
        closeAll: () => {
          listening = false
          ;(app as TemplatedApp & { close(): void }).close()
        },
      })
    })
  })
}
