// The primary's appends to the log: signed parts published at once, in order, each expecting the stream's
// last sequence; when the stream holds something else, the stream is read to find out what, and the
// entries still waiting go after it.
import type { PubAck } from '@nats-io/jetstream'
import type { NatsLog } from './log.js'
import type { PartHeader } from './trust.js'

/** The stream holds an entry another node signed after this primary's tail: another primary appended. */
export class DeposedError extends Error {}

/** An entry on its way into the log. */
interface Pending {
  bytes: Uint8Array
  header: Omit<PartHeader, 'index'>
  /** The sequence its last part was sealed for (what the primary's database recorded). */
  predicted: number
  /** Where each part is in the stream (null: not known to be in yet). */
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
  /** An entry landed later in the stream than it was sealed for (unsigned messages went before it). */
  moved: (digest: string, seq: number) => void
  /** A message found in the stream where this primary's part was to go that no reader applies: unsigned, or signed and following no entry in place (a replay). */
  skipped: (seq: number, signed: boolean) => void
}

/**
 * Appends entries in order. The fast path publishes every part as soon as it is sealed, each at the
 * sequence after the one before (the stream refuses a part unless it ends exactly there), so writes
 * overlap the quorum's acknowledgements. When a part is refused, times out, or is acknowledged at
 * another sequence (a duplicate this primary did not write), the appender stops publishing, waits for
 * what is in flight, reads the stream after the last part it knows is in, and sorts what it finds:
 * its own parts (they landed: an acknowledgement was lost), messages no node signed (read past: the
 * next append goes after them), or a part another node signed (`DeposedError`: another primary
 * appended). Then it publishes what is still waiting after the stream's end, until `triesMs` from the
 * oldest entry's seal, or until `stopped` says the lease went stale.
 */
export class Appender {
  readonly #queue: Pending[] = []
  readonly #inflight = new Set<Promise<unknown>>()
  /** The sequence the next part is published at. */
  #next: number
  /** The last sequence whose message this appender knows (its own landed part, or one it read past). */
  #confirmed: number
  /** The tail entries are sealed against (the stream's end once every waiting entry is in). */
  #reserved: number
  /** The last entry in place (this primary's last landed, or the chain it started leading at): what a reader's next entry must follow. */
  #head: { digest: string; epoch: number }
  #repairing = false
  #failed: Error | null = null

  constructor(
    private readonly log: NatsLog,
    tail: number,
    head: { digest: string; epoch: number },
    private readonly options: AppenderOptions,
  ) {
    this.#next = tail + 1
    this.#confirmed = tail
    this.#reserved = tail
    this.#head = head
  }

  /** The sequence the next entry's first part is sealed for. */
  get tail(): number {
    return this.#reserved
  }

  /**
   * Seals an entry: the sequence its last part is expected at (at once), and a promise of where it
   * really ended up once every part is acknowledged (later, when unsigned messages went first).
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
        // at in the stream before it counts (`#resume` finds it there, or not).
        if (ack.seq !== seq) throw new Error(`the stream acknowledged part ${index} at ${ack.seq}, not ${seq} where it was sent`)
        if (ack.duplicate) throw new Error(`the stream acknowledged part ${index} at ${seq} as a duplicate`)
        pending.landed[index - 1] = seq
        this.#finish()
      })
      .catch(() => this.#repair())
    this.#inflight.add(sent)
    void sent.finally(() => this.#inflight.delete(sent))
  }

  /** Resolves the entries at the queue's head whose parts are all in. */
  #finish(): void {
    while (this.#queue.length > 0 && this.#queue[0]!.landed.every((seq) => seq !== null)) {
      const done = this.#queue.shift()!
      const last = done.landed.at(-1)!
      this.#confirmed = Math.max(this.#confirmed, last)
      this.#head = { digest: done.header.digest, epoch: done.header.epoch }
      if (last !== done.predicted) this.options.moved(done.header.digest, last)
      done.resolve(last)
    }
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
        if (Date.now() > this.#queue[0]!.sealedAt + this.options.triesMs)
          return this.#fail(new Error(`the log did not take an entry within ${this.options.triesMs} ms`))
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

  /**
   * Reads the stream after the last part known to be in and sorts what is there; then publishes what
   * still waits after the stream's end.
   */
  async #resume(): Promise<void> {
    const { last } = await this.log.bounds()
    const parts = new Map<string, { pending: Pending; index: number }>()
    for (const pending of this.#queue)
      for (let index = 1; index <= pending.header.of; index++) parts.set(`${pending.header.digest}/${index}`, { pending, index })
    // What a reader's next entry must follow, moving as this primary's entries are found whole.
    let head = this.#head
    let whole = 0
    for (let seq = this.#confirmed + 1; seq <= last; seq++) {
      const message = await this.log.message(seq)
      if (message === null) continue
      const part = message.part
      const ours = part === null ? undefined : parts.get(`${part.digest}/${part.index}`)
      if (ours !== undefined && part!.node === ours.pending.header.node && part!.epoch === ours.pending.header.epoch) {
        ours.pending.landed[ours.index - 1] = seq
        for (let next = this.#queue[whole]; next?.landed.every((at) => at !== null); next = this.#queue[++whole])
          head = { digest: next.header.digest, epoch: next.header.epoch }
      } else if (part !== null && part.index === 1 && part.prev === head.digest && part.epoch >= head.epoch)
        // An entry another node signed, following what is in place: a reader applies it, so another primary appended.
        throw new DeposedError(
          `the log holds an entry node ${part.node} signed in epoch ${part.epoch} at ${seq}, after this primary's tail`,
        )
      else this.options.skipped(seq, part !== null)
    }
    this.#confirmed = last
    this.#finish()
    // What is left goes again whole, in order, after the stream's end: a part of it that is in already
    // (before a message it did not write) is read past as a part that continues no entry.
    this.#next = last + 1
    this.#repairing = false
    for (const pending of this.#queue) {
      pending.landed.fill(null)
      for (let index = 1; index <= pending.header.of; index++) this.#publish(pending, index, this.#next++)
    }
    this.#reserved = this.#next - 1
  }
}
