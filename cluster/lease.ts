// The primary's lease: one key in a JetStream KV bucket whose entries expire (bucket TTL), renewed by compare-and-set, signed.
import { Kvm, type KV, type KvEntry } from '@nats-io/kv'
import type { NatsConnection } from '@nats-io/transport-node'
import type { ClusterTrust } from './trust.js'

const BUCKET = 'plinth-lease'
const KEY = 'primary'

/** Who holds the lease: the node's name, the address other nodes forward to, and the epoch it leads in. */
export interface Holder {
  node: string
  url: string
  epoch: number
}

/** The lease as read: the holder a node signed (null: nobody), whether a record no node signed is there, and its revision. */
export interface LeaseState {
  holder: Holder | null
  /** A record is there that no node signed (a NATS client wrote it): nobody holds the lease by it. */
  forged: boolean
  revision: number
}

/**
 * The lease. The bucket's TTL ends a holder that stops renewing (per-key TTL needs nats-server 2.11;
 * a bucket TTL works on 2.9, and the bucket holds this one key). Every record is signed with a key
 * derived from the installation's secret: one that is not (anything a NATS client put there) names
 * nobody, and is written over by the primary's next renewal or a node's take. Taking it is a
 * compare-and-set on what is there (absent, deleted or unsigned), which the bucket refuses when another
 * node wrote first; renewing is a compare-and-set on the revision this holder last wrote, so a holder
 * that lost it (expired, taken by another) finds out at its next renewal. The epoch is the revision of
 * the take: every take has a larger one.
 */
export class Lease {
  readonly #kv: KV
  readonly #trust: ClusterTrust
  #revision = 0

  private constructor(kv: KV, trust: ClusterTrust) {
    this.#kv = kv
    this.#trust = trust
  }

  static async open(nc: NatsConnection, ttlMs: number, replicas: number, trust: ClusterTrust): Promise<Lease> {
    const kv = await new Kvm(nc).create(BUCKET, { ttl: ttlMs, history: 1, replicas })
    return new Lease(kv, trust)
  }

  #state(entry: KvEntry | null): LeaseState {
    if (entry === null) return { holder: null, forged: false, revision: 0 }
    if (entry.operation !== 'PUT' || entry.length === 0) return { holder: null, forged: false, revision: entry.revision }
    let value: unknown = null
    try {
      value = entry.json()
    } catch {
      // Not JSON: no node wrote it.
    }
    const signed = this.#trust.checkLease(value)
    if (signed === null) return { holder: null, forged: true, revision: entry.revision }
    return { holder: { node: signed.node, url: signed.url, epoch: signed.epoch }, forged: false, revision: entry.revision }
  }

  /** The lease now. */
  async read(): Promise<LeaseState> {
    return this.#state(await this.#kv.get(KEY))
  }

  /** Writes `holder` over what is there now (absent, deleted or unsigned: `revision`), or creates it; false when another wrote first. */
  async #writeOver(holder: Holder, revision: number): Promise<number | null> {
    const value = JSON.stringify(this.#trust.signLease(holder))
    try {
      return revision === 0 ? await this.#kv.create(KEY, value) : await this.#kv.update(KEY, value, revision)
    } catch (error) {
      if (/wrong last sequence|key exists/i.test(String(error))) return null
      throw error
    }
  }

  /**
   * Takes the lease for `node` if no node holds it (absent, deleted, or a record no node signed); the
   * epoch it leads in, or null.
   */
  async take(node: string, url: string): Promise<number | null> {
    const now = await this.read()
    if (now.holder !== null) return null
    // The revision is known only once written: the record says 0 and the renewal writes the epoch.
    const revision = await this.#writeOver({ node, url, epoch: 0 }, now.revision)
    if (revision === null) return null
    const epoch = await this.#writeOver({ node, url, epoch: revision }, revision)
    if (epoch === null) return null
    this.#revision = epoch
    return revision
  }

  /**
   * Renews the lease this node holds: `kept`, `repaired` (a record no node signed, or a deletion, was
   * there and is written over) or `lost` (another node holds it now).
   */
  async renew(holder: Holder): Promise<'kept' | 'repaired' | 'lost'> {
    const value = JSON.stringify(this.#trust.signLease(holder))
    try {
      this.#revision = await this.#kv.update(KEY, value, this.#revision)
      return 'kept'
    } catch (error) {
      if (!/wrong last sequence/i.test(String(error))) throw error
    }
    const now = await this.read()
    if (now.holder !== null) {
      if (now.holder.node !== holder.node || now.holder.epoch !== holder.epoch) return 'lost'
      // Its own write, whose acknowledgement was lost.
      this.#revision = now.revision
      return 'kept'
    }
    const revision = await this.#writeOver(holder, now.revision)
    if (revision === null) return 'lost'
    this.#revision = revision
    return 'repaired'
  }

  /** Gives the lease up (a primary stepping down), if it still holds it. */
  async release(): Promise<void> {
    await this.#kv.delete(KEY, { previousSeq: this.#revision }).catch(() => undefined)
  }
}
