// The primary's lease: one key in a JetStream KV bucket whose entries expire (bucket TTL), renewed by compare-and-set, signed.
import { Kvm, type KV, type KvEntry } from '@nats-io/kv'
import type { NatsConnection } from '@nats-io/transport-node'
import type { ClusterTrust } from './trust.js'

const BUCKET = 'plinth-lease'
const KEY = 'primary'
/** Tries of a compare-and-set over a record someone keeps writing (a take, a repair) before giving up until the next look. */
const WRITE_TRIES = 5

/**
 * Who holds the lease: the node's name, the address other nodes forward to, the epoch it leads in, and
 * how many times it renewed in that epoch (a record said again is older than the live one).
 */
export interface Holder {
  node: string
  url: string
  epoch: number
  renewal: number
}

/** Whether `a` is a later record than `b` (a newer epoch, or a later renewal of the same one). */
export function newer(a: Holder, b: Holder | null): boolean {
  return b === null || a.epoch > b.epoch || (a.epoch === b.epoch && a.renewal > b.renewal)
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
 * derived from the installation's secret and counts its renewals: a record no node signed names nobody,
 * and one said again (an old record put back) is older than the live one; the primary writes its own
 * over either at its next renewal. Taking it is a compare-and-set over what is there, when the caller
 * finds it may be written over, which the bucket refuses when another node wrote first; renewing is a
 * compare-and-set on the revision this holder last wrote. The epoch is the revision of the take: every
 * take has a larger one.
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
    const { node, url, epoch, renewal } = signed
    return { holder: { node, url, epoch, renewal }, forged: false, revision: entry.revision }
  }

  /** The lease now. */
  async read(): Promise<LeaseState> {
    return this.#state(await this.#kv.get(KEY))
  }

  /** Writes `holder` over what is there now (its `revision`; 0: nothing), or null when another wrote first. */
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
   * Takes the lease for `node` when what is there may be written over (`free`: absent, deleted, no node
   * signed it, or, as the caller judges, a record nobody renewed for a lease); the epoch it leads in, or null.
   */
  async take(node: string, url: string, free: (now: LeaseState) => boolean): Promise<number | null> {
    for (let tries = 0; tries < WRITE_TRIES; tries++) {
      const now = await this.read()
      if (!free(now)) return null
      // The revision is known only once written: the record says 0 and the next write the epoch.
      const revision = await this.#writeOver({ node, url, epoch: 0, renewal: 0 }, now.revision)
      if (revision === null) continue
      const epoch = await this.#writeOver({ node, url, epoch: revision, renewal: 1 }, revision)
      if (epoch === null) return null
      this.#revision = epoch
      return revision
    }
    return null
  }

  /**
   * Renews the lease this node holds (`holder`, its renewal counted up by the caller): `kept`,
   * `repaired` (a record no node signed, an older one said again, or a deletion was there and is
   * written over) or `lost` (another node holds it now, in a later epoch).
   */
  async renew(holder: Holder): Promise<'kept' | 'repaired' | 'lost'> {
    const value = JSON.stringify(this.#trust.signLease(holder))
    try {
      this.#revision = await this.#kv.update(KEY, value, this.#revision)
      return 'kept'
    } catch (error) {
      if (!/wrong last sequence/i.test(String(error))) throw error
    }
    for (let tries = 0; tries < WRITE_TRIES; tries++) {
      const now = await this.read()
      if (now.holder !== null && now.holder.epoch > holder.epoch) return 'lost'
      if (
        now.holder !== null &&
        now.holder.node === holder.node &&
        now.holder.epoch === holder.epoch &&
        now.holder.renewal === holder.renewal
      ) {
        // Its own write, whose acknowledgement was lost.
        this.#revision = now.revision
        return 'kept'
      }
      const revision = await this.#writeOver(holder, now.revision)
      if (revision === null) continue
      this.#revision = revision
      return 'repaired'
    }
    throw new Error('the lease record changed under every write (something keeps writing it)')
  }

  /** Gives the lease up (a primary stepping down), if it still holds it. */
  async release(): Promise<void> {
    await this.#kv.delete(KEY, { previousSeq: this.#revision }).catch(() => undefined)
  }
}
