// A serving thread: its own uWS app on the server's port, answering site files from its own copy of the channels and handing every other request to the main thread.
import { request, Agent, type IncomingMessage } from 'node:http'
import { parentPort, workerData } from 'node:worker_threads'
import type { Database } from 'lmdb'
import { ThreadViews } from '../actors/analytics/thread-views.js'
import { ContentCache, type ContentSource } from '../actors/content-cache.js'
import { Channel } from '../actors/website/snapshot.js'
import { BODY_IDLE_MS } from '../core/limits.js'
import type { Logger } from '../core/log.js'
import { DOOR, STATUS_CLASSES, traffic } from '../core/metrics.js'
import { BlobFiles } from '../core/store/blob-files.js'
import { openEnvironment } from '../core/store/environment.js'
import { errorBody, ApiError } from '../core/errors.js'
import { SiteFiles } from './site-files.js'
import { statusLine } from './status-line.js'
import { packHeaders } from '../actors/website/snapshot.js'
import type { DeferredBody } from './exchange-body.js'
import { FORWARD_PEER_HEADER, FORWARD_SECRET_HEADER, listen, type Exchange, type HttpServer } from './uws.js'
import { sayJoined, type RouteOp, type ServeThreadData, type ThreadMessage, type ThreadReport } from './serve-thread-protocol.js'

/** Request headers that describe one connection, not the request: never handed on (RFC 9110 7.6.1). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'te', 'trailer', 'upgrade', 'transfer-encoding'])
/** Response headers the thread's own uWS writes (or must not repeat). */
const NOT_FORWARDED = new Set([...HOP_BY_HOP, 'content-length', 'date', 'uwebsockets'])
/** How long the sockets uWS closes get to finish closing before the thread ends. */
const CLOSE_SETTLE_MS = 100
/** Answers up to this size are taken whole from the main thread and sent in one piece; larger ones are streamed. */
const WHOLE_MAX_BYTES = 1 << 20

const data = workerData as ServeThreadData
const port = parentPort!

const log: Logger = {
  info: (message, fields) => port.postMessage({ t: 'log', level: 'info', message, fields } satisfies ThreadReport),
  warn: (message, fields) => port.postMessage({ t: 'log', level: 'warn', message, fields } satisfies ThreadReport),
  error: (message, fields) => port.postMessage({ t: 'log', level: 'error', message, fields } satisfies ThreadReport),
}

/** The published content this thread reads: the same LMDB environment and blob directory, read only. */
function contentSource(dataDir: string): ContentSource & { close(): void } {
  const env = openEnvironment(dataDir)
  const blobs = env.openDB<Buffer, string>({ name: 'blobs', encoding: 'binary' }) as Database<Buffer, string>
  const variants = env.openDB<Buffer, [string, string]>({ name: 'variants', encoding: 'binary' })
  const files = new BlobFiles(dataDir)
  return {
    hasBlob: (hash) => blobs.doesExist(hash),
    getBlob: (hash) => blobs.get(hash),
    hasVariant: (hash, encoding) => variants.doesExist([hash, encoding]),
    getVariant: (hash, encoding) => variants.get([hash, encoding]),
    files,
    close: () => void env.close(),
  }
}

const source = contentSource(data.dataDir)
const cache = new ContentCache(source, data.cacheBytes, data.sharedTier)
const views = new ThreadViews(data.beacon, data.countryHeader)
const files = new SiteFiles(views, log)
/** Hostname to channel, and channel by the main thread's number for it: the copy the main thread keeps in step. */
const hosts = new Map<string, Channel>()
const channels = new Map<number, Channel>()
/** Websites behind a password: their requests go to the main thread, which holds the passwords. */
const locked = new Set<string>()
/** Loopback connections to the main thread, kept alive; an idle one is closed after 5 s, before uWS's own 10 s would close it under a request. */
const agent = new Agent({ keepAlive: true, maxSockets: 512, timeout: 5000 })
/** Methods sent again after a loopback connection was closed under them (safe: doing them twice changes nothing). */
const RETRIED = new Set(['GET', 'HEAD', 'OPTIONS'])
const NO_BODY: AsyncIterable<Uint8Array> = {
  [Symbol.asyncIterator]: () => ({ next: () => Promise.resolve({ done: true, value: undefined }) }),
}

