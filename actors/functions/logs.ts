// A site's function logs: console lines, uncaught exceptions and one line per invocation, kept in memory per site for a bounded time.
import { randomToken } from '../../core/ids.js'

export type FunctionLogLevel = 'debug' | 'log' | 'info' | 'warn' | 'error'

export interface FunctionLogEntry {
  /** When (ms since the epoch). */
  at: number
  /** This node's order of the site's lines: a reader asks for the lines after the last it read (a time may repeat; this never does). */
  seq: number
  /** A console line, an uncaught exception (its stack mapped to the site's files), or an invocation's summary. */
  type: 'console' | 'exception' | 'invocation'
  level: FunctionLogLevel
  message: string
  /** The request it belongs to (one id for all of an invocation's lines). */
  requestId: string
  method: string
  path: string
  /** Invocations: the status answered, how long it took, the CPU it used, whether its isolate started cold, and the limit it broke. */
  status?: number
  durationMs?: number
  cpuMs?: number
  cold?: boolean
  limit?: string
  /** On a cluster: the node that ran the request. */
  node?: string
}

/** A line as a node has it: what a node that kept it adds is its own count (`seq`). */
export type SharedLogEntry = Omit<FunctionLogEntry, 'seq'>
/** A line as the request's code reports it: the logs date it and name the node. */
export type FunctionLogLine = Omit<FunctionLogEntry, 'at' | 'seq' | 'node'>

/** Lines kept per site, and for how long. */
export const FUNCTION_LOG_LINES = 1000
export const FUNCTION_LOG_MS = 24 * 60 * 60 * 1000
/** Sites whose logs are kept at once (the least recently written go first). */
const SITES_MAX = 2000

type Listener = (entry: FunctionLogEntry) => void

/**
 * Per-site ring of log lines on this node (the requests it ran, and on a cluster the other nodes' too,
 * as they share them). Nothing here is durable: logs are for watching and debugging, as Cloudflare's
 * real-time logs are.
 */
export class FunctionLogs {
  readonly #sites = new Map<string, FunctionLogEntry[]>()
  readonly #listeners = new Map<string, Set<Listener>>()
  #seq = 0
  /** This run's mark on its cursors: a cursor of another run (a restart, another node) counts from another zero. */
  readonly #run = randomToken(8)
  /** On a cluster: this node's name, on each line it adds. */
  node: string | null = null
  /** On a cluster: told each line this node adds, for the other nodes (plinth/functions-cluster.ts). */
  shared: ((websiteId: string, entry: SharedLogEntry) => void) | null = null

  constructor(private readonly now: () => number = Date.now) {}

  /** Adds a line of a request this node ran, dated now. */
  add(websiteId: string, line: FunctionLogLine): void {
    const entry: SharedLogEntry = this.node === null ? { at: this.now(), ...line } : { at: this.now(), ...line, node: this.node }
    this.#keep(websiteId, entry)
    this.shared?.(websiteId, entry)
  }

  /** Adds a line another node of the cluster ran (dated by that node, in this node's order of arrival). */
  take(websiteId: string, entry: SharedLogEntry): void {
    this.#keep(websiteId, entry)
  }

  #keep(websiteId: string, line: SharedLogEntry): void {
    const entry: FunctionLogEntry = { ...line, seq: ++this.#seq }
    let lines = this.#sites.get(websiteId)
    if (lines === undefined) {
      if (this.#sites.size >= SITES_MAX) this.#sites.delete(this.#sites.keys().next().value!)
      lines = []
    } else this.#sites.delete(websiteId)
    this.#sites.set(websiteId, lines)
    lines.push(entry)
    // The oldest go a tenth at a time (a line's removal moving the other 999 each time cost the most of all here).
    if (lines.length > FUNCTION_LOG_LINES + FUNCTION_LOG_LINES / 10) lines.splice(0, lines.length - FUNCTION_LOG_LINES)
    for (const listener of this.#listeners.get(websiteId) ?? []) listener(entry)
  }

  /** Lines after `since` (ms) and after the line `after` (a seq), oldest first, at most `limit` (after a cursor the oldest of them, else the newest). */
  list(websiteId: string, options: { since?: number; after?: number; limit?: number } = {}): FunctionLogEntry[] {
    const oldest = Math.max(options.since ?? 0, this.now() - FUNCTION_LOG_MS)
    const after = options.after ?? 0
    const kept = this.#sites.get(websiteId) ?? []
    const lines = kept.slice(Math.max(0, kept.length - FUNCTION_LOG_LINES)).filter((e) => e.at > oldest && e.seq > after)
    const limit = options.limit ?? FUNCTION_LOG_LINES
    // After a cursor, the oldest lines first (the next call reads on from the last); else the newest.
    return options.after !== undefined ? lines.slice(0, limit) : lines.slice(Math.max(0, lines.length - limit))
  }

  /** The seq of the site's newest line (0 with none): a cursor that gives only lines to come. */
  lastSeq(websiteId: string): number {
    return this.#sites.get(websiteId)?.at(-1)?.seq ?? 0
  }

  /** A reader's cursor: the lines after the one at `seq`, on this run. */
  cursor(seq: number): string {
    return `${this.#run}.${seq}`
  }

  /** The seq a cursor stands after, or undefined for a cursor of another run (the reader starts again from the newest lines). */
  after(cursor: string): number | undefined {
    const [run, seq] = cursor.split('.')
    return run === this.#run ? Number(seq) : undefined
  }

  /** Calls `listener` with each new line of the site until the returned function is called. */
  follow(websiteId: string, listener: Listener): () => void {
    let set = this.#listeners.get(websiteId)
    if (set === undefined) this.#listeners.set(websiteId, (set = new Set()))
    set.add(listener)
    return () => {
      set.delete(listener)
      if (set.size === 0) this.#listeners.delete(websiteId)
    }
  }

  /** Forgets a site's lines (its purge). */
  forget(websiteId: string): void {
    this.#sites.delete(websiteId)
  }
}
