// The continuous archive's writer: each commit's writes sealed into a chain, appended to the segment files within a second.
import { existsSync, mkdirSync, renameSync, truncateSync } from 'node:fs'
import { copyFile, open, rename, type FileHandle } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Logger } from '../log.js'
import {
  chainDigest,
  GENESIS,
  packEntry,
  type ChainedEntry,
  type CommitLog,
  type Entry,
  type EntrySink,
  type LogPosition,
} from '../store/write-set.js'
import { ARCHIVE_DIR, archiveKey, listSegments, readSegment, sealChunk, segmentName, type ArchivedEntry } from './archive-format.js'
import { syncDirectory, syncFile } from './files.js'
import type { ArchiveStatus } from './status.js'
import { blobPath, listBackups } from './root.js'

/** How often what was committed is appended (and fsynced): a commit is in the archive within about this long. */
const FLUSH_MS = 250
/** A segment is closed and the next begun past this size. */
const SEGMENT_BYTES = 64 * 1024 * 1024
/** Failures to append are logged at most this often (each keeps its entries, tried again). */
const FAILURE_LOG_MS = 60_000

/** Where the archive stands at start against the data directory (`ArchiveWriter.unlock`). */
export interface ArchiveStart {
  /** The archive goes on from this data directory's last entry. */
  continued: boolean
  /** The archive held another history (the data directory was restored, or archived elsewhere meanwhile): moved here. */
  movedAside: string | null
  /** No complete backup in the root to replay the archive from: one must be taken (the server takes it). */
  needsBase: boolean
}

/**
 * The embedded server's continuous archive (PLINTH_BACKUP_ARCHIVE=ROOT). The store records each
 * commit's writes as a cluster's does (core/store/replication.ts) and seals them here: `seal` chains
 * the entry to the data directory's last one (its position, kept with the data in the `archive`
 * table), and a timer appends what was sealed as one chunk of the current segment every FLUSH_MS,
 * fsynced. A commit never waits for the archive. Blob files go to the root's `blobs/` when they are
 * placed (`mirror`), before the commit that names them. A backup taken into the same root holds the
 * data directory's position, so `plinth restore ROOT --at TIME` replays the archive from it.
 */
export class ArchiveWriter implements CommitLog, EntrySink {
  readonly root: string
  readonly #logger: Logger
  #key: Buffer | null = null
  /** The data directory's last entry when the store opened (what the archive must end at to go on). */
  #start: LogPosition | null = null
  #last: LogPosition | null = null
  #pending: ChainedEntry[] = []
  /** Entries in the chunk being appended. */
  #inFlight = 0
  /** A cluster node's blob files, which the entries it takes list (an embedded server's are copied when placed: `mirror`). */
  #files: { path(hash: string): string; holds(hash: string): boolean } | null = null
  #segment: { number: number; handle: FileHandle; chunks: number; bytes: number } | null = null
  #nextSegment = 1
  #flushing: Promise<void> | null = null
  #timer: NodeJS.Timeout | null = null
  #failedAt = 0
  #closed = false
  /** The last entry appended and fsynced (the data directory's last one when the archive went on or began), and when. */
  archived: LogPosition | null = null
  #appendedAt: number | null = null
  /** How long after its commit (ms) each appended entry got there (bench:backup reads them). */
  readonly lags: number[] = []

  constructor(root: string, logger: Logger) {
    this.root = root
    this.#logger = logger
  }

  /** The store opened at `position` (its last entry; null: none yet): entries sealed from now on follow it. */
  begin(position: LogPosition | null): this {
    this.#start = position
    this.#last = position
    this.archived = position
    return this
  }

  /**
   * With the installation's secret (the archive's key derives from it): reads the archive's last
   * segment (a chunk a crash cut short is cut off) and goes on from the data directory's last entry
   * when the archive ends there; otherwise the archive holds another history, which is moved aside
   * (never deleted) and a new archive begins. Then appending starts.
   */
  unlock(secret: Buffer): ArchiveStart {
    this.#key = archiveKey(secret)
    mkdirSync(join(this.root, ARCHIVE_DIR), { recursive: true, mode: 0o700 })
    const segments = listSegments(this.root)
    let tail: ArchivedEntry | null = null
    let damaged: string | null = null
    for (const segment of [...segments].reverse()) {
      const read = readSegment(this.#key, segment.number, segment.path)
      if (read.torn && read.problem === null) {
        truncateSync(segment.path, read.whole)
        this.#logger.warn("the archive's last chunk was cut short (a crash while appending): cut off", { segment: segment.path })
      }
      tail = read.entries.at(-1) ?? null
      damaged = read.problem === null ? null : `${segment.path}: ${read.problem}`
      if (tail !== null || damaged !== null) break
    }
    const start = this.#start
    let movedAside: string | null = null
    // A damaged tail is never appended to (nothing after it could be read back).
    const continued =
      segments.length === 0 || (damaged === null && tail !== null && start !== null && tail.position.digest === start.digest)
    if (!continued) {
      movedAside = join(this.root, `${ARCHIVE_DIR}-${new Date().toISOString().replace(/[-:.]/g, '')}`)
      renameSync(join(this.root, ARCHIVE_DIR), movedAside)
      mkdirSync(join(this.root, ARCHIVE_DIR), { mode: 0o700 })
      this.#logger.warn(
        damaged !== null
          ? "the backup archive's last segment is damaged: moved aside, a new archive begins here with a new backup"
          : tail !== null && start !== null && start.seq > tail.position.seq
            ? "the data directory went past the backup archive's end (its last commits were never appended: the server was killed within a second of them, or ran without PLINTH_BACKUP_ARCHIVE): the archive, whole up to its end, is moved aside, and a new one begins here with a new backup"
            : "the backup archive holds another history than this data directory's (it was restored, or archived elsewhere meanwhile): moved aside, a new archive begins here with a new backup",
        { archive: movedAside, at: start?.seq ?? 0, ...(damaged === null ? {} : { damaged }) },
      )
    }
    this.archived = start
    this.#nextSegment = continued && segments.length > 0 ? segments.at(-1)!.number + 1 : 1
    this.#timer = setInterval(() => void this.flush(), FLUSH_MS)
    this.#timer.unref()
    const needsBase = !continued || segments.length === 0 || !listBackups(this.root).some((b) => b.complete)
    return { continued: continued && segments.length > 0, movedAside, needsBase }
  }

