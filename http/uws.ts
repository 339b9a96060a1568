import { createServer } from 'node:net'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { HttpRequest, HttpResponse, TemplatedApp, us_listen_socket } from 'uWebSockets.js'
import { ApiError } from '../core/errors.js'
import { BODY_IDLE_MS } from '../core/limits.js'

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

const STATUS_TEXT: Record<number, string> = {
  200: '200 OK',
  201: '201 Created',
  202: '202 Accepted',
  204: '204 No Content',
  206: '206 Partial Content',
  301: '301 Moved Permanently',
  302: '302 Found',
  304: '304 Not Modified',
  307: '307 Temporary Redirect',
  308: '308 Permanent Redirect',
  400: '400 Bad Request',
  401: '401 Unauthorized',
  402: '402 Payment Required',
  403: '403 Forbidden',
  404: '404 Not Found',
  405: '405 Method Not Allowed',
  408: '408 Request Timeout',
  406: '406 Not Acceptable',
  409: '409 Conflict',
  410: '410 Gone',
  413: '413 Payload Too Large',
  415: '415 Unsupported Media Type',
  416: '416 Range Not Satisfiable',
  422: '422 Unprocessable Content',
  429: '429 Too Many Requests',
  303: '303 See Other',
  500: '500 Internal Server Error',
  502: '502 Bad Gateway',
  503: '503 Service Unavailable',
}

/** How much of a refused body is read and dropped, for a client that will be closed after the 413. */
const DRAIN_MAX_BYTES = 64 << 20

/** The status line text for a code. */
export function statusLine(status: number): string {
  return STATUS_TEXT[status] ?? `${status} Status`
}

