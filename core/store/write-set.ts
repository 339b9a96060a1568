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

/** How far a database reached in the log: the sequence of the last entry applied, its epoch and digest. */
export interface LogPosition {
  seq: number
  epoch: number
  /** SHA-256 (hex) of the entry's packed writes: a node tells its own tail from the log's by it. */
  digest: string
}

/** The envelope of an entry: a list of writes (keys are strings, numbers and arrays of them; values bytes). */
const packr = new Packr({ useRecords: false })

/** An entry as bytes (what the log stores and the digest covers). */
export function packEntry(entry: Entry): Buffer {
  return packr.pack([entry.writes, entry.blobs])
}

export function unpackEntry(bytes: Uint8Array): Entry {
  const packed = packr.unpack(bytes) as unknown
  if (!Array.isArray(packed) || !Array.isArray(packed[0]) || !Array.isArray(packed[1]))
    throw new Error('a log entry is not [writes, blobs]')
  return { writes: packed[0] as Write[], blobs: packed[1] as string[] }
}

export function digestOf(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex')
}
