// Who leads, as this node sees the lease: the records it read and the renewals it heard, signed ones only.
import type { Msg } from '@nats-io/transport-node'
import { newer, type Holder, type LeaseState } from './lease.js'
import { NODE_NAME } from './trust.js'

/**
 * The latest signed lease record this node saw (epoch, then renewal: a live primary's count up), when it
 * first saw it, and so who leads: the latest record while it moved on within a lease. A record no node
 * signed, and an older record said again, name nobody (`refused` counts and says each kind once).
 */
export class LeaseView {
  #seen: { holder: Holder | null; at: number } = { holder: null, at: 0 }
  /** The primary as this node last saw the lease (a replica forwards there; null: none right now). */
  leader: Holder | null = null

  constructor(
    private readonly leaseMs: number,
    private readonly refused: (kind: 'lease' | 'lease-old', message: string) => void,
  ) {}

  /** The latest signed record seen (null: none yet, or a forged one made this node start counting again). */
  get holder(): Holder | null {
    return this.#seen.holder
  }

  /** Whether a signed record moved on within the last lease (a live primary renews every third of one). */
  get live(): boolean {
    return Date.now() - this.#seen.at < this.leaseMs
  }

  /**
   * The primary as heard lately: its renewals come every third of a lease, and one not heard within two
   * of those (two thirds of a lease) means it is dying or cut off, so this says nobody (null) rather than
   * naming it until its lease ends.
   */
  get heardLeader(): Holder | null {
    return Date.now() - this.#seen.at <= (2 * this.leaseMs) / 3 ? this.leader : null
  }

  /** Counting starts again now with nobody seen (a forged record at a start: its primary may write over it within a lease). */
  forget(): void {
    this.#seen = { holder: null, at: Date.now() }
  }

  /** A signed record of the lease, read or heard: a later one moves the lease on (who leads, and when it was last renewed). */
  saw(holder: Holder): void {
    if (!newer(holder, this.#seen.holder)) return
    this.#seen = { holder, at: Date.now() }
    this.leader = holder
  }

  /** A primary's renewal as heard on `plinth.primary` (already checked as signed and fresh). */
  heard(message: Msg): void {
    let said: Partial<Holder>
    try {
      said = message.json()
    } catch {
      return
    }
    const { node, url, epoch, renewal } = said
    if (typeof node !== 'string' || !NODE_NAME.test(node) || typeof url !== 'string' || !/^https?:\/\/[^/?#\s]+$/.test(url)) return
    if (typeof epoch !== 'number' || typeof renewal !== 'number' || !Number.isSafeInteger(epoch) || !Number.isSafeInteger(renewal)) return
    this.saw({ node, url, epoch, renewal })
  }

  /** Notes the lease as read: who leads (the latest signed record, while it was renewed within a lease). */
  read(lease: LeaseState): void {
    if (lease.holder !== null && newer(lease.holder, this.#seen.holder)) this.saw(lease.holder)
    else if (lease.holder !== null && newer(this.#seen.holder!, lease.holder))
      this.refused('lease-old', 'the lease holds an older record than one this node saw (said again by a NATS client): nobody leads by it')
    if (lease.forged) this.refused('lease', 'the lease holds a record no node signed (a NATS client wrote it): nobody leads by it')
    this.leader = this.#seen.holder !== null && this.live ? this.#seen.holder : null
  }
}
