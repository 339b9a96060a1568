// The primary's appends to the log: signed parts published at once, in order, each expecting the stream's
// last sequence; when the stream holds something else, the stream is read as every reader reads it, to
// find out which of this primary's entries are in, and the ones still waiting go after it.
import type { PubAck } from '@nats-io/jetstream'
import type { Entry, LogPosition } from '../core/store/write-set.js'
import type { NatsLog, SkipReason } from './log.js'
import type { PartHeader } from './trust.js'

/** The stream holds an entry another node signed that a reader applies: another primary appended. */
export class DeposedError extends Error {}

/** An entry on its way into the log. */
interface Pending {
  bytes: Uint8Array
  header: Omit<PartHeader, 'index'>
  /** The sequence its last part was sealed for (what the primary's database recorded). */
  predicted: number
  /** Where each part was acknowledged in the stream (null: not yet). */
  landed: (number | null)[]
  sealedAt: number
  resolve: (seq: number) => void
  reject: (error: Error) => void
}

export interface AppenderOptions {
  /** How long an entry is tried for (an election, a server restarting) before the primary gives up. */
  triesMs: number
  /** Why this primary may append no more (its lease went stale), or null. */
  stopped: () => string | null
  /** An entry landed later in the stream than it was sealed for (messages no reader applies went before it). */
  moved: (digest: string, seq: number) => void
  /** A message a reader does not apply, found where this primary's parts were to go. */
  skipped: (seq: number, reason: SkipReason, detail: string) => void
  /** What is wrong with an entry's writes (the readers' check), or null. */
  check: (entry: Entry) => string | null
}

/**
 * Appends entries in order. The fast path publishes every part as soon as it is sealed, each at the
 * sequence after the one before (the stream refuses a part unless it ends exactly there), so writes
 * overlap the quorum's acknowledgements; an entry whose parts are all acknowledged where they were sent,
 * after every entry before it, is in the log as a reader reads it. When a part is refused, times out, or
 * is acknowledged as a duplicate or elsewhere, the appender stops publishing, waits for what is in
 * flight, and reads the stream from after the last entry it knows is in, through a reader seeded with
 * that entry (`read`): exactly what every node will apply from there. Its own entries the reader applies
 * are in (where the reader applies them); an entry another node signed that the reader applies means
 * another primary appended (`DeposedError`); the rest (what no node signed, replays, parts that never
 * made an entry, this primary's own copies out of place) is read past, and the entries still waiting go
 * again, whole and in order, after the stream's end. Until `triesMs` from the oldest entry's seal, or
 * until `stopped` says the lease went stale.
 */
export class Appender {
  readonly #queue: Pending[] = []
  readonly #inflight = new Set<Promise<unknown>>()
  /** The sequence the next part is published at. */
  #next: number
  /** The tail entries are sealed against (the stream's end once every waiting entry is in). */
  #reserved: number
  /** The last entry known to be in (as every reader applies it): where a reading of the stream starts from. */
  #head: LogPosition
  #repairing = false
  #failed: Error | null = null

  constructor(
    private readonly log: NatsLog,
    tail: number,
    head: LogPosition,
    private readonly options: AppenderOptions,
  ) {
    this.#next = tail + 1
    this.#reserved = tail
    this.#head = head
  }

  /** Nothing is waiting to be in the log. */
  get idle(): boolean {
    return this.#queue.length === 0
  }

  /** The last entry known to be in the log as every reader applies it (what a restart can trust). */
  get acked(): LogPosition {
    return this.#head
  }

