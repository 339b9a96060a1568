// The cluster's log on a JetStream stream: every commit of the primary is an entry (one message, or parts of one).
import {
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
  type PubAck,
} from '@nats-io/jetstream'
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node'
import { NewerFormatError, unpackEntry, UpgradeNeededError, type Entry, type LogPosition, type Write } from '../core/store/write-set.js'
import { chainDigest, GENESIS, NODE_NAME, type ClusterTrust, type PartHeader } from './trust.js'

export const LOG_STREAM = 'PLINTH_LOG'
export const LOG_SUBJECT = 'plinth.log'
/** Room left in each message for its headers and the protocol around it. */
const MESSAGE_OVERHEAD = 8 * 1024
/** A stretch of the log shorter than this is read a message a request; a longer one (a catch-up) through a consumer. */
const READ_ONE_BY_ONE = 32

/** One entry read back: its writes, the blob files it lists, who appended it, and where it ends in the log. */
export interface LogEntry {
  writes: Write[]
  blobs: string[]
  node: string
  position: LogPosition
  /** The entry's bytes and the chain's digest before it (the backup archive keeps both). */
  bytes: Uint8Array
  prev: string
}

/** Where a followed entry stands in the log as delivered: entries after it then, and when it was appended (ms; null: not known, catching up). */
export interface StreamProgress {
  behind: number
  appendedAt: number | null
}

/** The log no longer holds the entries after this node's position (trimmed to a newer backup's): the node must restore a backup. */
export class LogGapError extends Error {}

/**
 * The log goes on from an entry this node cannot apply (signed, but its writes are not what this build's
 * tables hold): the primary applied it, so this node can follow no further. Most likely the nodes run
 * different builds of Plinth.
 */
export class UnreadableLogError extends LogGapError {}

/** The log's "wrong last sequence" refusal: the stream holds more than the appender expected. */
export function isWrongSequence(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.code === 10071
}

/**
 * Why a message of the log is not applied: no node signed it (`unsigned`: anything a NATS client
 * published), a signed part that continues no entry (`stray`), an entry that does not follow the one
 * applied before it (`unchained`: a replay, or a deposed primary's late entry) or whose writes do not
 * have their tables' shapes (`malformed`). Every node skips the same messages: what it decides depends
 * only on the log and the entries before.
 */
export type SkipReason = 'unsigned' | 'stray' | 'unchained' | 'malformed'

/** Reads a message's header (JetStream's message or a consumer's). */
type HeaderOf = (name: string) => string

/** A part's header fields, or null when the message does not carry them all, well formed. */
function partHeader(get: HeaderOf): { header: PartHeader; mac: string } | null {
  const epoch = get('Plinth-Epoch')
  const node = get('Plinth-Node')
  const part = /^(\d{1,6})\/(\d{1,6})$/.exec(get('Plinth-Part'))
  const prev = get('Plinth-Prev')
  const digest = get('Plinth-Digest')
  const mac = get('Plinth-Mac')
  if (!/^\d{1,15}$/.test(epoch) || !NODE_NAME.test(node) || part === null) return null
  if (!/^[0-9a-f]{64}$/.test(prev) || !/^[0-9a-f]{64}$/.test(digest) || !/^[0-9a-f]{64}$/.test(mac)) return null
  const index = Number(part[1])
  const of = Number(part[2])
  if (index < 1 || index > of) return null
  return { header: { epoch: Number(epoch), node, index, of, prev, digest }, mac }
}

/**
 * Turns the log's messages, in order, into the entries to apply. A part counts only with a valid MAC
 * (the installation's secret signed it). An entry is taken up at its first part only when it follows
 * the entry applied last (`prev` is the chain's digest, its epoch not older); its other parts join it by
 * its digest, whatever sits between them; whole, its bytes must be what its digest says and `check`
 * must find nothing wrong with its writes. Applying it moves the chain, and every other entry taken up
 * can then never follow (dropped). Everything else is skipped and told to `skipped`: what no node
 * signed, a replay or a deposed primary's late entry (`unchained`), a part of no entry taken up
 * (`stray`). With `chain` 'any' (listing the blob files of what the log holds) entries are not held
 * to the chain.
 */
export class EntryReader {
  /** Entries taken up and not whole yet, by digest. */
  readonly #partial = new Map<string, { header: PartHeader; chunks: Uint8Array[] }>()
  /** Signed entries skipped for their writes (an entry that follows one of them is the log going where this node cannot). */
  readonly #unreadable = new Set<string>()
  #chain: { digest: string; epoch: number } | null

