// The continuous archive's segment files (PLINTH_BACKUP_ARCHIVE): numbered, appended in chunks, each chunk encrypted and authenticated.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Packr } from 'msgpackr'
import { deriveKey } from '../installation-secret.js'
import { chainDigest } from '../store/write-set.js'
import type { LogPosition } from '../store/write-set.js'

/** The archive's directory under a backup root: segments `000000000001.seg`, `000000000002.seg`, … */
export const ARCHIVE_DIR = 'archive'
const SEGMENT_NAME = /^(\d{12})\.seg$/
/** The bytes before each chunk: its length. */
const LENGTH_BYTES = 4
const NONCE_BYTES = 12
const TAG_BYTES = 16

/**
 * One commit as archived: its position in the store's chain of entries (`prev`: the digest of the one
 * before; `digest` = chainDigest(prev, bytes), as a cluster's log chains them), when it was committed
 * (ms), and its bytes in the log entry format (core/store/write-set.ts: the writes and the blob files
 * placed for it, which the archive holds under the root's `blobs/` before the chunk naming them).
 */
export interface ArchivedEntry {
  position: LogPosition
  prev: string
  at: number
  bytes: Uint8Array
}

const packr = new Packr({ useRecords: false })

/** The archive's key (AES-256-GCM), derived from the installation's secret: a segment is read and checked only with it. */
export function archiveKey(secret: Buffer): Buffer {
  return deriveKey(secret, 'backup archive segments')
}

export function segmentName(number: number): string {
  return `${String(number).padStart(12, '0')}.seg`
}

/** The archive's segments under `root`, in order. */
export function listSegments(root: string): { number: number; path: string }[] {
  const dir = join(root, ARCHIVE_DIR)
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .map((name) => ({ match: SEGMENT_NAME.exec(name), name }))
    .filter((s) => s.match !== null)
    .map((s) => ({ number: Number(s.match![1]), path: join(dir, s.name) }))
    .sort((a, b) => a.number - b.number)
}

/** The additional data a chunk is authenticated with: its segment and place, so no chunk is moved, dropped or replayed unseen. */
function aad(segment: number, index: number): Buffer {
  return Buffer.from(`plinth archive ${segment} ${index}`)
}

/** One chunk's bytes (length, nonce, ciphertext, tag) holding `entries`. */
export function sealChunk(key: Buffer, segment: number, index: number, entries: readonly ArchivedEntry[]): Buffer {
  const nonce = randomBytes(NONCE_BYTES)
  const cipher = createCipheriv('aes-256-gcm', key, nonce)
  cipher.setAAD(aad(segment, index))
  const plain = packr.pack(entries.map((e) => [e.position.seq, e.position.epoch, e.prev, e.position.digest, e.at, e.bytes]))
  const body = Buffer.concat([nonce, cipher.update(plain), cipher.final(), cipher.getAuthTag()])
  const length = Buffer.alloc(LENGTH_BYTES)
  length.writeUInt32BE(body.length)
  return Buffer.concat([length, body])
}

/** A segment as read: its entries, and where its last whole chunk ends (a torn tail: a chunk cut short by a crash). */
export interface ReadSegment {
  entries: ArchivedEntry[]
  chunks: number
  /** Byte length of the whole chunks (the file's size, unless its tail is torn). */
  whole: number
  /** What is wrong with the segment, or null: a chunk that does not authenticate, or an entry whose digest is not its bytes'. */
  problem: string | null
  torn: boolean
}

/**
 * Reads a segment, checking each chunk (AES-GCM: written by this installation, unchanged, in its
 * place) and each entry's digest. A last chunk cut short is `torn` (a crash mid-append); every other
 * failure is a `problem`, and reading stops there.
 */
export function readSegment(key: Buffer, number: number, path: string): ReadSegment {
  const bytes = readFileSync(path)
  const read: ReadSegment = { entries: [], chunks: 0, whole: 0, problem: null, torn: false }
  for (let offset = 0; offset < bytes.length;) {
    if (offset + LENGTH_BYTES > bytes.length) return { ...read, torn: true }
    const length = bytes.readUInt32BE(offset)
    const end = offset + LENGTH_BYTES + length
    if (end > bytes.length) return { ...read, torn: true }
    if (length < NONCE_BYTES + TAG_BYTES) return { ...read, problem: `chunk ${read.chunks + 1} at byte ${offset} is too short to be one` }
    const body = bytes.subarray(offset + LENGTH_BYTES, end)
    let plain: Buffer
    try {
      const decipher = createDecipheriv('aes-256-gcm', key, body.subarray(0, NONCE_BYTES))
      decipher.setAAD(aad(number, read.chunks))
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES))
      plain = Buffer.concat([decipher.update(body.subarray(NONCE_BYTES, body.length - TAG_BYTES)), decipher.final()])
    } catch {
      return {
        ...read,
        problem: `chunk ${read.chunks + 1} (at byte ${offset}) does not authenticate: changed since it was written, moved from another place, or another installation's (another secret)`,
      }
    }
    for (const [seq, epoch, prev, digest, at, entry] of packr.unpack(plain) as [number, number, string, string, number, Uint8Array][]) {
      if (chainDigest(prev, entry) !== digest) return { ...read, problem: `entry ${seq}'s bytes are not what its digest says` }
      read.entries.push({ position: { seq, epoch, digest }, prev, at, bytes: entry })
    }
    read.chunks++
    read.whole = end
    offset = end
  }
  return read
}

/** The whole archive under a root, checked: its entries in order, and every problem (a gap in the numbering or the chain included). */
export function readArchive(
  root: string,
  secret: Buffer,
): { entries: ArchivedEntry[]; segments: number; problems: string[]; tornTail: boolean } {
  const key = archiveKey(secret)
  const segments = listSegments(root)
  const entries: ArchivedEntry[] = []
  const problems: string[] = []
  let tornTail = false
  for (const [i, segment] of segments.entries()) {
    if (i > 0 && segment.number !== segments[i - 1]!.number + 1)
      problems.push(`segments ${segments[i - 1]!.number + 1} to ${segment.number - 1} are missing: the chain has a gap there`)
    const read = readSegment(key, segment.number, segment.path)
    if (read.problem !== null) problems.push(`${segment.path}: ${read.problem}`)
    if (read.torn) {
      if (i === segments.length - 1) tornTail = true
      else problems.push(`${segment.path}: its last chunk is cut short, and segments follow it`)
    }
    for (const entry of read.entries) {
      const last = entries.at(-1)
      if (last !== undefined && entry.prev !== last.position.digest && problems.length === 0)
        problems.push(`entry ${entry.position.seq} (${segment.path}) does not follow entry ${last.position.seq}: the chain has a gap`)
      entries.push(entry)
    }
  }
  return { entries, segments: segments.length, problems, tornTail }
}
