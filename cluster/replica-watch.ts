// The primary's view of its replicas: how far each applied the log, as each said it, and whether a write's answer waits.
import type { Logger } from '../core/log.js'
import { APPLIED_SUBJECT, type NodeMessages } from './messages.js'
import { NODE_NAME } from './trust.js'

/** The longest a write's answer waits for the replicas. */
const REPLICATED_WAIT_MS = 2000

/**
 * What each replica said it applied (`plinth.applied`, signed), when this node last heard it and when
 * the replica says it said it (a replay or an older message tells nothing). A replica heard from within
 * two leases is live: a write's answer waits up to REPLICATED_WAIT_MS for the live ones to apply it.
 */
export class ReplicaWatch {
  readonly #replicas = new Map<string, { seq: number; at: number; said: number }>()
  /** Answers waiting for the replicas (`replicated`). */
  #waiting: { check: () => void }[] = []

  constructor(
    private readonly leaseMs: number,
    private readonly logger: Logger,
  ) {}

  /** Hears what the replicas say they applied (`plinth.applied`; this node's own messages aside). */
  listen(messages: NodeMessages, self: string): void {
    messages.on(APPLIED_SUBJECT, (message, at) => {
      let said: { node?: unknown; seq?: unknown }
      try {
        said = message.json()
      } catch {
        return
      }
      const { node, seq } = said
      if (typeof node !== 'string' || !NODE_NAME.test(node) || typeof seq !== 'number' || !Number.isSafeInteger(seq)) return
      if (node !== self) this.#heard(node, seq, at)
    })
  }

  /** A replica said (at its `said` time) that it applied the log up to `seq`. */
  #heard(node: string, seq: number, said: number): void {
    const known = this.#replicas.get(node)
    // A message said again (a replay) or out of order tells nothing new.
    if (known !== undefined && said <= known.said) return
    this.#replicas.set(node, { seq: Math.max(seq, known?.seq ?? 0), at: Date.now(), said })
    for (const waiter of this.#waiting) waiter.check()
  }

  /** The replicas heard from within two leases. */
  get live(): number {
    const since = Date.now() - 2 * this.leaseMs
    return [...this.#replicas.values()].filter((replica) => replica.at >= since).length
  }

  /**
   * Resolves when every live replica applied the log up to `target`, or after REPLICATED_WAIT_MS with
   * the names of those that had not; null when there is nothing to wait for.
   */
  replicated(target: number): Promise<string[]> | null {
    const lagging = (): string[] => {
      const since = Date.now() - 2 * this.leaseMs
      return [...this.#replicas].filter(([, r]) => r.at >= since && r.seq < target).map(([node]) => node)
    }
    if (lagging().length === 0) return null
    return new Promise((resolve) => {
      const waiter = {
        check: () => {
          if (lagging().length > 0) return
          clearTimeout(timer)
          this.#waiting = this.#waiting.filter((w) => w !== waiter)
          resolve([])
        },
      }
      const timer = setTimeout(() => {
        this.#waiting = this.#waiting.filter((w) => w !== waiter)
        const late = lagging()
        this.logger.warn('replicas had not applied a change when its answer went', { lagging: late.join(','), seq: target })
        resolve(late)
      }, REPLICATED_WAIT_MS)
      this.#waiting.push(waiter)
    })
  }
}
