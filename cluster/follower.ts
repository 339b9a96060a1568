// A node reading the cluster's log into its store: the catch-up at a start or before leading, then the following.
import type { Logger } from '../core/log.js'
import type { Replication } from '../core/store/replication.js'
import { UpgradeNeededError } from '../core/store/write-set.js'
import type { ClusterBlobs } from './blobs.js'
import { EntryReader, LogGapError, type LogEntry, type NatsLog, type SkipReason, type StreamProgress } from './log.js'
import type { ClusterTrust } from './trust.js'

/** Skipped log messages are logged at most once in this long (plinth_cluster_refused_total counts each). */
const SKIP_LOG_MS = 10_000
/** A replica whose position has not moved this long while the log's has makes its consumer again. */
const STALL_MS = 5000

/** A catch-up says how far it got this often. */
const CATCH_UP_LOG_MS = 2000
/** A catch-up applies up to this many entries in one transaction (one flush to disk for them all)... */
const CATCH_UP_BATCH = 500
/** ...or fewer, once their writes hold this many bytes (entries may carry files). */
const CATCH_UP_BATCH_BYTES = 16 << 20

/**
 * How a replica keeps up (/metrics): entries the log held after the last one applied when it was
 * delivered, how long after its append that one was applied, and when (null: nothing applied yet).
 */
export interface ReplicaProgress {
  behind: number
  lagMs: number
  appliedAt: number | null
}

/** What the follower is given by its node. */
export interface FollowerParts {
  log: NatsLog
  trust: ClusterTrust
  blobs: ClusterBlobs
  logger: Logger
  /** The store's side of the log (read when needed: the node joins a store after it connected). */
  replication: () => Replication
  /** A message of the log skipped, counted in /metrics. */
  refused: (reason: SkipReason) => void
  /** An entry applied (the caches took its writes): the node tells the primary once its serving threads serve it. */
  applied: (seq: number) => void
  /** The log was trimmed past this node (a restart restores a backup), or goes on in a newer format (`upgrade`): it cannot go on. */
  lost: (reason: string, upgrade: boolean) => void
}

/**
 * Applies the log's entries to the store, in order and once each: entries after the store's position,
 * signed, chained and of the right shape (`EntryReader`); anything else skipped the same way on every
 * node, counted once however often it is read, and logged (a flood is one line every SKIP_LOG_MS). Each
 * entry's blob files are fetched from the cluster's blob store before its writes (a version goes live
 * only with all its bytes). A following that fails starts again from the position a second later; one
 * that delivers nothing while the log grows (`watch`, every half lease) is made again after STALL_MS.
 */
export class Follower {
  #following: AbortController | null = null
  /** Entries applied one after another, so the position only moves forward. */
  #applying: Promise<void> = Promise.resolve()
  /** The position the stall watch last saw move, and when. */
  #stalled = { applied: 0, since: 0 }
  /** The last log sequence skipped and counted (a following made again reads the same messages again). */
  #skippedUpTo = 0
  #skipLog = { at: 0, unlogged: 0 }
  /** The last sequence the catch-up read (a new primary's appends go after it, whatever it skipped). */
  #caughtUpTo = 0

  constructor(private readonly parts: FollowerParts) {}

  /** The store's position in the log (0 before any entry). */
  get applied(): number {
    return this.parts.replication().position()?.seq ?? 0
  }

  /** The last sequence the catch-up read. */
  get caughtUpTo(): number {
    return this.#caughtUpTo
  }