export type Headers = Record<string, string>

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
    req.forEach((name) => {
      if (name === 'host') hosts++
    })
    this.duplicateHost = hosts > 1
  }

  /** The request carried more than one Host header (answered 400 before any routing). */
  readonly duplicateHost: boolean

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

  /** The peer address as text. */
  remoteAddress(): string {
    const late = this.#slow()
    if (late.remote === null) late.remote = Buffer.from(this.#res.getRemoteAddressAsText()).toString()
    return late.remote
  }

  get responded(): boolean {
    return this.#responded
  }

  /** Marks the exchange asynchronous: from now on only captured headers are readable. */
  detach(): void {
    const late = this.#slow()
    if (late.detached) return
    late.detached = true
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
    const declared = Number(this.header('content-length') || '0')
    const closing = /\bclose\b/i.test(this.header('connection'))
    return new Promise((resolve, reject) => {
      if (declared > limitBytes && !closing) {
        reject(tooLarge(limitBytes))
        return
      }
      const chunks: Buffer[] = []
      let size = 0
      let refused = declared > limitBytes
      let settled = false
      const settle = (fail: unknown, body?: Buffer) => {
        settled = true
        clearTimeout(idle)
        if (body === undefined) reject(fail)
        else resolve(body)
      }
      const stalled = () =>
        settle(
          new ApiError(
            'request_timeout',
            `The request body stopped arriving: nothing for ${BODY_IDLE_MS / 1000} s after ${size} of ${declared || 'an unknown number of'} bytes; send the whole body without pausing`,
          ),
        )
      let idle = setTimeout(stalled, BODY_IDLE_MS)
      this.onAborted(() => settled || settle(new Error('request aborted')))
      this.#res.onData((chunk, isLast) => {
        // After an answer uWS goes on delivering the rest of the body; it is dropped.
        if (settled) return
        size += chunk.byteLength
        if (size > limitBytes && !refused) {
          if (!closing) return settle(tooLarge(limitBytes))
          refused = true
        }
        if (refused) {
          if (isLast || size > limitBytes + DRAIN_MAX_BYTES) settle(tooLarge(limitBytes))
        } else if (isLast) {
          // uWS neuters the ArrayBuffer after the callback: copy it.
          chunks.push(Buffer.from(Buffer.from(chunk)))
          return settle(null, chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size))
        } else chunks.push(Buffer.from(Buffer.from(chunk)))
        clearTimeout(idle)
        if (!settled) idle = setTimeout(stalled, BODY_IDLE_MS)
      })
    })
  }

  /**
   * Takes the body for reading later, chunk by chunk (never held whole): uWS hands body data only to
   * a handler attached while the request is being dispatched, so the data handler is attached now
   * and the socket paused until `pipe` gives the sink. Call `detach()` first. `pipe` resolves with the
   * bytes received once the body ended and the sink took it all; it rejects with 413 past
   * `limitBytes`, 408 when the body stops arriving for BODY_IDLE_MS, or the sink's error. A sink's
   * `write` returning false pauses the socket until its drain.
   */
  deferBody(): {
    pipe(limitBytes: number, sink: { write(chunk: Buffer): boolean; onceDrained(resume: () => void): void }): Promise<number>
  } {
    const early: Buffer[] = []
    let ended = false
    let size = 0
    let deliver: ((chunk: Buffer, isLast: boolean) => void) | null = null
    this.#pause()
    this.#res.onData((chunk, isLast) => {
      // uWS neuters the ArrayBuffer after the callback: copy it.
      const copy = Buffer.from(Buffer.from(chunk))
      if (deliver !== null) return deliver(copy, isLast)
      early.push(copy)
      if (isLast) ended = true
    })
    return {
      pipe: (limitBytes, sink) =>
        new Promise<number>((resolve, reject) => {
          let settled = false
          const settle = (fail: unknown) => {
            if (settled) return
            settled = true
            clearTimeout(idle)
            deliver = () => undefined
            if (fail === null) resolve(size)
            else reject(fail)
          }
          const stalled = () =>
            settle(
              new ApiError(
                'request_timeout',
                `The request body stopped arriving: nothing for ${BODY_IDLE_MS / 1000} s after ${size} bytes; send the rest with the offset the resume call answers`,
              ),
            )
          let idle = setTimeout(stalled, BODY_IDLE_MS)
          this.onAborted(() => settle(new Error('request aborted')))
          let waiting = false
          const take = (chunk: Buffer, isLast: boolean): void => {
            if (settled) return
            size += chunk.length
            if (size > limitBytes) return settle(tooLarge(limitBytes))
            const more = chunk.length === 0 ? true : sink.write(chunk)
            clearTimeout(idle)
            if (isLast) return settle(null)
            idle = setTimeout(stalled, BODY_IDLE_MS)
            if (!more && !waiting) {
              waiting = true
              this.#pause()
              sink.onceDrained(() => {
                waiting = false
                if (!settled && !this.aborted) this.#resume()
              })
            }
          }
          for (let i = 0; i < early.length; i++) take(early[i], ended && i === early.length - 1)
          if (early.length === 0 && ended) return settle(null)
          early.length = 0
          if (settled) return
          deliver = take
          if (!waiting) this.#resume()
        }),
    }
  }

  #paused = false

  #pause(): void {
    if (this.#paused || this.aborted) return
    this.#paused = true
    this.#res.pause()
  }

  #resume(): void {
    if (!this.#paused || this.aborted) return
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
    headers: Headers,
    source: AsyncIterable<Uint8Array> & { destroy?(): void },
    size: number | null,
  ): Promise<void> {
    if (this.aborted || this.#responded) {
      source.destroy?.()
      return
    }
    this.#responded = true
    this.onResponse?.(status)
    const res = this.#res
    res.cork(() => {
      res.writeStatus(statusLine(status))
      for (const name in headers) res.writeHeader(name, headers[name])
      if (this.alwaysHeaders !== null) for (const name in this.alwaysHeaders) res.writeHeader(name, this.alwaysHeaders[name])
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
    } finally {
      source.destroy?.()
      this.#finish()
    }
  }

  /** One chunk of a streamed body, waiting while the socket is full. */
  #write(chunk: Uint8Array, size: number | null): Promise<void> {
    const res = this.#res
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

  /** Writes a whole response. Does nothing if the client went away or a response was sent. */
  send(status: number, headers: Headers, body?: string | Uint8Array, closeConnection = false): void {
    if (this.aborted || this.#responded) return
    this.#responded = true
    this.onResponse?.(status)
    // A body still held back (an upload refused before it was read) is let go: uWS drops the rest.
    this.#resume()
    this.#res.cork(() => {
      this.#res.writeStatus(statusLine(status))
      for (const name in headers) this.#res.writeHeader(name, headers[name])
      if (this.alwaysHeaders !== null) for (const name in this.alwaysHeaders) this.#res.writeHeader(name, this.alwaysHeaders[name])
      if (this.method === 'HEAD') endHead(this.#res, body === undefined ? 0 : byteLength(body))
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
    if (body === null) res.endWithoutBody()
    else if (this.method === 'HEAD') endHead(res, typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength)
    else res.end(body)
  }

  #finish(): void {
    if (this.#counter !== null) this.#counter.inflight--
    this.#counter = null
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

/** The Host header without its port (case as sent). */
function hostname(host: string): string {
  let end = host.length
  if (host.charCodeAt(0) === 91 /* [ */) {
    const close = host.indexOf(']')
    end = close === -1 ? end : close + 1
  } else {
    const colon = host.indexOf(':')
    if (colon !== -1) end = colon
  }
  return end === host.length ? host : host.slice(0, end)
}

function byteLength(body: string | Uint8Array): number {
  return typeof body === 'string' ? Buffer.byteLength(body) : body.byteLength
}

function tooLarge(limitBytes: number): ApiError {
  return new ApiError('payload_too_large', `Request body is over the limit of ${limitBytes} bytes for this operation`, {
    limitBytes,
  })
}

export interface HttpServer {
  readonly port: number
  /** Requests in flight. */
  readonly inflight: number
  /** Stops accepting connections; requests in flight go on. */
  stopListening(): void
  /** Closes every connection at once. */
  closeAll(): void
}

export type Handler = (exchange: Exchange) => void

/**
 * Refuses a port another process holds. uWebSockets.js listens with SO_REUSEPORT, and the kernel lets
 * a second SO_REUSEPORT socket on a taken port "listen" too, splitting connections between the two
 * processes: a second server would seem to start and then answer half of every client's requests.
 * A plain socket (no SO_REUSEPORT) cannot bind a port any process listens on, so binding one for a
 * moment tells whether the port is free. Port 0 (any free port) needs no check.
 */
export function assertPortFree(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve()
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', (error: NodeJS.ErrnoException) => {
      const why =
        error.code === 'EADDRINUSE'
          ? 'is in use by another process (another Plinth, or any other server)'
          : `cannot be listened on (${error.code ?? error.message})`
      reject(new Error(`port ${port} on ${host} ${why}; stop that process, or set PORT to a free port`))
    })
    probe.listen({ host, port, exclusive: true }, () => probe.close(() => resolve()))
  })
}

/** Starts listening; `handler` gets every request of every method and path. */
export function listen(host: string, port: number, handler: Handler, onError: (error: unknown) => void): Promise<HttpServer> {
  uws ??= loadNative()
  const native = uws
  const app = native.App()
  const counter = { inflight: 0 }
  const serve = (exchange: Exchange) => {
    if (exchange.duplicateHost) {
      // RFC 9112 3.2: "A server MUST respond with a 400 (Bad Request) status code to any HTTP/1.1 request
      // message that lacks a Host header field and to any that contains more than one Host header field".
      exchange.send(
        400,
        { 'content-type': 'application/json; charset=utf-8', connection: 'close' },
        JSON.stringify({
          kind: 'validation',
          message: 'The request has more than one Host header; send exactly one',
          details: { field: 'headers.host' },
        }),
        true,
      )
      return
    }
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
      resolve({
        port: native.us_socket_local_port(socket),
        get inflight() {
          return counter.inflight
        },
        stopListening: () => native.us_listen_socket_close(socket),
        closeAll: () => (app as TemplatedApp & { close(): void }).close(),
      })
    })
  })
}
