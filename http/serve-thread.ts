// A serving thread: its own uWS app on the server's port, answering site files from its own copy of the channels and handing every other request to the main thread.
import { parentPort, workerData } from 'node:worker_threads'
import type { Database } from 'lmdb'
import { ThreadViews } from '../actors/analytics/thread-views.js'
import { ContentCache, type ContentSource } from '../actors/content-cache.js'
import { Channel } from '../actors/website/snapshot.js'
import type { Logger } from '../core/log.js'
import { DOOR, STATUS_CLASSES, traffic } from '../core/metrics.js'
import { BlobFiles } from '../core/store/blob-files.js'
import { openEnvironment } from '../core/store/environment.js'
import { SiteFiles } from './site-files.js'
import { Forwarder, threadProof, type ForwardTarget } from './forward.js'
import { listen, type Exchange, type HttpServer } from './uws.js'
import { sayJoined, type RouteOp, type ServeThreadData, type ThreadMessage, type ThreadReport } from './serve-thread-protocol.js'

/** How long the sockets uWS closes get to finish closing before the thread ends. */
const CLOSE_SETTLE_MS = 100

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
/** Everything the thread does not answer goes to the main thread's loopback listener. */
const mainThread: ForwardTarget = {
  host: '127.0.0.1',
  port: data.internalPort,
  ...threadProof(data.secret),
  unreachable: 'a serving thread could not reach the main thread',
}
const forwarder = new Forwarder(() => mainThread, log)
/** Hostname to channel, and channel by the main thread's number for it: the copy the main thread keeps in step. */
const hosts = new Map<string, Channel>()
const channels = new Map<number, Channel>()
/** Websites behind a password: their requests go to the main thread, which holds the passwords. */
const locked = new Set<string>()

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
    // A path a version's functions answer goes to the main thread, which runs them.
    if (snapshot !== null && (snapshot.functions === null || !snapshot.functions.rules.matches(exchange.path))) {
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
  forwarder.forward(exchange)
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
    forwarder.close()
    for (const channel of channels.values()) channel.point(null, cache)
    source.close()
    port.close()
  })()
})
port.postMessage({ t: 'ready' } satisfies ThreadReport)
