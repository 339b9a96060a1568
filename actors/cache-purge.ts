// Purges of a cache tier in front (Varnish with xkey, or any cache that takes a PURGE naming surrogate keys).
import type { Logger } from '../core/log.js'

/** Waits before the retries of a purge a node did not take (then it is logged and dropped). */
const RETRY_MS = [250, 1_000, 4_000, 15_000, 60_000]
const TIMEOUT_MS = 5_000

/**
 * Tells every configured cache node (PLINTH_PURGE_URLS) to drop what it keeps of a website: a
 * `PURGE` whose `xkey-purge` (Varnish's xkey vmod, deploy/varnish.vcl) and `Surrogate-Key` headers
 * name the website's key, the key its published responses carry (`xkey`, `Surrogate-Key`,
 * `Cache-Tag`). Purges of one moment are sent together, never awaited by the change that asked for
 * them, and retried with backoff; a node that stays unreachable is logged. The nodes are the
 * operator's own addresses, so these requests do not go through the SSRF guard that requests made
 * for users pass.
 */
export class CachePurge {
  readonly #pending = new Set<string>()
  #scheduled = false
  /** Purges sent and taken, and those given up on (for tests and the log). */
  taken = 0
  failed = 0
  /** Purges asked for and not yet taken or given up on (sending, or waiting to be retried). */
  #open = 0

  constructor(
    private readonly urls: readonly string[],
    private readonly log: Logger,
  ) {}

  get enabled(): boolean {
    return this.urls.length > 0
  }

  /** No purge is waiting, sending or to be retried: every change so far reached every node (or was given up on). */
  get settled(): boolean {
    return this.#pending.size === 0 && !this.#scheduled && this.#open === 0
  }

  /** Asks for the website's cached responses to go, on every node, soon. */
  purge(websiteId: string): void {
    if (this.urls.length === 0) return
    this.#pending.add(websiteId)
    if (this.#scheduled) return
    this.#scheduled = true
    setImmediate(() => {
      this.#scheduled = false
      const keys = [...this.#pending].join(' ')
      this.#pending.clear()
      for (const url of this.urls) {
        this.#open++
        void this.#send(url, keys, 0)
      }
    })
  }

  async #send(url: string, keys: string, attempt: number): Promise<void> {
    try {
      const response = await fetch(url, {
        method: 'PURGE',
        headers: { 'xkey-purge': keys, 'surrogate-key': keys },
        signal: AbortSignal.timeout(TIMEOUT_MS),
      })
      await response.arrayBuffer().catch(() => undefined)
      if (!response.ok) throw new Error(`HTTP ${response.status}`)
      this.taken++
      this.#open--
    } catch (error) {
      const wait = RETRY_MS[attempt]
      if (wait !== undefined) {
        setTimeout(() => void this.#send(url, keys, attempt + 1), wait).unref()
        return
      }
      this.failed++
      this.#open--
      this.log.error('a cache node did not take a purge; it may serve the old version until its copies expire', {
        url,
        keys,
        error: error instanceof Error ? error.message : String(error),
      })
    }
  }
}