function apply(ops: readonly RouteOp[]): void {
  for (const op of ops) {
    if (op.op === 'channel') {
      const { id, kind, websiteId } = op
      let channel = channels.get(id)
      if (channel === undefined) channels.set(id, (channel = new Channel(kind, websiteId)))
      channel.redirectOrigin = op.redirectOrigin
      channel.sharing = op.sharing
      channel.waiting = op.waiting
      channel.point(op.served, cache)
      if (op.locked) locked.add(websiteId)
      else locked.delete(websiteId)
    } else if (op.op === 'host') {
      const channel = op.id === null ? undefined : channels.get(op.id)
      if (channel === undefined) hosts.delete(op.host)
      else hosts.set(op.host, channel)
    } else {
      channels.get(op.id)?.point(null, cache)
      channels.delete(op.id)
    }
  }
}

/**
 * The thread's one decision: a GET or HEAD of a site's file, on a host whose channel serves a
 * snapshot and has no password, is answered here; everything else (the API, MCP, the dashboard,
 * forms, the platform's routes, storage sites, passwords, a host not in memory yet) goes to the main thread.
 */
function dispatch(exchange: Exchange): void {
  const channel = hosts.get(exchange.host)
  if (
    channel !== undefined &&
    (exchange.method === 'GET' || exchange.method === 'HEAD') &&
    channel.redirectOrigin === null &&
    !channel.sharing &&
    (locked.size === 0 || !locked.has(channel.websiteId)) &&
    (!exchange.path.startsWith('/_platform/') || exchange.path.startsWith('/_platform/assets/'))
  ) {
    const snapshot = channel.snapshot
    if (snapshot !== null) {
      exchange.door = DOOR.hosting
      try {
        return files.serve(exchange, channel, snapshot, false)
      } catch (error) {
        // Content the main thread let go of a moment ago (a purge, a rebuild) whose change is on its way here: it answers instead.
        if (exchange.responded) throw error
        log.warn('a serving thread could not read a site file; the main thread answers', { host: exchange.host, error: String(error) })
        exchange.door = DOOR.other
      }
    }
  }
  forward(exchange)
}

/** Hands a request to the main thread's loopback listener and streams its answer back, both ways with backpressure. */
function forward(exchange: Exchange): void {
  const query = exchange.query
  exchange.detach()
  const chunked = exchange.header('transfer-encoding') !== ''
  const body = chunked || exchange.header('content-length') !== '' ? exchange.deferBody() : null
  const headers: Record<string, string> = {}
  const given = exchange.captureHeaders()
  for (const name in given)
    if (!HOP_BY_HOP.has(name) && name !== FORWARD_SECRET_HEADER && name !== FORWARD_PEER_HEADER) headers[name] = given[name]!
  // A body without a length goes in chunks, whatever the method: Node frames a GET's body only when told,
  // and unframed bytes on the shared loopback connection would be read as the next request.
  if (chunked) {
    delete headers['content-length']
    headers['transfer-encoding'] = 'chunked'
  }
  headers[FORWARD_SECRET_HEADER] = data.secret
  headers[FORWARD_PEER_HEADER] = exchange.remoteAddress()
  send(exchange, query === '' ? exchange.path : `${exchange.path}?${query}`, headers, body, 0)
}

