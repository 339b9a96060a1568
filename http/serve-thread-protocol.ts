// What the main thread and a serving thread say to each other (structured-clone messages).
import type { ViewsReport } from '../actors/analytics/thread-views.js'
import type { ChannelKind, ServedFiles } from '../actors/website/snapshot.js'

/** What a serving thread starts with. */
export interface ServeThreadData {
  /** Its number (1 and up; the main thread is 0), and its slot in `joined`. */
  thread: number
  host: string
  port: number
  /**
   * Shared with the main thread: slot N holds the port thread N's socket got when told to listen (0:
   * its listen failed, -1: no answer yet), slot 0 counts the answers. The main thread waits on it
   * without returning to its event loop (ServeThreads.listen).
   */
  joined: Int32Array
  /** The main thread's loopback listener for requests a thread hands on. */
  internalPort: number
  /** Proves a handed-on request came from a thread (FORWARD_SECRET_HEADER). */
  secret: string
  dataDir: string
  /** This thread's share of PLINTH_CACHE_BYTES. */
  cacheBytes: number
  /** A cache tier is in front (PLINTH_PURGE_URLS): published files carry its headers. */
  sharedTier: boolean
  beacon: boolean
  countryHeader: string
  /** How often a thread reports its page views, traffic and the hosts it served. */
  reportMs: number
}

/** One change to a thread's copy of the hostname table. */
export type RouteOp =
  | {
      /** A channel is new or changed: what it serves and how. */
      op: 'channel'
      id: number
      kind: ChannelKind
      websiteId: string
      redirectOrigin: string | null
      sharing: boolean
      waiting: 'empty' | 'building' | null
      locked: boolean
      served: ServedFiles | null
    }
  /** A hostname now routes to a channel (id), or to none (null). */
  | { op: 'host'; host: string; id: number | null }
  /** No hostname routes to the channel any more: its snapshot lets go of its content. */
  | { op: 'drop'; id: number }

/** From the main thread. */
export type ThreadMessage =
  { t: 'routes'; seq: number; ops: RouteOp[] } | { t: 'listen' } | { t: 'report' } | { t: 'stop'; deadline: number } | { t: 'halt' }

/** From a serving thread. */
export type ThreadReport =
  /** Loaded, its database open: it listens when told. */
  | { t: 'ready' }
  /** What its listen gave: the port its socket got, or 0 and why not. */
  | { t: 'listened'; port: number; error: string | null }
  | { t: 'ack'; seq: number }
  | {
      t: 'report'
      /** Hostnames served since the last report. */
      used: string[]
      views: ViewsReport
      /** Hosting responses by status class (index 1-5) and body bytes since the last report. */
      traffic: { responses: number[]; bytes: number }
      /** The thread's content cache since start: hits, reads from LMDB, resident bytes. */
      cache: ThreadCache
    }
  | { t: 'log'; level: 'info' | 'warn' | 'error'; message: string; fields: Record<string, unknown> | undefined }

/** A serving thread's content cache, as the metrics count it. */
export interface ThreadCache {
  hits: number
  reads: number
  residentBytes: number
}

/** What the metrics read of each serving thread. */
export interface ThreadStats {
  /** Site responses it answered itself since start. */
  responses: number
  cache: ThreadCache
  /** Its socket is on the server's port now (plinth_serve_thread_listening). */
  listening: boolean
}

/** What the main thread's doors see of the serving threads (none: the main thread serves alone). */
export interface ServingThreads {
  /** Whether the main thread's socket is on the port now. */
  mainListening(): boolean
  /** What each thread answered itself, its content cache and whether it listens, thread 1 first. */
  stats(): ThreadStats[]
  /** Resolves once every thread sent the page views and traffic it counted so far. */
  gather(): Promise<void>
}

export const NO_SERVING_THREADS: ServingThreads = { mainListening: () => true, stats: () => [], gather: () => Promise.resolve() }

/** The slots a start's threads answer `listen` in (ServeThreadData.joined): -1 each, no answer yet. */
export function joinedSlots(count: number): Int32Array {
  const joined = new Int32Array(new SharedArrayBuffer(4 * (count + 1))).fill(-1)
  joined[0] = 0
  return joined
}

/** A thread's answer: the port its socket got (0: its listen failed), and the main thread woken. */
export function sayJoined(joined: Int32Array, thread: number, port: number): void {
  Atomics.store(joined, thread, port)
  Atomics.add(joined, 0, 1)
  Atomics.notify(joined, 0)
}

/**
 * Blocks (no event loop) until `count` threads answered or `deadline` (epoch ms) passed; returns the
 * port each got, thread 1 first (-1: no answer).
 */
export function awaitJoined(joined: Int32Array, count: number, deadline: number): number[] {
  for (let answers = Atomics.load(joined, 0); answers < count && Date.now() < deadline; answers = Atomics.load(joined, 0))
    Atomics.wait(joined, 0, answers, Math.max(1, deadline - Date.now()))
  return Array.from({ length: count }, (_, i) => Atomics.load(joined, i + 1))
}
