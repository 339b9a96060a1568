// A node's name in the `plinth-nodes` bucket: held while it runs (its entry lives two leases, renewed), signed.
import type { KV } from '@nats-io/kv'
import type { Logger } from '../core/log.js'
import type { ClusterTrust } from './trust.js'

/**
 * One entry per node, under its name: its address, when, and how far it applied the log, signed like a
 * message between nodes. A second node started under a name a live node holds is refused; an entry no
 * node signed (a NATS client put it there) is written over and counted.
 */
export class NodeName {
  #revision = 0

  constructor(
    private readonly nodes: KV,
    private readonly trust: ClusterTrust,
    private readonly node: string,
    private readonly url: string,
    private readonly logger: Logger,
    /** Told when an entry no node signed held the name (counted in /metrics). */
    private readonly forged: () => void,
  ) {}

  /** This node's entry (its address, when, how far it applied the log), signed like a message between nodes. */
  #entry(applied: number): string {
    const said = JSON.stringify({ url: this.url, at: Date.now(), seq: applied })
    const { at, mac } = this.trust.sealMessage(`plinth-nodes.${this.node}`, Buffer.from(said), Date.now())
    return JSON.stringify({ said, at, mac })
  }

  /** Takes the name; throws naming the other node when a live one holds it. */
  async take(applied: number): Promise<void> {
    try {
      this.#revision = await this.nodes.create(this.node, this.#entry(applied))
    } catch (error) {
      // The name is held (the key exists); anything else, an election's answer, is the caller's to retry.
      if (!/wrong last sequence|exists/i.test(String(error))) throw error
      const seen = await this.nodes.get(this.node)
      let url: string | null = null
      try {
        const entry = seen?.json<{ said?: unknown; at?: unknown; mac?: unknown }>()
        const said = typeof entry?.said === 'string' ? entry.said : ''
        const signed =
          typeof entry?.at === 'string' &&
          typeof entry.mac === 'string' &&
          this.trust.openMessage(`plinth-nodes.${this.node}`, Buffer.from(said), entry.at, entry.mac) !== null
        const named = signed ? (JSON.parse(said) as { url?: unknown }).url : null
        if (typeof named === 'string') url = named
      } catch {
        // Not an entry a node wrote.
      }
      if (url === null && seen !== null) {
        // An entry no node signed holds the name (a NATS client put it there): written over.
        this.forged()
        this.logger.warn('the name of this node was held in plinth-nodes by an entry no node signed: written over', { node: this.node })
        this.#revision = await this.nodes.update(this.node, this.#entry(applied), seen.revision)
        return
      }
      throw new Error(`another node named "${this.node}" is running (${url ?? 'address unknown'}); give each node its own PLINTH_NODE_NAME`)
    }
  }

  /** The entry renewed (it lives two leases): its address and how far this node applied the log. */
  async renew(applied: number): Promise<void> {
    await this.nodes.update(this.node, this.#entry(applied), this.#revision).then(
      (revision) => (this.#revision = revision),
      () => undefined,
    )
  }

  /** Gives the name up (a node closing). */
  async release(): Promise<void> {
    await this.nodes.delete(this.node, { previousSeq: this.#revision }).catch(() => undefined)
  }
}
