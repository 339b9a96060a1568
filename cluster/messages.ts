// Messages between a cluster's nodes on plain NATS (not the log), each signed; a receiver believes only what a node said.
import { headers as natsHeaders, type Msg, type NatsConnection } from '@nats-io/transport-node'
import { Packr } from 'msgpackr'
import type { ClusterTrust } from './trust.js'

/** Page views counted on a replica, a second's worth, for the primary to fold (msgpack, typed arrays kept). */
export const VIEWS_SUBJECT = 'plinth.views'
/** Replicas say how far they applied the log: after each entry their threads serve, and every third of a lease. */
export const APPLIED_SUBJECT = 'plinth.applied'
/** A node says a backup of it ended (the primary then looks at PLINTH_CLUSTER_BACKUPS to trim the log). */
export const BACKUP_SUBJECT = 'plinth.backup'
/**
 * The primary says it renewed its lease (its record's node, address, epoch and renewal), signed: replicas
 * hear every renewal, however often a NATS client writes over the record between their looks at it.
 */
export const PRIMARY_SUBJECT = 'plinth.primary'
/** An operator's command a replica's control socket hands the primary (sealed: a password may be in it); the primary answers. */
export const OPERATOR_SUBJECT = 'plinth.operator'
/** A write to a site's key-value store that its function made on a replica, for the primary to commit (sealed: the value is the site's). */
export const KV_SUBJECT = 'plinth.kv'
/** The lines a node's site functions logged, a batch at a time, for every other node's logs (sealed: a line is the site's). */
export const FUNCTION_LOGS_SUBJECT = 'plinth.function-logs'

/** Page views of a second, as a replica sends them (typed arrays kept). */
const views = new Packr({ useRecords: false, moreTypes: true })

/** How far a message may be from this node's clock and still count (at least two leases). */
const MESSAGE_WINDOW_MS = 30_000

/**
 * Says and hears the cluster's messages: each one said carries when and a MAC under the installation's
 * key (`Plinth-At`, `Plinth-Mac`); one heard counts only if a node of the cluster said it, within the
 * window of this node's clock, and for the first time (a replay is refused, as is anything a NATS
 * client without the secret publishes). A refusal is told to `refused` with its reason.
 */
export class NodeMessages {
  /** The messages heard within the window, by MAC (each is believed once), with when each may be forgotten. */
  readonly #said = new Map<string, number>()
  readonly #windowMs: number

  constructor(
    private readonly nc: NatsConnection,
    private readonly trust: ClusterTrust,
    leaseMs: number,
    private readonly refused: (why: string, subject: string) => void,
    /** A subscription NATS ended (its permissions do not allow the subject, most likely): this node hears nothing on it. */
    private readonly lost: (subject: string, error: unknown) => void,
  ) {
    this.#windowMs = Math.max(MESSAGE_WINDOW_MS, 2 * leaseMs)
  }

  /** Publishes on `subject`, signed. */
  say(subject: string, payload: Uint8Array): void {
    this.nc.publish(subject, payload, { headers: this.#signed(subject, payload) })
  }

  #signed(subject: string, payload: Uint8Array) {
    const { at, mac } = this.trust.sealMessage(subject, payload, Date.now())
    const h = natsHeaders()
    h.set('Plinth-At', at)
    h.set('Plinth-Mac', mac)
    return h
  }

  /**
   * Asks whoever answers `subject` and resolves the answer's payload once a node is heard to have
   * signed it; null when nobody answered within `timeoutMs` (or only someone without the secret did).
   */
  async ask(subject: string, payload: Uint8Array, timeoutMs: number): Promise<Uint8Array | null> {
    const reply = await this.nc.request(subject, payload, { timeout: timeoutMs, headers: this.#signed(subject, payload) }).catch(() => null)
    return reply === null || this.#heard(reply) === null ? null : reply.data
  }

  /** Answers each message a node said on `subject` with what `answer` resolves, signed (null: this node says nothing). */
  onAsked(subject: string, answer: (payload: Uint8Array) => Promise<Uint8Array | null>): void {
    this.on(subject, (message) => {
      const to = message.reply
      if (to === undefined || to === '') return
      void answer(message.data).then((said) => {
        if (said !== null) this.nc.publish(to, said, { headers: this.#signed(to, said) })
      })
    })
  }

  /**
   * Page views counted on a replica (one message a second, on plain NATS: not the log; lost if no
   * primary is up to take them, as a page view is while a single server restarts).
   */
  sendViews(report: unknown): void {
    this.say(VIEWS_SUBJECT, views.pack(report))
  }

  /** Hands the replicas' page views to `fold` while `leading()` (a view that cannot be read is told to `bad`). */
  onViews(leading: () => boolean, fold: (report: unknown) => void, bad: (error: unknown) => void): void {
    this.on(VIEWS_SUBJECT, (message) => {
      if (!leading()) return
      try {
        fold(views.unpack(message.data))
      } catch (error) {
        bad(error)
      }
    })
  }

  /** Calls `each` with every message on `subject` that a node said, and when it said it (its clock). */
  on(subject: string, each: (message: Msg, at: number) => void): void {
    const subscription = this.nc.subscribe(subject)
    void (async () => {
      for await (const message of subscription) {
        const at = this.#heard(message)
        if (at !== null) each(message, at)
      }
    })().catch((error: unknown) => this.lost(subject, error))
  }

  /**
   * When a node said a message (its clock), or null (and refused) when no node said it, it was said
   * too long ago or too far ahead of this node's clock, or it was heard before (said again: a replay).
   */
  #heard(message: Msg): number | null {
    const mac = message.headers?.get('Plinth-Mac')
    const at = this.trust.openMessage(message.subject, message.data, message.headers?.get('Plinth-At'), mac)
    const now = Date.now()
    const why =
      at === null
        ? 'no node signed it'
        : Math.abs(now - at) > this.#windowMs
          ? 'it was said too long ago'
          : this.#said.has(mac!)
            ? 'it was heard before'
            : null
    if (why !== null) {
      this.refused(why, message.subject)
      return null
    }
    if (this.#said.size > 10_000) for (const [seen, until] of this.#said) if (until < now) this.#said.delete(seen)
    this.#said.set(mac!, now + this.#windowMs)
    return at
  }
}