  constructor(
    private readonly trust: ClusterTrust,
    chain: LogPosition | null | 'any',
    private readonly check: (entry: Entry) => string | null,
    private readonly skipped: (seq: number, reason: SkipReason, detail: string) => void,
  ) {
    this.#chain = chain === 'any' ? null : chain === null ? { digest: GENESIS, epoch: 0 } : { digest: chain.digest, epoch: chain.epoch }
  }

  take(seq: number, data: Uint8Array, get: HeaderOf): LogEntry | null {
    const signed = partHeader(get)
    if (signed === null || !this.trust.checkPart(signed.header, data, signed.mac)) {
      this.skipped(seq, 'unsigned', signed === null ? 'it carries no entry header' : 'its MAC does not verify')
      return null
    }
    const { header } = signed
    if (header.index === 1) {
      const chain = this.#chain
      if (this.#unreadable.has(header.prev))
        throw new UnreadableLogError(
          `the log goes on at ${seq} from an entry this node could not apply (its writes are not what this build's tables hold): the node that wrote it applied it, so this one can follow no further. Run the same Plinth on every node`,
        )
      if (chain !== null && (header.prev !== chain.digest || header.epoch < chain.epoch)) {
        this.skipped(
          seq,
          'unchained',
          header.prev !== chain.digest
            ? `it follows entry ${header.prev.slice(0, 12)}, and the last applied is ${chain.digest.slice(0, 12)} (a replay, or a deposed primary's late entry)`
            : `its epoch ${header.epoch} is older than the last applied entry's ${chain.epoch} (a deposed primary's)`,
        )
        return null
      }
      this.#partial.set(header.digest, { header, chunks: [] })
    }
    const partial = this.#partial.get(header.digest)
    if (
      partial === undefined ||
      partial.chunks.length !== header.index - 1 ||
      partial.header.of !== header.of ||
      partial.header.prev !== header.prev ||
      partial.header.epoch !== header.epoch
    ) {
      this.skipped(seq, 'stray', `part ${header.index}/${header.of} of entry ${header.digest.slice(0, 12)} continues no entry taken up`)
      return null
    }
    partial.chunks.push(data)
    if (header.index !== header.of) return null
    this.#partial.delete(header.digest)
    const { chunks } = partial
    const bytes = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
    if (chainDigest(header.prev, bytes) !== header.digest) {
      this.skipped(seq, 'malformed', 'its bytes are not what its digest says')
      return null
    }
    let entry: Entry
    try {
      entry = unpackEntry(bytes)
    } catch (error) {
      // Signed by a node of this installation: a newer build's entry, which every node after it applies.
      if (error instanceof NewerFormatError)
        throw new UpgradeNeededError(
          `the log's entry ${seq} (appended by node ${header.node}, epoch ${header.epoch}) ${error.message}: that node runs a newer Plinth. Upgrade this node to it and start it again: it applied nothing of that entry, and goes on from where it stopped`,
        )
      this.skipped(seq, 'malformed', (error as Error).message)
      return null
    }
    const problem = this.check(entry)
    if (problem !== null) {
      this.#unreadable.add(header.digest)
      this.skipped(seq, 'malformed', problem)
      return null
    }
    if (this.#chain !== null) {
      this.#chain = { digest: header.digest, epoch: header.epoch }
      // Nothing else taken up can follow the chain now.
      this.#partial.clear()
    }
    return {
      writes: entry.writes as Write[],
      blobs: entry.blobs as string[],
      node: header.node,
      position: { seq, epoch: header.epoch, digest: header.digest },
      bytes,
      prev: header.prev,
    }
  }
}

/** A message of the log as read back: its sequence, bytes, and its part header when signed (else null). */
export interface LogMessage {
  seq: number
  data: Uint8Array
  part: PartHeader | null
}

/**
 * The log: an R3 stream (fewer when the cluster has fewer servers) holding each entry as one message, or
 * as parts when it is larger than the server's `max_payload`; an entry's position is its last part's
 * stream sequence. Appends carry the sequence they expect the stream to end at (cluster/appender.ts), so
 * only the primary that knows the tail can append; every part is signed, so what any other NATS client
 * publishes is read past.
 */
export class NatsLog {
  readonly #js: JetStreamClient
  readonly #jsm: JetStreamManager
  readonly #partBytes: number
  readonly #trust: ClusterTrust

