// The serving threads: started beside the main thread on its port, kept in step with its hostname table, their page views and traffic folded into its own.
import { Worker } from 'node:worker_threads'
import type { Registry } from '../actors/registry.js'
import type { RoutingWatcher } from '../actors/domains/hostnames.js'
import type { Logger } from '../core/log.js'
import { randomBytes } from 'node:crypto'
import { listen, type Exchange, type Handler, type HttpServer } from '../http/uws.js'
import { DOOR, STATUS_CLASSES, traffic } from '../core/metrics.js'
import { awaitJoined, joinedSlots } from '../http/serve-thread-protocol.js'
import { ThreadRoutes } from './thread-routes.js'
import type { ServeThreadData, ThreadCache, ThreadMessage, ThreadReport, ThreadStats } from '../http/serve-thread-protocol.js'

/** How often a thread reports page views, traffic and the hosts it served (the beacon folds once a second too). */
const REPORT_MS = 1000
/** The longest an API answer waits for every thread to take a routing change before it goes anyway (and says so in the log). */
const SETTLE_MAX_MS = 2000

/** How often a thread's slot is started again, and the longest pause before it is. */
const RESTARTS_MAX = 10
const RESTART_PAUSE_MAX_MS = 30_000
/** The longest a halt waits for a thread to end. */
const HALT_MAX_MS = 1000
/** The longest the start waits for a ready thread to say it listens (it takes a millisecond; longer, it is stuck). */
const LISTEN_MAX_MS = 10_000
/** The longest the beacon waits for the threads' page views before it folds without them (they come with the next report). */
const GATHER_MAX_MS = 1000

interface Thread {
  readonly worker: Worker
  acked: number
  /** Counted in `settled` (a thread started again joins once it applied the whole table). */
  joined: boolean
  /** The batch that brought a restarted thread the whole table (-1: not sent yet). */
  joinSeq: number
  /** Ended: nothing is sent to it, nothing waits on it. */
  dead: boolean
  /** Its socket is on the server's port (plinth_serve_thread_listening). */
  listening: boolean
  /** Times its slot was started again. */
  restarts: number
  /** Told when the thread's next report arrives. */
  reported: (() => void)[]
  /** Hosting responses its slot answered since start (plinth_serve_thread_responses_total; carried over a restart). */
  responses: number
  /** Its content cache, as of its last report. */
  cache: ThreadCache
}

/** What the threads are started with; the rest of ServeThreadData comes from the registry's cache and the loopback listener. */
export type ServeThreadOptions = Pick<ServeThreadData, 'host' | 'port' | 'dataDir' | 'beacon' | 'countryHeader'> & {
  /** A cluster's check of a request another node handed on (a thread passes the proof through to the loopback listener). */
  peer?: (exchange: Exchange) => void
  /** Threads beside the main thread (PLINTH_SERVE_THREADS - 1). */
  count: number
  /** The main thread's dispatcher, which answers what the threads hand on. */
  dispatch: Handler
}

/**
 * The main thread's side of the serving threads. Every change to what a hostname serves (the
 * hostname table's watcher: routes, a version pointed, a password) is sent to every thread as one
 * batch of route operations at the end of the tick it happened in; `settled` lets the API answer
 * only once every thread has applied the last batch, so a publish is visible on every thread when
 * its answer arrives. Reports from the threads keep the websites they serve in memory (the channel's
 * `used`), and bring their page views to the beacon and their traffic to the metrics.
 */
export class ServeThreads implements RoutingWatcher {
  readonly #threads: Thread[] = []
  readonly #registry: Registry
  readonly #log: Logger
  /** The routing table as the threads were told it, and what changed since (thread-routes.ts). */
  readonly #routes: ThreadRoutes
  #scheduled = false
  #seq = 0
  #waiters: { seq: number; resolve: () => void }[] = []
  #stopping: Promise<void> | null = null

  readonly #data: Omit<ServeThreadData, 'thread'>
  /** The main thread's loopback listener: what the threads hand on, with the start's secret. */
  readonly #loopback: HttpServer
  /** Set by stop and halt: a thread that ends is not started again. */
  #ending = false
  /** Set once every thread listened: a thread started again listens as soon as it is ready. */
  #open = false

