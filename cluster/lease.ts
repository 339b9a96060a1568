// The primary's lease: one key in a JetStream KV bucket whose entries expire (bucket TTL), renewed by compare-and-set.
import { Kvm, type KV } from '@nats-io/kv'
import type { NatsConnection } from '@nats-io/transport-node'

const BUCKET = 'plinth-lease'
const KEY = 'primary'

/** Who holds the lease: the node's name, the address other nodes forward to, and the epoch it leads in. */
export interface Holder {
  node: string
  url: string
  epoch: number
}

/**
 * The lease. The bucket's TTL ends a holder that stops renewing (per-key TTL needs nats-server 2.11;
 * a bucket TTL works on 2.9, and the bucket holds this one key). Taking it is `create`, which the
 * bucket refuses while a live entry exists; renewing is `update` on the revision this holder last
 * wrote, so a holder that lost it (expired, taken by another) finds out at its next renewal. The
 * epoch is the revision of the take: every take has a larger one.
 */
export class Lease {
  readonly #kv: KV
  #revision = 0

  private constructor(kv: KV) {
    this.#kv = kv
  }

  static async open(nc: NatsConnection, ttlMs: number, replicas: number): Promise<Lease> {
    const kv = await new Kvm(nc).create(BUCKET, { ttl: ttlMs, history: 1, replicas })
    return new Lease(kv)
  }

  /** The holder now, or null when nobody holds it. */
  async holder(): Promise<Holder | null> {
    const entry = await this.#kv.get(KEY)
    if (entry === null || entry.operation !== 'PUT' || entry.length === 0) return null
    return entry.json<Holder>()
  }

  /** Takes the lease for `node` if nobody holds it; the epoch it leads in, or null. */
  async take(node: string, url: string): Promise<number | null> {
    try {
      // The revision is known only once written: the entry says 0 and the renewal writes the epoch.
      const revision = await this.#kv.create(KEY, JSON.stringify({ node, url, epoch: 0 } satisfies Holder))
      this.#revision = await this.#kv.update(KEY, JSON.stringify({ node, url, epoch: revision } satisfies Holder), revision)
      return revision
    } catch (error) {
      if (/wrong last sequence|key exists/i.test(String(error))) return null
      throw error
    }
  }

  /** Renews the lease this node holds; false when it no longer does. */
  async renew(holder: Holder): Promise<boolean> {
    try {
      this.#revision = await this.#kv.update(KEY, JSON.stringify(holder), this.#revision)
      return true
    } catch (error) {
      if (/wrong last sequence/i.test(String(error))) return false
      throw error
    }
  }

  /** Gives the lease up (a primary stepping down), if it still holds it. */
  async release(): Promise<void> {
    await this.#kv.delete(KEY, { previousSeq: this.#revision }).catch(() => undefined)
  }
}