  private constructor(nc: NatsConnection, jsm: JetStreamManager, trust: ClusterTrust) {
    this.#js = jetstream(nc)
    this.#jsm = jsm
    this.#partBytes = Math.max(64 * 1024, nc.info!.max_payload - MESSAGE_OVERHEAD)
    this.#trust = trust
  }

  /** Opens the stream, making it when the cluster has none (replicas: as many servers as there are, at most 3). */
  static async open(nc: NatsConnection, replicas: number, trust: ClusterTrust): Promise<NatsLog> {
    const jsm = await jetstreamManager(nc, { checkAPI: false })
    try {
      await jsm.streams.info(LOG_STREAM)
    } catch (error) {
      if (!(error instanceof JetStreamApiError) || error.code !== 10059) throw error
      await jsm.streams
        .add({ name: LOG_STREAM, subjects: [LOG_SUBJECT], num_replicas: replicas, max_msg_size: -1 })
        .catch((made: unknown) => {
          // Another node made it at the same moment.
          if (!(made instanceof JetStreamApiError) || made.code !== 10058) throw made
        })
    }
    return new NatsLog(nc, jsm, trust)
  }

  /** The stream's last sequence (0: empty) and first (what a node further behind cannot replay from). */
  async bounds(): Promise<{ first: number; last: number }> {
    const info = await this.#jsm.streams.info(LOG_STREAM)
    return { first: info.state.first_seq, last: info.state.last_seq }
  }

  /** How many messages an entry of these packed bytes takes. */
  partsOf(bytes: Uint8Array): number {
    return Math.max(1, Math.ceil(bytes.byteLength / this.#partBytes))
  }

  /** The bytes of part `index` (from 1) of an entry. */
  part(bytes: Uint8Array, index: number): Uint8Array {
    return bytes.subarray((index - 1) * this.#partBytes, index * this.#partBytes)
  }

  /**
   * Publishes one signed part at `seq`, expecting the stream to end at `seq - 1`; resolves the stream's
   * acknowledgement. Its message id is the key's (unguessable), so the stream's duplicate window makes a
   * retry at the same sequence idempotent and nobody else can take the id first.
   */
  publish(header: PartHeader, data: Uint8Array, seq: number, timeoutMs: number): Promise<PubAck> {
    const mac = this.#trust.partMac(header, data)
    const h = natsHeaders()
    h.set('Plinth-Epoch', String(header.epoch))
    h.set('Plinth-Node', header.node)
    h.set('Plinth-Part', `${header.index}/${header.of}`)
    h.set('Plinth-Prev', header.prev)
    h.set('Plinth-Digest', header.digest)
    h.set('Plinth-Mac', mac)
    return this.#js.publish(LOG_SUBJECT, data, {
      headers: h,
      msgID: this.#trust.messageId(header.epoch, seq, mac),
      expect: { lastSequence: seq - 1 },
      timeout: timeoutMs,
    })
  }

  /** The message at `seq` (null when the stream lacks it), with its part header when a node signed it. */
  async message(seq: number): Promise<LogMessage | null> {
    const stored = await this.#jsm.streams.getMessage(LOG_STREAM, { seq }).catch((error: unknown) => {
      if (error instanceof JetStreamApiError && error.code === 10037) return null
      throw error
    })
    if (stored === null) return null
    const signed = partHeader((name) => stored.header.get(name))
    const part = signed !== null && this.#trust.checkPart(signed.header, stored.data, signed.mac) ? signed.header : null
    return { seq, data: stored.data, part }
  }

  /**
   * Reads entries from sequence `from` on, in order, through `reader`, and hands each whole entry to
   * `apply` (awaited: the next is read after it). Stops when `signal` aborts. An ordered consumer: the
   * client re-creates it at the right sequence when messages go missing or its server restarts.
   */
  async follow(
    from: number,
    reader: EntryReader,
    apply: (entry: LogEntry, stream: StreamProgress) => Promise<void>,
    signal: AbortSignal,
  ): Promise<void> {
    const consumer = await this.#js.consumers.get(LOG_STREAM, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from })
    const messages = await consumer.consume({ max_messages: 256 })
    if (signal.aborted) return void (await messages.close())
    signal.addEventListener('abort', () => void messages.close(), { once: true })
    // The server starts a consumer at the first entry it still has: a start past a trimmed part of the log is a gap, never skipped.
    let expected = from
    for await (const message of messages) {
      // Messages already delivered keep coming after close(): none is applied once the caller let go
      // (it may be closing the store, or following again from its position with a new consumer).
      if (signal.aborted) return
      if (message.seq !== expected)
        throw new LogGapError(
          `the log was trimmed past this node's position: it needs entry ${expected} and the log starts at ${message.seq}; a node started again with PLINTH_CLUSTER_BACKUPS restores the newest backup and replays the log after it`,
        )
      expected++
      const entry = reader.take(message.seq, message.data, (name) => message.headers?.get(name) ?? '')
      if (entry !== null) await apply(entry, { behind: message.info.pending, appendedAt: message.info.timestampNanos / 1e6 })
    }
  }