/** One attempt at handing a request on (a request without a body gets a second on a loopback connection that was closed under it). */
function send(exchange: Exchange, path: string, headers: Record<string, string>, body: DeferredBody | null, attempt: number): void {
  const upstream = request({
    host: '127.0.0.1',
    port: data.internalPort,
    method: exchange.method,
    path,
    headers,
    agent,
    setHost: false,
  })
  exchange.onAborted(() => upstream.destroy())
  upstream.on('response', (answer: IncomingMessage) => respond(exchange, answer))
  upstream.on('error', (error: NodeJS.ErrnoException) => {
    if (exchange.responded || exchange.aborted) return
    // A kept-alive loopback connection the main thread closed as it was reused: a safe request is sent again once.
    if (
      attempt === 0 &&
      body === null &&
      RETRIED.has(exchange.method) &&
      upstream.reusedSocket &&
      (error.code === 'ECONNRESET' || error.code === 'EPIPE')
    )
      return send(exchange, path, headers, null, 1)
    log.error('a serving thread could not reach the main thread', { error: String(error) })
    const failure = new ApiError('internal', 'The server could not answer this request; try again')
    exchange.send(502, { 'content-type': 'application/json; charset=utf-8' }, JSON.stringify(errorBody(failure)))
  })
  if (body === null) return void upstream.end()
  body
    // The main thread judges the body (its limits, its 408 for a stalled one): this side waits longer than it would.
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

function respond(exchange: Exchange, answer: IncomingMessage): void {
  const status = answer.statusCode ?? 502
  const pairs: string[] = []
  const raw = answer.rawHeaders
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]!.toLowerCase()
    if (!NOT_FORWARDED.has(name)) pairs.push(name, raw[i + 1]!)
  }
  // The main thread closes this connection after the answer (a refused upload, a stalled body): so
  // does this one with the client's. uWS says `Connection: close` itself on a keep-alive connection it
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
    // No body comes: the loopback connection stays open for the next request.
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
  void exchange.sendStream(status, pairs, answer, length).catch((error: unknown) => {
    log.error('a serving thread could not stream an answer; the connection was closed', { error: String(error) })
  })
}

/** The hosting door's responses and bytes since the last report (requests handed on are counted by the main thread). */
function takeTraffic(): { responses: number[]; bytes: number } {
  const responses: number[] = []
  for (let c = 0; c < STATUS_CLASSES; c++) {
    const at = DOOR.hosting * STATUS_CLASSES + c
    responses.push(traffic.responses[at]!)
    traffic.responses[at] = 0
  }
  const bytes = traffic.bytes[DOOR.hosting]!
  traffic.bytes[DOOR.hosting] = 0
  return { responses, bytes }
}

/** Once a period: which hosts were served (so the main thread keeps their websites in memory), the page views, the traffic. */
function report(): void {
  const used: string[] = []
  for (const [host, channel] of hosts) {
    if (!channel.used) continue
    channel.used = false
    used.push(host)
  }
  const { hits, reads, residentBytes } = cache.stats()
  port.postMessage({
    t: 'report',
    used,
    views: views.take(),
    traffic: takeTraffic(),
    cache: { hits, reads, residentBytes },
  } satisfies ThreadReport)
}

/**
 * Lets uWS finish closing the sockets `closeAll` closed: a thread that ends while one of their poll
 * handles is still open aborts the whole process (Node checks a worker's loop is empty when it ends).
 */
function closed(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, CLOSE_SETTLE_MS))
}

/** Its socket on the server's port, once the main thread said to listen (start.ts opens the port on every thread at once). */
let server: HttpServer | null = null
const timer = setInterval(report, data.reportMs)

/** Joins the server's port and says what its socket got, in `data.joined` (the main thread waits on it) and as a message. */
function join(): void {
  if (server !== null) return
  const said = (got: number, error: string | null) => {
    sayJoined(data.joined, data.thread, got)
    port.postMessage({ t: 'listened', port: got, error } satisfies ThreadReport)
  }
  listen(data.host, data.port, dispatch, (error) => log.error('request handler failed', { error: String(error) })).then(
    (listening) => {
      server = listening
      said(listening.port, null)
    },
    (error: unknown) => said(0, String(error)),
  )
}

port.on('message', (message: ThreadMessage) => {
  if (message.t === 'routes') {
    apply(message.ops)
    port.postMessage({ t: 'ack', seq: message.seq } satisfies ThreadReport)
    return
  }
  if (message.t === 'listen') return join()
  if (message.t === 'report') return report()
  if (message.t === 'halt') {
    // After an uncaught exception on the main thread: no drain, no report; the process ends right after.
    server?.closeAll()
    clearInterval(timer)
    void closed().then(() => {
      source.close()
      port.close()
    })
    return
  }
  // Stop: no new connections; requests in flight finish (up to the server's drain deadline), the last report goes, then the thread ends.
  const deadline = message.deadline
  server?.stopListening()
  void (async () => {
    while (server !== null && server.inflight > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
    server?.closeAll()
    clearInterval(timer)
    await closed()
    report()
    agent.destroy()
    for (const channel of channels.values()) channel.point(null, cache)
    source.close()
    port.close()
  })()
})
port.postMessage({ t: 'ready' } satisfies ThreadReport)