  /** Reads the log from the store's position to its current end (a start, or a node about to lead). */
  async catchUp(): Promise<void> {
    const from = this.applied + 1
    const { first, last } = await this.parts.log.bounds()
    if (last < from) return
    if (from < first)
      throw new Error(
        `the log starts at entry ${first} and this node's data directory is at ${from - 1}: restore the newest backup (plinth restore) and start again`,
      )
    // The operator sees the catch-up move: where it starts, every 2 s how far and how fast, and its end.
    const began = Date.now()
    let told = began
    const rate = (done: number, now: number) => Math.round(done / Math.max(0.001, (now - began) / 1000))
    this.parts.logger.info('catching up with the log', { behind: last - from + 1, from, to: last })
    // Entries are applied in batches, each one transaction (one flush to disk for up to CATCH_UP_BATCH entries).
    let batch: LogEntry[] = []
    let bytes = 0
    const flush = async () => {
      if (batch.length === 0) return
      const entries = batch
      batch = []
      bytes = 0
      await this.#applyBatch(entries, { behind: last - entries[entries.length - 1]!.position.seq, appendedAt: null })
      const now = Date.now()
      if (now - told < CATCH_UP_LOG_MS) return
      told = now
      const done = entries[entries.length - 1]!.position.seq - from + 1
      this.parts.logger.info('catching up with the log', { applied: done, behind: last - from + 1 - done, perSecond: rate(done, now) })
    }
    await this.parts.log.read(from, last, this.#reader(), async (entry) => {
      batch.push(entry)
      for (const [, , value] of entry.writes) bytes += value?.byteLength ?? 0
      if (batch.length >= CATCH_UP_BATCH || bytes >= CATCH_UP_BATCH_BYTES) await flush()
    })
    await flush()
    const ended = Date.now()
    this.parts.logger.info('caught up with the log', {
      entries: last - from + 1,
      seconds: (ended - began) / 1000,
      perSecond: rate(last - from + 1, ended),
    })
    this.#caughtUpTo = last
  }

  /** Follows the log from the store's position until `stop`. */
  start(): void {
    this.#stalled = { applied: this.applied, since: Date.now() }
    this.#restart()
  }

  /** Stops following; resolves when the entry being applied (if any) is in. */
  async stop(): Promise<void> {
    this.#following?.abort()
    await this.#applying.catch(() => undefined)
  }

  /**
   * A message of the log not applied: counted once, however often it is read, and logged (a flood of
   * them is one line every SKIP_LOG_MS, saying how many went unlogged).
   */
  skipped(seq: number, reason: SkipReason, detail: string): void {
    if (seq <= this.#skippedUpTo) return
    this.#skippedUpTo = seq
    this.parts.refused(reason)
    const now = Date.now()
    if (now - this.#skipLog.at < SKIP_LOG_MS) return void this.#skipLog.unlogged++
    this.parts.logger.warn('a message of the log was not applied (every node skips it the same way)', {
      seq,
      reason,
      detail,
      ...(this.#skipLog.unlogged > 0 ? { skippedUnlogged: this.#skipLog.unlogged } : {}),
    })
    this.#skipLog = { at: now, unlogged: 0 }
  }

  /**
   * A consumer that delivers nothing while the log grows (NATS users report watches that hang after a
   * server restart) is made again from this node's position: checked on the lease watch's timer.
   */
  async watch(): Promise<void> {
    const now = Date.now()
    if (this.applied !== this.#stalled.applied) {
      this.#stalled = { applied: this.applied, since: now }
      return
    }
    if (now - this.#stalled.since < STALL_MS || this.#following === null || this.#following.signal.aborted) return
    this.#stalled.since = now
    const last = await this.parts.log.bounds().then(
      (b) => b.last,
      () => 0,
    )
    if (last <= Math.max(this.applied, this.#skippedUpTo) || this.#following.signal.aborted) return
    this.parts.logger.warn('following the log stalled (the log moved on, nothing arrived); making the consumer again', {
      position: this.applied,
      log: last,
    })
    this.#restart()
  }

  /** What reads the log for this node: entries after its position, signed, chained and of the right shape; the rest skipped and counted. */
  #reader(): EntryReader {
    const replication = this.parts.replication()
    return new EntryReader(
      this.parts.trust,
      replication.position(),
      (entry) => replication.checkEntry(entry),
      (seq, reason, detail) => this.skipped(seq, reason, detail),
    )
  }

  /** One entry: its blob files fetched first (a version goes live here only with all its bytes), then its writes. */
  #apply(entry: LogEntry, stream: StreamProgress): Promise<void> {
    return this.#applyBatch([entry], stream)
  }

  /** Consecutive entries, their writes in one transaction (those the store already has are passed over). */
  async #applyBatch(entries: readonly LogEntry[], stream: StreamProgress): Promise<void> {
    const replication = this.parts.replication()
    const at = replication.position()?.seq ?? 0
    const fresh = entries.filter((entry) => entry.position.seq > at)
    if (fresh.length === 0) return
    await replication.applyEntries(
      fresh.map((entry) => ({ entry, position: entry.position })),
      (hash, into) => this.parts.blobs.fetch(hash, into),
    )
    const entry = fresh[fresh.length - 1]!
    const now = Date.now()
    replication.archive?.take(fresh.map((e) => ({ position: e.position, prev: e.prev, at: now, bytes: e.bytes, blobs: e.blobs })))
    this.progress = {
      behind: stream.behind,
      lagMs: stream.appendedAt === null ? this.progress.lagMs : Math.max(0, now - stream.appendedAt),
      appliedAt: now,
    }
    this.parts.applied(entry.position.seq)
  }

  /** How this node keeps up with the log (the last entry applied). */
  progress: ReplicaProgress = { behind: 0, lagMs: 0, appliedAt: null }

  #restart(): void {
    this.#following?.abort()
    const controller = new AbortController()
    this.#following = controller
    const run = (): void => {
      // An entry still being applied by the consumer before is finished first (each is applied once, in order).
      void this.#applying
        .catch(() => undefined)
        .then(() =>
          this.parts.log.follow(
            this.applied + 1,
            this.#reader(),
            (entry, stream) => (this.#applying = this.#apply(entry, stream)),
            controller.signal,
          ),
        )
        .then(
          () => 'the consumer ended',
          (error: unknown) => error,
        )
        .then((why) => {
          if (controller.signal.aborted) return
          // Trimmed past this node: it cannot go on from here (a restart restores a backup).
          if (why instanceof LogGapError || why instanceof UpgradeNeededError) {
            controller.abort()
            return this.parts.lost(why.message, why instanceof UpgradeNeededError)
          }
          this.parts.logger.error("following the log stopped; starting again from this node's position in 1 s", {
            position: this.applied,
            why: String(why),
          })
          setTimeout(() => !controller.signal.aborted && run(), 1000).unref()
        })
    }
    run()
  }
}
