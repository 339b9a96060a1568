// A site's function logs: console lines, uncaught exceptions and one line per invocation, kept in memory per site for a bounded time.

export type FunctionLogLevel = 'debug' | 'log' | 'info' | 'warn' | 'error'

export interface FunctionLogEntry {
  /** When (ms since the epoch). */
  at: number
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
}

/** Lines kept per site, and for how long. */
export const FUNCTION_LOG_LINES = 1000
export const FUNCTION_LOG_MS = 24 * 60 * 60 * 1000
/** Sites whose logs are kept at once (the least recently written go first). */
const SITES_MAX = 2000

type Listener = (entry: FunctionLogEntry) => void

/**
 * Per-site ring of log lines on this node (each node keeps the lines of the requests it ran). Nothing
 * here is durable: logs are for watching and debugging, as Cloudflare's real-time logs are.
 */
export class FunctionLogs {
  readonly #sites = new Map<string, FunctionLogEntry[]>()
  readonly #listeners = new Map<string, Set<Listener>>()

  constructor(private readonly now: () => number = Date.now) {}

  /** Adds a line, dated now. */
  add(websiteId: string, line: Omit<FunctionLogEntry, 'at'>): void {
    const entry: FunctionLogEntry = { at: this.now(), ...line }
    let lines = this.#sites.get(websiteId)
    if (lines === undefined) {
      if (this.#sites.size >= SITES_MAX) this.#sites.delete(this.#sites.keys().next().value!)
      lines = []
    } else this.#sites.delete(websiteId)
    this.#sites.set(websiteId, lines)
    lines.push(entry)
    if (lines.length > FUNCTION_LOG_LINES) lines.splice(0, lines.length - FUNCTION_LOG_LINES)
    for (const listener of this.#listeners.get(websiteId) ?? []) listener(entry)
  }

  /** Lines after `since` (ms), oldest first, at most `limit` (the newest of them). */
  list(websiteId: string, options: { since?: number; limit?: number } = {}): FunctionLogEntry[] {
    const oldest = Math.max(options.since ?? 0, this.now() - FUNCTION_LOG_MS)
    const lines = (this.#sites.get(websiteId) ?? []).filter((e) => e.at > oldest)
    return lines.slice(Math.max(0, lines.length - (options.limit ?? FUNCTION_LOG_LINES)))
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
