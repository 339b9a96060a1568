// The primary's side of the seam between the store and the cluster: the CommitLog its commits are sealed into.
import { ApiError } from '../core/errors.js'
import type { Replication } from '../core/store/replication.js'
import { packEntry, type CommitLog, type Entry, type LogPosition } from '../core/store/write-set.js'
import { DeposedError, type Appender } from './appender.js'
import { chainDigest } from './trust.js'

/** What the primary log asks of the node that leads. */
export interface Leading {
  /** Null while this node may seal; otherwise why not (it may step down first: a lease gone stale). */
  refusal(): string | null
  /** The log refused or lost an append: this node must stop leading. */
  stepDown(reason: string): void
}

/**
 * `CommitLog` (core/store/write-set.ts) as the cluster implements it for one epoch of one primary: each
 * commit's writes checked against their tables' shapes (a write every replica would skip is refused
 * here, before anything is written), chained to the entry before (`prev`, `digest`), and handed to the
 * appender, pipelined; the commit is answered once the log acknowledged it (`sealed`). An append the
 * log refuses (another primary appended: DeposedError) or never acknowledges makes the node step down,
 * and that commit's outcome is unknown to its caller (503).
 */
export class PrimaryLog implements CommitLog {
  #chain: string
  /** Appends not yet acknowledged (a primary that steps down waits for them before checking its position). */
  readonly #appending = new Set<Promise<unknown>>()
  /** The backup archive's turn: each acknowledged entry handed to it in order. */
  #archived: Promise<void> = Promise.resolve()

  constructor(
    private readonly appender: Appender,
    chain: string,
    readonly epoch: number,
    private readonly node: string,
    private readonly replication: Replication,
    private readonly leading: Leading,
  ) {
    this.#chain = chain
  }

  seal(entry: Entry): { position: LogPosition; acked: LogPosition; sealed: Promise<void> } {
    if (this.leading.refusal() !== null)
      throw new ApiError('unavailable', 'This node stopped leading the cluster: nothing was changed; try again in a few seconds')
    // A write whose records do not have their tables' shapes would be skipped by every replica: it is refused here, before it is written.
    const problem = this.replication.checkEntry(entry)
    if (problem !== null) throw new Error(`a commit's writes do not have their tables' shapes (${problem}); nothing was written`)
    const bytes = packEntry(entry)
    const prev = this.#chain
    const digest = chainDigest(prev, bytes)
    this.#chain = digest
    const { predicted, landed } = this.appender.add(bytes, { epoch: this.epoch, node: this.node, prev, digest })
    const position: LogPosition = { seq: predicted, epoch: this.epoch, digest }
    const acked = this.appender.acked
    const sealed = landed.then(
      () => undefined,
      (error: unknown) => {
        this.leading.stepDown(
          error instanceof DeposedError
            ? `another primary appended to the log (${error.message})`
            : `the log did not acknowledge an entry: ${String(error)}`,
        )
        throw new ApiError(
          'unavailable',
          'The cluster did not acknowledge this write (this node stopped leading it): its outcome is unknown; read the resource again before retrying',
        )
      },
    )
    // The backup archive (on this node) holds what the log acknowledged, in order.
    const archive = this.replication.archive
    if (archive !== null) {
      const at = Date.now()
      this.#archived = this.#archived
        .then(() => landed)
        .then(
          // Where it landed (later than sealed for, if messages no reader applies went before it).
          (seq) => archive.take([{ position: { ...position, seq }, prev, at, bytes, blobs: entry.blobs }]),
          () => undefined,
        )
    }
    this.#appending.add(sealed)
    void sealed.then(
      () => this.#appending.delete(sealed),
      () => this.#appending.delete(sealed),
    )
    return { position, acked, sealed }
  }

  /** The last entry the log acknowledged, and whether nothing is in flight. */
  get acked(): LogPosition {
    return this.appender.acked
  }

  get idle(): boolean {
    return this.appender.idle
  }

  /** No more appends (a step-down): those in flight fail with `reason`. */
  stop(reason: string): void {
    this.appender.stop(new Error(`this node stepped down: ${reason}`))
  }

  /** Resolves when every append sealed so far was acknowledged or refused. */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#appending])
  }
}