  /** A reader of this log's entries after `chain` (see EntryReader). */
  reader(
    chain: LogPosition | null,
    check: (entry: Entry) => string | null,
    skipped: (seq: number, reason: SkipReason, detail: string) => void,
  ): EntryReader {
    return new EntryReader(this.#trust, chain, check, skipped)
  }

  /**
   * Entries from `from` through `to`, in order (catching up before a node serves or leads; a primary
   * finding out which of its entries are in); `stop`, asked before each message, ends it early (throws).
   */
  async read(
    from: number,
    to: number,
    reader: EntryReader,
    apply: (entry: LogEntry) => Promise<void>,
    stop: () => boolean = () => false,
  ): Promise<void> {
    if (to - from < READ_ONE_BY_ONE) {
      for (let seq = from; seq <= to; seq++) {
        if (stop()) throw new Error(`reading the log stopped at ${seq}`)
        const message = await this.#jsm.streams.getMessage(LOG_STREAM, { seq })
        if (message === null) throw new Error(`the log lacks entry ${seq}`)
        const entry = reader.take(seq, message.data, (name) => message.header.get(name))
        if (entry !== null) await apply(entry)
      }
      return
    }
    // A longer stretch (a catch-up) comes through a consumer, many messages a request, not one request each.
    const consumer = await this.#js.consumers.get(LOG_STREAM, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from })
    const messages = await consumer.consume({ max_messages: 256 })
    try {
      let seq = from
      for await (const message of messages) {
        if (stop()) throw new Error(`reading the log stopped at ${seq}`)
        if (message.seq !== seq) throw new Error(`the log lacks entry ${seq}`)
        const entry = reader.take(seq, message.data, (name) => message.headers?.get(name) ?? '')
        if (entry !== null) await apply(entry)
        if (++seq > to) return
      }
      throw new Error(`the log lacks entry ${seq}`)
    } finally {
      await messages.close().catch(() => undefined)
    }
  }

  /** Every blob file an entry still in the log lists (a replica replaying it fetches them). */
  async listedBlobs(): Promise<Set<string>> {
    const { first, last } = await this.bounds()
    const listed = new Set<string>()
    const reader = new EntryReader(
      this.#trust,
      'any',
      () => null,
      () => undefined,
    )
    if (last >= first && last > 0)
      await this.read(first, last, reader, async (entry) => {
        for (const hash of entry.blobs) listed.add(hash)
      })
    return listed
  }

  /**
   * Removes the entries before the one ending at `position.seq`, which stays whole (a node restored to
   * exactly that position finds its own tail in the log), when that entry is the log's (its digest
   * matches: a backup of another cluster, or of an embedded server, trims nothing). Resolves the
   * entries removed and the log's new first sequence; null when nothing was before it; 'not-ours' when
   * the log holds other writes at that sequence.
   */
  async trimBefore(position: LogPosition): Promise<{ removed: number; first: number } | 'not-ours' | null> {
    const last = await this.message(position.seq)
    if (last === null) return null
    if (last.part === null || last.part.index !== last.part.of || last.part.digest !== position.digest) return 'not-ours'
    // Its first part: other messages may sit between its parts.
    let keepFrom = position.seq
    for (let seq = position.seq - 1, found = 1; found < last.part.of && seq > 0; seq--) {
      const message = await this.message(seq)
      if (message === null) return null
      if (message.part?.digest === position.digest) {
        found++
        keepFrom = seq
      }
    }
    if (keepFrom <= (await this.bounds()).first) return null
    const { purged } = await this.#jsm.streams.purge(LOG_STREAM, { seq: keepFrom })
    return { removed: purged, first: keepFrom }
  }

  /** The chained digest of the entry ending at `seq` (to tell whether this node's own tail is the log's); null when no signed entry ends there. */
  async digestAt(seq: number): Promise<string | null> {
    const message = await this.message(seq).catch(() => null)
    if (message?.part == null || message.part.index !== message.part.of) return null
    return message.part.digest
  }
}