  private constructor(registry: Registry, log: Logger, data: Omit<ServeThreadData, 'thread'>, loopback: HttpServer) {
    this.#registry = registry
    this.#routes = new ThreadRoutes(registry.hostnames, registry.sitePasswords)
    this.#log = log
    this.#data = data
    this.#loopback = loopback
  }

  /**
   * Opens the loopback listener, starts `count` threads and waits until each is ready to listen on the
   * port (loaded, its database open: the slow part, before the port opens); the hostname table's
   * watcher from then on. `listen` puts them on the port. Each thread's cache is the same share of
   * PLINTH_CACHE_BYTES as the main thread's, and tells a cache tier what the main thread's does.
   */
  static async start(registry: Registry, log: Logger, options: ServeThreadOptions): Promise<ServeThreads> {
    const { count, dispatch, peer, ...given } = options
    const secret = randomBytes(32).toString('hex')
    const loopback = await listen(
      '127.0.0.1',
      0,
      dispatch,
      (error) => log.error('request handler failed', { error: String(error) }),
      Buffer.from(secret),
      peer,
    )
    const data: Omit<ServeThreadData, 'thread'> = {
      ...given,
      joined: joinedSlots(count),
      internalPort: loopback.port,
      secret,
      cacheBytes: registry.cache.limitBytes,
      sharedTier: registry.cache.sharedTier,
      reportMs: REPORT_MS,
    }
    const threads = new ServeThreads(registry, log, data, loopback)
    const started = Array.from({ length: count }, (_, i) => threads.#spawn(i + 1, null))
    const failed = (await Promise.allSettled(started)).find((r) => r.status === 'rejected')
    if (failed !== undefined) {
      await threads.halt()
      throw (failed as PromiseRejectedResult).reason
    }
    // What is routed already (nothing, on a fresh start; the table fills as sites are asked for).
    for (const [host] of registry.hostnames.routed()) threads.#routes.hostChanged(host)
    registry.hostnames.watcher = threads
    registry.beacon.gather = () => threads.gather()
    threads.#flush()
    return threads
  }

  /**
   * Puts every thread on the port the main thread's socket just got; throws, naming each thread that
   * did not listen there (the start fails). It blocks: the main thread, on the port already, accepts and
   * answers nothing until every thread is on it too (start.ts says why).
   */
  listen(port: number): void {
    for (const thread of this.#threads) thread.worker.postMessage({ t: 'listen' } satisfies ThreadMessage)
    const got = awaitJoined(this.#data.joined, this.#threads.length, Date.now() + LISTEN_MAX_MS)
    const failed = got.flatMap((answer, i) => {
      this.#threads[i]!.listening = answer === port
      if (answer === port) return []
      const why =
        answer === -1 ? `did not answer within ${LISTEN_MAX_MS / 1000} s` : answer === 0 ? 'could not listen' : `listened on port ${answer}`
      return [`thread ${i + 1} ${why}`]
    })
    if (failed.length > 0)
      throw new Error(`serving threads are not on ${this.#data.host}:${port}, where the main thread listens: ${failed.join('; ')}`)
    this.#open = true
  }

  /** Threads whose socket is on the port now. */
  listening(): number {
    return this.#threads.filter((t) => t.listening).length
  }

  /** The threads that are running. */
  #live(): Thread[] {
    return this.#threads.filter((t) => !t.dead)
  }

  /**
   * Starts thread `number` in its slot and resolves once it is ready to listen. A thread that ends
   * later, other than by `stop` or `halt`, is logged and started again after a pause that doubles each
   * time (up to RESTARTS_MAX times), with the whole routing table, and listens as soon as it has it;
   * its connections were lost, the others serve on.
   */
  #spawn(number: number, previous: Thread | null): Promise<Thread> {
    const worker = new Worker(new URL('../http/serve-thread.js', import.meta.url), {
      workerData: { ...this.#data, thread: number } satisfies ServeThreadData,
    })
    const thread: Thread = {
      worker,
      acked: 0,
      joined: previous === null,
      joinSeq: -1,
      dead: false,
      listening: false,
      restarts: previous === null ? 0 : previous.restarts + 1,
      reported: [],
      responses: previous?.responses ?? 0,
      cache: previous?.cache ?? { hits: 0, reads: 0, residentBytes: 0 },
    }
    this.#threads[number - 1] = thread
    worker.on('message', (message: ThreadReport) => this.#heard(thread, message))
    return new Promise((resolve, reject) => {
      let ready = false
      worker.on('error', (error) => this.#log.error('a serving thread failed', { thread: number, error: String(error) }))
      worker.on('message', (message: ThreadReport) => {
        if (message.t === 'listened') return this.#listened(thread, number, message.port, message.error)
        if (message.t !== 'ready') return
        ready = true
        if (previous !== null) this.#sendAll(thread)
        if (this.#open && !this.#ending) worker.postMessage({ t: 'listen' } satisfies ThreadMessage)
        resolve(thread)
      })
      worker.once('exit', (code) => {
        this.#gone(thread)
        if (!ready) reject(new Error(`serving thread ${number} ended (exit code ${code}) before it was ready to listen`))
        if (this.#ending || (!ready && previous === null)) return
        if (thread.restarts >= RESTARTS_MAX)
          return this.#log.error('a serving thread ended again; it is not started any more', { thread: number, code })
        const pauseMs = Math.min(RESTART_PAUSE_MAX_MS, 1000 * 2 ** thread.restarts)
        this.#log.error('a serving thread ended; starting it again', { thread: number, code, inMs: pauseMs })
        setTimeout(() => {
          if (!this.#ending) this.#spawn(number, thread).catch(() => undefined)
        }, pauseMs).unref()
      })
    })
  }

  /** What a thread's listen gave (a thread started again, or the start's threads, whose answer `listen` read already). */
  #listened(thread: Thread, number: number, got: number, error: string | null): void {
    thread.listening = !thread.dead && got === this.#data.port
    if (!thread.listening && !this.#ending)
      this.#log.error('a serving thread is not on the port: it answers nothing', {
        thread: number,
        port: this.#data.port,
        got,
        ...(error === null ? {} : { error }),
      })
  }

  /** A thread that ended: nothing waits on it any more. */
  #gone(thread: Thread): void {
    thread.dead = true
    thread.listening = false
    for (const resolve of thread.reported) resolve()
    thread.reported = []
    this.#settleWaiters()
  }

  /** Whether every running thread (that joined) applied batch `seq`. */
  #applied(seq: number): boolean {
    return this.#threads.every((t) => t.dead || !t.joined || t.acked >= seq)
  }

  /** The whole routing table, to a thread started again. */
  #sendAll(thread: Thread): void {
    if (this.#scheduled) this.#flush()
    const ops = this.#routes.all()
    thread.joinSeq = this.#seq
    thread.worker.postMessage({ t: 'routes', seq: this.#seq, ops } satisfies ThreadMessage)
  }

  /** Every thread's page views so far, merged into the beacon (each thread asked for a report now). */
  gather(): Promise<void> {
    if (this.#stopping !== null) return Promise.resolve()
    return new Promise((resolve) => {
      const live = this.#live()
      let waiting = live.length
      if (waiting === 0) return resolve()
      const timer = setTimeout(resolve, GATHER_MAX_MS)
      const one = () => {
        if (--waiting > 0) return
        clearTimeout(timer)
        resolve()
      }
      for (const thread of live) {
        thread.reported.push(one)
        thread.worker.postMessage({ t: 'report' } satisfies ThreadMessage)
      }
    })
  }

  /** What each serving thread answered itself, its content cache and whether it listens, thread 1 first (the metrics). */
  stats(): ThreadStats[] {
    return this.#threads.map((t) => ({ responses: t.responses, cache: t.cache, listening: t.listening }))
  }

  host(host: string): void {
    this.#routes.hostChanged(host)
    this.#schedule()
  }

  website(websiteId: string): void {
    this.#routes.websiteChanged(websiteId)
    this.#schedule()
  }

  /**
   * Resolves once every thread applied every routing change made so far (null: nothing is on its
   * way). Changes not sent yet are sent now.
   */
  settled(): Promise<void> | null {
    if (this.#scheduled) this.#flush()
    const seq = this.#seq
    if (this.#applied(seq) || this.#stopping !== null) return null
    return new Promise((resolve) => {
      const waiter = {
        seq,
        resolve: () => {
          clearTimeout(timer)
          resolve()
        },
      }
      const timer = setTimeout(() => {
        this.#log.warn('a serving thread did not take a routing change in time; the API answered anyway', { seq })
        this.#waiters = this.#waiters.filter((w) => w !== waiter)
        resolve()
      }, SETTLE_MAX_MS)
      this.#waiters.push(waiter)
    })
  }

  /** Tells every thread to stop; resolves once each drained (until `deadline`), sent its last report and ended. */
  stop(deadline: number): Promise<void> {
    return (this.#stopping ??= (async () => {
      this.#ending = true
      this.#registry.hostnames.watcher = null
      this.#registry.beacon.gather = null
      await this.#endAll({ t: 'stop', deadline }, Math.max(0, deadline - Date.now()) + HALT_MAX_MS)
      for (const waiter of this.#waiters) waiter.resolve()
      this.#waiters = []
      // What the threads handed on last is answered (or the deadline passed): the loopback listener closes.
      this.#loopback.stopListening()
      while (this.#loopback.inflight > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10))
      this.#loopback.closeAll()
    })())
  }

  /**
   * At once (after an uncaught exception, or a start that failed): each thread closes its connections
   * and its database handle and ends, no drain. Not `terminate()`: a thread ended under an open LMDB
   * handle aborts the process.
   */
  async halt(): Promise<void> {
    this.#ending = true
    this.#registry.hostnames.watcher = null
    this.#registry.beacon.gather = null
    this.#loopback.closeAll()
    await this.#endAll({ t: 'halt' }, HALT_MAX_MS)
  }

  #endAll(message: ThreadMessage, waitMs: number): Promise<void> {
    // Each thread's socket leaves the port first thing on either message.
    for (const thread of this.#threads) thread.listening = false
    return Promise.all(
      this.#live().map(
        (thread) =>
          new Promise<void>((resolve) => {
            const timer = setTimeout(resolve, waitMs)
            thread.worker.once('exit', () => {
              clearTimeout(timer)
              resolve()
            })
            thread.worker.postMessage(message)
          }),
      ),
    ).then(() => undefined)
  }

  #schedule(): void {
    if (this.#scheduled) return
    this.#scheduled = true
    queueMicrotask(() => {
      if (this.#scheduled) this.#flush()
    })
  }

  /** Sends what changed since the last batch (thread-routes.ts). */
  #flush(): void {
    this.#scheduled = false
    const ops = this.#routes.changes()
    if (ops.length === 0) return
    const message: ThreadMessage = { t: 'routes', seq: ++this.#seq, ops }
    for (const thread of this.#live()) thread.worker.postMessage(message)
  }

  /** Lets go every answer waiting for changes every thread has now applied. */
  #settleWaiters(): void {
    const waiting = this.#waiters
    this.#waiters = []
    for (const waiter of waiting) {
      if (this.#applied(waiter.seq)) waiter.resolve()
      else this.#waiters.push(waiter)
    }
  }

  #heard(thread: Thread, message: ThreadReport): void {
    switch (message.t) {
      case 'ack':
        thread.acked = message.seq
        if (!thread.joined && thread.joinSeq >= 0 && message.seq >= thread.joinSeq) thread.joined = true
        return this.#settleWaiters()
      case 'report': {
        // Served on a thread counts as used here: the website stays in memory (and on the threads) while visited.
        for (const host of message.used) {
          const channel = this.#registry.hostnames.channel(host)
          if (channel !== undefined) channel.used = true
        }
        if (message.views.tallies.length > 0 || message.views.raw.at.length > 0)
          this.#registry.beacon.merge(message.views.tallies, message.views.raw)
        const { responses, bytes } = message.traffic
        for (let c = 1; c < STATUS_CLASSES; c++) {
          traffic.responses[DOOR.hosting * STATUS_CLASSES + c]! += responses[c]!
          thread.responses += responses[c]!
        }
        traffic.bytes[DOOR.hosting]! += bytes
        thread.cache = message.cache
        const told = thread.reported
        thread.reported = []
        for (const resolve of told) resolve()
        return
      }
      case 'log':
        return this.#log[message.level](`serving thread: ${message.message}`, message.fields)
      default:
        return
    }
  }
}