  /**
   * Seals an entry: the sequence its last part is expected at (at once), and a promise of where it
   * really ended up once it is in (later, when messages no reader applies went first).
   */
  add(bytes: Uint8Array, header: Omit<PartHeader, 'index' | 'of'>): { predicted: number; landed: Promise<number> } {
    const of = this.log.partsOf(bytes)
    this.#reserved += of
    const predicted = this.#reserved
    let resolve!: (seq: number) => void
    let reject!: (error: Error) => void
    const landed = new Promise<number>((res, rej) => ((resolve = res), (reject = rej)))
    if (this.#failed !== null) {
      reject(this.#failed)
      return { predicted, landed }
    }
    const pending: Pending = {
      bytes,
      header: { ...header, of },
      predicted,
      landed: new Array<number | null>(of).fill(null),
      sealedAt: Date.now(),
      resolve,
      reject,
    }
    this.#queue.push(pending)
    if (!this.#repairing) for (let index = 1; index <= of; index++) this.#publish(pending, index, this.#next++)
    return { predicted, landed }
  }

  /** Fails every entry still waiting (the primary stepped down): none will be acknowledged by this appender. */
  stop(error: Error): void {
    this.#fail(error)
  }

  #publish(pending: Pending, index: number, seq: number): void {
    const deadline = pending.sealedAt + this.options.triesMs
    const sent = this.log
      .publish({ ...pending.header, index }, this.log.part(pending.bytes, index), seq, Math.max(500, Math.min(5000, deadline - Date.now())))
      .then((ack: PubAck) => {
        // Only where it was sent; and a duplicate (its id the key's, so another's only by a leak) is looked
        // for in the stream before it counts (`#resume` reads it there, or not).
        if (ack.seq !== seq) throw new Error(`the stream acknowledged part ${index} at ${ack.seq}, not ${seq} where it was sent`)
        if (ack.duplicate) throw new Error(`the stream acknowledged part ${index} at ${seq} as a duplicate`)
        pending.landed[index - 1] = seq
        this.#finish()
      })
      .catch(() => this.#repair())
    this.#inflight.add(sent)
    void sent.finally(() => this.#inflight.delete(sent))
  }

  /**
   * Resolves the entries at the queue's head whose parts were all acknowledged where they were sent:
   * consecutive, right after the entry before, so a reader applies each at its last part.
   */
  #finish(): void {
    while (this.#queue.length > 0 && this.#queue[0]!.landed.every((seq) => seq !== null)) this.#done(this.#queue.shift()!)
  }

  #done(entry: Pending): void {
    const last = entry.landed.at(-1)!
    this.#head = { seq: last, epoch: entry.header.epoch, digest: entry.header.digest }
    if (last !== entry.predicted) this.options.moved(entry.header.digest, last)
    entry.resolve(last)
  }

  #fail(error: Error): void {
    this.#failed ??= error
    for (const pending of this.#queue.splice(0)) pending.reject(this.#failed)
  }

  #repair(): void {
    if (this.#repairing || this.#failed !== null) return
    this.#repairing = true
    void (async () => {
      for (;;) {
        while (this.#inflight.size > 0) await Promise.allSettled([...this.#inflight])
        if (this.#queue.length === 0 || this.#failed !== null) return void (this.#repairing = false)
        const stopped = this.options.stopped()
        if (stopped !== null) return this.#fail(new Error(stopped))
        if (this.#late()) return this.#fail(new Error(`the log did not take an entry within ${this.options.triesMs} ms`))
        try {
          // It publishes what waits, and a failure of that starts the next repair.
          return await this.#resume()
        } catch (error) {
          if (error instanceof DeposedError) return this.#fail(error)
          // NATS cannot be read right now (an election, a server restarting): tried again.
        }
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
    })()
  }

  #late(): boolean {
    return this.#queue.length > 0 && Date.now() > this.#queue[0]!.sealedAt + this.options.triesMs
  }

  /**
   * Reads the stream from after the last entry known to be in, as a reader does, and sorts what it
   * applies; then publishes what still waits after the stream's end.
   */
  async #resume(): Promise<void> {
    const { last } = await this.log.bounds()
    const waiting = new Map(this.#queue.map((pending) => [pending.header.digest, pending]))
    const ins: { pending: Pending; seq: number }[] = []
    const reader = this.log.reader(this.#head, this.options.check, this.options.skipped)
    await this.log.read(
      this.#head.seq + 1,
      last,
      reader,
      async (entry) => {
        const pending = waiting.get(entry.position.digest)
        if (pending === undefined || entry.node !== pending.header.node || entry.position.epoch !== pending.header.epoch)
          throw new DeposedError(
            `the log holds an entry node ${entry.node} signed in epoch ${entry.position.epoch} at ${entry.position.seq}, after this primary's last entry`,
          )
        ins.push({ pending, seq: entry.position.seq })
      },
      () => this.#late() || this.options.stopped() !== null,
    )
    // A reader applies them in the chain's order, which is the queue's.
    for (const { pending, seq } of ins) {
      if (this.#queue[0] !== pending) throw new DeposedError('the log holds this primary’s entries out of their order')
      this.#queue.shift()
      pending.landed.fill(seq)
      this.#done(pending)
    }
    // What is left goes again whole, in order, after the stream's end: a copy of it already there (before a
    // message no reader applies) is read past as a part of no entry, or as an entry off the chain.
    this.#next = last + 1
    this.#repairing = false
    for (const pending of this.#queue) {
      pending.landed.fill(null)
      for (let index = 1; index <= pending.header.of; index++) this.#publish(pending, index, this.#next++)
    }
    this.#reserved = this.#next - 1
  }
}
