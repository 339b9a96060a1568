// The cluster's log on a JetStream stream: every commit of the primary is an entry (one message, or parts of one).
import {
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  JetStreamApiError,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream'
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node'
import { digestOf, unpackEntry, type LogPosition, type Write } from '../core/store/write-set.js'

export const LOG_STREAM = 'PLINTH_LOG'
const LOG_SUBJECT = 'plinth.log'
/** Room left in each message for its headers and the protocol around it. */
const MESSAGE_OVERHEAD = 8 * 1024

/** One entry read back: its writes, the blob files it lists, and where it ends in the log (its appender is in each part's Plinth-Node header). */
export interface LogEntry {
  writes: Write[]
  blobs: string[]
  position: LogPosition
}

/** The log no longer holds the entries after this node's position (trimmed to a newer backup's): the node must restore a backup. */
export class LogGapError extends Error {}

/** The log's "wrong last sequence" refusal: another primary appended since (this one was deposed). */
export function isDeposed(error: unknown): boolean {
  return error instanceof JetStreamApiError && error.code === 10071
}

/**
 * The log: an R3 stream (fewer when the cluster has fewer servers) holding each entry as one message, or
 * as parts when it is larger than the server's `max_payload`; an entry's position is its last part's
 * stream sequence. Appends carry the sequence they expect the stream to end at, so only the primary
 * that knows the tail can append: a deposed one's append is refused by the stream itself.
 */
export class NatsLog {
  readonly #js: JetStreamClient
  readonly #jsm: JetStreamManager
  readonly #partBytes: number

  private constructor(nc: NatsConnection, jsm: JetStreamManager) {
    this.#js = jetstream(nc)
    this.#jsm = jsm
    this.#partBytes = Math.max(64 * 1024, nc.info!.max_payload - MESSAGE_OVERHEAD)
  }

  /** Opens the stream, making it when the cluster has none (replicas: as many servers as there are, at most 3). */
  static async open(nc: NatsConnection, replicas: number): Promise<NatsLog> {
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
    return new NatsLog(nc, jsm)
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

  /**
   * Appends an entry's parts, expecting the stream to end at `after`: each part is published at once
   * (in order, on one connection) so the caller's transaction is not held up, and the promise resolves
   * when the stream acknowledged every part (a quorum of its servers has it). A part that is not
   * acknowledged (a timeout, the stream electing a leader, a server restarting) is published again,
   * once the entry before it (`previous`) is acknowledged, until `deadline`: each part carries a
   * message id (epoch and sequence), so a part the stream already has is acknowledged again as a
   * duplicate instead of being stored twice. Rejects when the stream refuses a part because another
   * primary appended there (`isDeposed`), when the entry before failed, or at the deadline.
   */
  async append(bytes: Uint8Array, after: number, epoch: number, node: string, previous: Promise<void>, deadline: number): Promise<void> {
    const parts = this.partsOf(bytes)
    const publish = (i: number) => {
      const h = natsHeaders()
      h.set('Plinth-Epoch', String(epoch))
      h.set('Plinth-Node', node)
      h.set('Plinth-Part', `${i + 1}/${parts}`)
      const part = bytes.subarray(i * this.#partBytes, (i + 1) * this.#partBytes)
      return this.#js.publish(LOG_SUBJECT, part, {
        headers: h,
        msgID: `${epoch}-${after + i + 1}`,
        expect: { lastSequence: after + i },
        timeout: Math.max(500, Math.min(5000, deadline - Date.now())),
      })
    }
    const first = await Promise.allSettled(Array.from({ length: parts }, (_, i) => publish(i)))
    let next = first.findIndex((result) => result.status === 'rejected')
    if (next === -1) return
    // The entry before must be in the stream before this one can be (a refusal may only mean it was not yet).
    await previous
    let error = (first[next] as PromiseRejectedResult).reason as unknown
    while (next < parts) {
      if (Date.now() >= deadline) throw error
      try {
        await publish(next)
        next++
      } catch (failed) {
        error = failed
        if (isDeposed(failed)) throw failed
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
    }
  }

  /**
   * Reads entries from sequence `from` on, in order, and hands each whole entry to `apply` (awaited:
   * the next is read after it). Stops when `signal` aborts. An ordered consumer: the client re-creates
   * it at the right sequence when messages go missing or its server restarts.
   */
  async follow(from: number, apply: (entry: LogEntry) => Promise<void>, signal: AbortSignal): Promise<void> {
    const consumer = await this.#js.consumers.get(LOG_STREAM, { deliver_policy: DeliverPolicy.StartSequence, opt_start_seq: from })
    const messages = await consumer.consume({ max_messages: 256 })
    if (signal.aborted) return void (await messages.close())
    signal.addEventListener('abort', () => void messages.close(), { once: true })
    const assembler = new Assembler()
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
      const entry = assembler.add(message.seq, message.data, message.headers?.get('Plinth-Part') ?? '1/1', message.headers)
      if (entry !== null) await apply(entry)
    }
  }

  /** Entries from `from` through `to`, in order (catching up before a node serves or leads). */
  async read(from: number, to: number, apply: (entry: LogEntry) => Promise<void>): Promise<void> {
    const assembler = new Assembler()
    for (let seq = from; seq <= to; seq++) {
      const message = await this.#jsm.streams.getMessage(LOG_STREAM, { seq })
      if (message === null) throw new Error(`the log lacks entry ${seq}`)
      const entry = assembler.add(seq, message.data, message.header.get('Plinth-Part') || '1/1', message.header)
      if (entry !== null) await apply(entry)
    }
  }

  /** Every blob file an entry still in the log lists (a replica replaying it fetches them). */
  async listedBlobs(): Promise<Set<string>> {
    const { first, last } = await this.bounds()
    const listed = new Set<string>()
    if (last >= first && last > 0)
      await this.read(first, last, async (entry) => {
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
    const last = await this.#jsm.streams.getMessage(LOG_STREAM, { seq: position.seq }).catch(() => null)
    if (last === null) return null
    if ((await this.digestAt(position.seq)) !== position.digest) return 'not-ours'
    const [, of] = (last.header.get('Plinth-Part') || '1/1').split('/').map(Number)
    const keepFrom = position.seq - of! + 1
    if (keepFrom <= (await this.bounds()).first) return null
    const { purged } = await this.#jsm.streams.purge(LOG_STREAM, { seq: keepFrom })
    return { removed: purged, first: keepFrom }
  }

  /** The digest of the entry ending at `seq` (to tell whether this node's own tail is the log's). */
  async digestAt(seq: number): Promise<string | null> {
    const last = await this.#jsm.streams.getMessage(LOG_STREAM, { seq }).catch(() => null)
    if (last === null) return null
    const [, of] = (last.header.get('Plinth-Part') || '1/1').split('/').map(Number)
    const chunks: Uint8Array[] = []
    for (let s = seq - of! + 1; s <= seq; s++) {
      const part = s === seq ? last : await this.#jsm.streams.getMessage(LOG_STREAM, { seq: s })
      if (part === null) return null
      chunks.push(part.data)
    }
    return digestOf(Buffer.concat(chunks))
  }
}

/** Joins an entry's parts as they arrive in order. */
class Assembler {
  #chunks: Uint8Array[] = []

  add(seq: number, data: Uint8Array, part: string, headers: { get(name: string): string } | undefined): LogEntry | null {
    const [index, of] = part.split('/').map(Number)
    if (index === 1) this.#chunks = []
    else if (this.#chunks.length !== index! - 1) throw new Error(`log entry part ${part} at ${seq} arrived without the parts before it`)
    this.#chunks.push(data)
    if (index !== of) return null
    const bytes = this.#chunks.length === 1 ? this.#chunks[0]! : Buffer.concat(this.#chunks)
    this.#chunks = []
    const { writes, blobs } = unpackEntry(bytes)
    return {
      writes: writes as Write[],
      blobs: blobs as string[],
      position: { seq, epoch: Number(headers?.get('Plinth-Epoch') ?? 0), digest: digestOf(bytes) },
    }
  }
}
