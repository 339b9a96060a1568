// What the main thread and a serving thread say to each other (structured-clone messages).
import type { ViewsReport } from '../actors/analytics/thread-views.js'
import type { ChannelKind, ServedFiles } from '../actors/website/snapshot.js'

/** What a serving thread starts with. */
export interface ServeThreadData {
  host: string
  port: number
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
export type ThreadMessage = { t: 'routes'; seq: number; ops: RouteOp[] } | { t: 'report' } | { t: 'stop'; deadline: number } | { t: 'halt' }

/** From a serving thread. */
export type ThreadReport =
  | { t: 'listening' }
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
}

/** What the main thread's doors see of the serving threads (none: the main thread serves alone). */
export interface ServingThreads {
  /** What each thread answered itself and its content cache, thread 1 first. */
  stats(): ThreadStats[]
  /** Resolves once every thread sent the page views and traffic it counted so far. */
  gather(): Promise<void>
}

export const NO_SERVING_THREADS: ServingThreads = { stats: () => [], gather: () => Promise.resolve() }