  seal(entry: Entry): { position: LogPosition; acked: LogPosition; sealed: Promise<void> } {
    const bytes = packEntry(entry)
    const prev = this.#last?.digest ?? GENESIS
    const position: LogPosition = { seq: (this.#last?.seq ?? 0) + 1, epoch: 0, digest: chainDigest(prev, bytes) }
    this.#last = position
    this.#pending.push({ position, prev, at: Date.now(), bytes, blobs: [] })
    return { position, acked: position, sealed: Promise.resolve() }
  }

  /**
   * A cluster's node (`Replication.archive`): the entries its store applied from the log, or its
   * primary's acknowledged ones, as the log chains them; the blob files they list are copied from
   * `files` before the chunk that holds them.
   */
  useFiles(files: { path(hash: string): string; holds(hash: string): boolean }): void {
    this.#files = files
  }

  take(entries: readonly ChainedEntry[]): void {
    for (const entry of entries) {
      this.#pending.push(entry)
      this.#last = entry.position
    }
  }

  /** Copies a blob file placed in the data directory into the root's `blobs/` (whole and fsynced under its name), unless it is there. */
  async mirror(hash: string, path: string): Promise<void> {
    const target = blobPath(this.root, hash)
    if (existsSync(target)) return
    mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
    const temporary = `${target}.tmp-${process.pid}`
    await copyFile(path, temporary)
    await syncFile(temporary)
    await rename(temporary, target)
    await syncDirectory(dirname(target))
  }

  /** Appends what was sealed as one chunk, fsynced (one flush at a time; entries stay pending when it fails). */
  flush(): Promise<void> {
    if (this.#flushing !== null) return this.#flushing
    if (this.#key === null || this.#pending.length === 0) return Promise.resolve()
    this.#flushing = this.#append().finally(() => (this.#flushing = null))
    return this.#flushing
  }

  async #append(): Promise<void> {
    const batch = this.#pending
    this.#pending = []
    this.#inFlight = batch.length
    try {
      for (const entry of batch)
        for (const hash of entry.blobs) {
          if (this.#files === null) continue
          if (this.#files.holds(hash)) await this.mirror(hash, this.#files.path(hash))
          else if (!existsSync(blobPath(this.root, hash)))
            // Removed again within the flush period (a later entry let it go): a replay through this entry would miss it.
            this.#logger.warn('a blob file an archived entry lists was gone before the archive copied it', {
              blob: hash,
              entry: entry.position.seq,
            })
        }
      const segment = await this.#current()
      const chunk = sealChunk(this.#key!, segment.number, segment.chunks, batch)
      await segment.handle.write(chunk)
      await segment.handle.sync()
      segment.chunks++
      segment.bytes += chunk.length
      this.archived = batch.at(-1)!.position
      this.#inFlight = 0
      const now = Date.now()
      this.#appendedAt = now
      for (const entry of batch) this.lags.push(now - entry.at)
      if (this.lags.length > 100_000) this.lags.splice(0, this.lags.length - 100_000)
    } catch (error) {
      this.#pending = [...batch, ...this.#pending]
      this.#inFlight = 0
      // A chunk half written is cut off at the next start (the segment's tail): the next one goes to a new segment.
      await this.#segment?.handle.close().catch(() => undefined)
      this.#segment = null
      if (Date.now() - this.#failedAt > FAILURE_LOG_MS) {
        this.#failedAt = Date.now()
        this.#logger.error('could not append to the backup archive; its entries are kept and tried again', { error: String(error) })
      }
    }
  }

  /** The segment appended to: the current one, or the next when it is full (or none is open). */
  async #current(): Promise<{ number: number; handle: FileHandle; chunks: number; bytes: number }> {
    if (this.#segment !== null && this.#segment.bytes < SEGMENT_BYTES) return this.#segment
    await this.#segment?.handle.close()
    const number = this.#nextSegment++
    const handle = await open(join(this.root, ARCHIVE_DIR, segmentName(number)), 'wx', 0o600)
    await syncDirectory(join(this.root, ARCHIVE_DIR))
    this.#segment = { number, handle, chunks: 0, bytes: 0 }
    return this.#segment
  }

  /** What /metrics says of it. */
  status(): ArchiveStatus {
    return { behind: this.#pending.length + this.#inFlight, position: this.archived?.seq ?? 0, appendedAt: this.#appendedAt }
  }

  /** Appends what is pending and closes the segment (a server's stop). */
  async close(): Promise<void> {
    if (this.#closed) return
    this.#closed = true
    if (this.#timer !== null) clearInterval(this.#timer)
    await this.flush()
    if (this.#pending.length > 0) await this.flush()
    await this.#segment?.handle.close()
    this.#segment = null
  }
}
