// A commit's writes as the cluster's log carries them: puts and removes by table, packed when made.
import { Packr } from 'msgpackr'
import { createHash } from 'node:crypto'
import type { Key } from './tables.js'

/**
 * One write: a table's name, the key, and the value's bytes exactly as the table stores them (its
 * msgpack encoding, or the raw bytes of a binary table; null: the key was removed). A replica writes
 * those bytes through a binary handle of the same table, so its database holds what the primary's does.
 */
export type Write = readonly [table: string, key: Key, value: Buffer | null]

/**
 * What the store hands the log at the end of a commit's callback, still inside its transaction: the
 * writes in the order they were made. `seal` returns the sequence this commit will have in the log
 * (the store records it with the writes, so a node knows how far its database reached) or throws to
 * refuse the commit (a node that is not the primary writes nothing). `sealed` resolves when the log
 * has the entry (a quorum acknowledged it); `commit`'s promise resolves only after both that and the
 * local transaction.
 */
export interface CommitLog {
  /**
   * `acked`: the last entry the log is known to hold as every reader applies it, recorded beside the
   * position (a restart checks the entries between the two against the log before it trusts them).
   */
  seal(entry: Entry): { position: LogPosition; acked: LogPosition; sealed: Promise<void> }
}

/**
 * A log entry: a commit's writes, and the blob files placed since the previous entry (a replica has
 * their bytes before it applies the writes, which may name them).
 */
export interface Entry {
  writes: readonly Write[]
  blobs: readonly string[]
}

/**
 * An entry as a chain holds it (a cluster's log, or the embedded server's archive): its position, the
 * digest of the entry before, when it became this store's (ms), its bytes, and the blob files it lists
 * (in the bytes too; named so the archive copies them without unpacking).
 */
export interface ChainedEntry {
  position: LogPosition
  prev: string
  at: number
  bytes: Uint8Array
  blobs: readonly string[]
}

/** Where a store hands each entry once it is its own (the backup archive on a cluster's node). */
export interface EntrySink {
  take(entries: readonly ChainedEntry[]): void
}

/** How far a database reached in the log: the sequence of the last entry applied, its epoch and digest. */
export interface LogPosition {
  seq: number
  epoch: number
  /** SHA-256 (hex) of the entry's packed writes: a node tells its own tail from the log's by it. */
  digest: string
}

/** The envelope of an entry: a list of writes (keys are strings, numbers and arrays of them; values bytes). */
const packr = new Packr({ useRecords: false })

/**
 * Tests of a rolling upgrade run this build as the next one (`PLINTH_TEST_LOG_FORMAT=3`): it writes
 * entries in the next format and has a migration to run. Unset (every real start), this build is itself.
 */
const NEXT_BUILD = process.env.PLINTH_TEST_LOG_FORMAT === '3'

/**
 * The format of the log entries this build writes, and the newest it reads. It counts up whenever an
 * entry's envelope or a record's schema changes (a schema migration comes with a new format, so no
 * node applies a record newer than its build reads): a newer build reads every older format, so
 * during a rolling upgrade it applies an older primary's entries; an older build stops at the first
 * entry in a newer format (NewerFormatError), before applying any of it.
 *
 * - 1: `[writes, blobs]`.
 * - 2: `[2, writes, blobs]`, and the tables of sites' functions (`function-variables`, `function-kv`);
 *   every later format is an array that starts with its number.
 * - 3 (test-only, the next build of a rolling-upgrade test): `[3, writes, blobs]`.
 */
export const LOG_FORMAT: number = NEXT_BUILD ? 3 : 2

/** A log entry in a format newer than this build reads: written by a newer Plinth. */
export class NewerFormatError extends Error {
  constructor(readonly format: number) {
    super(`it is in log format ${format}, and this build of Plinth reads formats up to ${LOG_FORMAT}`)
  }
}

/** An entry as bytes (what the log stores and the digest covers), in this build's format. */
export function packEntry(entry: Entry): Buffer {
  return packr.pack([LOG_FORMAT, entry.writes, entry.blobs])
}

/**
 * A node met a log entry its build cannot read (a newer format), signed by a node of its installation:
 * it must be upgraded. It applied nothing of that entry; started again as it is, it would meet the same
 * entry (`plinth start` exits 78, which deploy/cluster/plinth.service does not restart).
 */
export class UpgradeNeededError extends Error {}

/** An entry's bytes read back, in any format up to this build's (an older primary's too); a newer one throws NewerFormatError. */
export function unpackEntry(bytes: Uint8Array): Entry {
  const packed = packr.unpack(bytes) as unknown
  if (!Array.isArray(packed)) throw new Error('a log entry is not an array')
  const format = typeof packed[0] === 'number' ? packed[0] : 1
  if (!Number.isInteger(format) || format < 1) throw new Error(`a log entry names format ${String(format)}`)
  if (format > LOG_FORMAT) throw new NewerFormatError(format)
  const [writes, blobs] = format === 1 ? packed : packed.slice(1)
  if (!Array.isArray(writes) || !Array.isArray(blobs) || packed.length !== (format === 1 ? 2 : 3))
    throw new Error(`a log entry of format ${format} is not ${format === 1 ? '[writes, blobs]' : `[${format}, writes, blobs]`}`)
  return { writes: writes as Write[], blobs: blobs as string[] }
}

/** An entry's chained digest: it names the entry and everything before it (an entry is applied only after its `prev`; a cluster's log and the backup archive chain entries so). */
export function chainDigest(prev: string, bytes: Uint8Array): string {
  return createHash('sha256').update(prev).update('\n').update(bytes).digest('hex')
}

/** The `prev` of a chain's first entry. */
export const GENESIS = '0'.repeat(64)

export function digestOf(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}
