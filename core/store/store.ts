import { ApiError } from '../errors.js'
import type { Database, RootDatabase } from 'lmdb'
import type { BuildRecord, VersionRecord } from '../schemas/records.js'
import type * as Forms from '../schemas/forms.js'
import { BlobFiles } from './blob-files.js'
import { BlobKeeper } from './blob-keeper.js'
import { BlobReferences } from './blob-references.js'
import { ChangeFeed } from './changes.js'
import { BLOB_REFS, BLOBS, RECORD_SCHEMAS } from './record-schemas.js'
import { Replication } from './replication.js'
import { openEnvironment } from './environment.js'
import { CounterTable, IndexTable, RecordTable, type Key } from './tables.js'
import { openTables, type Tables } from './table-set.js'
import type { CommitLog, LogPosition } from './write-set.js'

export { CorruptRecordError, CounterTable, IndexTable, RecordTable, type Key } from './tables.js'
export type { TrackerEvent } from './tracker-event.js'
export type { CommitLog, Entry, LogPosition, Write } from './write-set.js'
export type { Change, ChangeFeed } from './changes.js'
export { BINARY_TABLES, RECORD_SCHEMAS, schemaVersions } from './record-schemas.js'
export { storeStats, type StoreStats } from './stats.js'

/** Why a cluster node's data directory opened by itself takes no write. */
export const CLUSTER_NODE_STOPPED =
  "This data directory is a cluster node's, and the node is not running: a change made here would be outside the cluster's log (the node could not rejoin with it). Nothing was changed. Start the node and run the command again (the node hands it to the primary), or run it on another running node of the cluster"

/** How a store is opened: alone (the embedded server), or as a node of a cluster whose commits go to a log. */
export interface StoreOptions {
  /** Record every commit's writes for the cluster's log (core/store/write-set.ts); off for the embedded server. */
  replicated?: boolean
  /**
   * The embedded server's continuous archive (PLINTH_BACKUP_ARCHIVE, core/backup/archive-writer.ts): every
   * commit's writes are recorded as a cluster's are and sealed into the log `begin` returns, given the data
   * directory's last archived entry (kept in the ARCHIVE_POSITIONS table, with the data). 'replay': recorded
   * likewise, and nothing committed: a point-in-time restore applies the archive's entries (`applyEntries`).
   */
  archive?: { begin(position: LogPosition | null): CommitLog } | 'replay'
}

/** The table of an archived store's last entry (a cluster node's is `replication`). */
export const ARCHIVE_POSITIONS = 'archive'

// The tables are declared in table-set.ts and opened into the store by its constructor.
export interface Store extends Tables {}

/**
 * The LMDB environment under `{dataDir}/db` (msgpackr encoding). Every command runs in `commit`,
 * one atomic transaction whose promise resolves only once it is durable on disk.
 */
export class Store {
  readonly env: RootDatabase
  /** Writes this process's actors did not make (a log entry applied), announced by table to the caches of them. */
  readonly changes = new ChangeFeed()
  /** Large content: files named by hash under `{dataDir}/files`. */
  readonly files: BlobFiles
  /** Blob files added and removed as records come to name them and stop (`adopt`, `place`, `release`). */
  readonly blobs: BlobKeeper
  readonly #blobs: Database<Buffer, string>
  readonly #variants: Database<Buffer, [string, string]>
  readonly #counters: Database<number, string>
  /** How many manifest entries (of versions, builds and submissions) name each blob. */
  readonly #references: BlobReferences
  /** Secrets a data directory from before PLINTH_SECRET_FILE kept, moved out at start (actors/installation.ts). */
  readonly legacySecrets: Database<Buffer, string>

  /** The cluster's side of this store (its commits recorded and sealed to the log, entries applied); null on the embedded server. */
  readonly replication: Replication | null
  /**
   * A cluster node's data directory opened by itself (an operator's command while the node is stopped):
   * it takes no write, which would be outside the log (the node could not rejoin with it).
   */
  readonly #clusterNodeAlone: boolean
  get clusterNodeAlone(): boolean {
    return this.#clusterNodeAlone
  }
  /** A cluster node's position in the log (kept by its own run; never recorded). */
  readonly #clusterPositions: Database<LogPosition, string>

  /**
   * Forgets this data directory's place in a cluster's log: a point-in-time restore of a node's backup
   * (core/backup/point-in-time.ts) is an installation of its own (a single server, or a new cluster's seed).
   */
  async forgetClusterPosition(): Promise<void> {
    await this.env.childTransaction(() => {
      void this.#clusterPositions.remove('position')
      void this.#clusterPositions.remove('acked')
    })
  }

  /** Opens the store under `dataDir` and brings an older data directory's bookkeeping up to date. */
  static async open(dataDir: string, options: StoreOptions = {}): Promise<Store> {
    const store = new Store(dataDir, options)
    // Once, for a data directory from before blobs were counted (a replica's comes from the log).
    if (options.replicated !== true && !store.#clusterNodeAlone && store.writable) await store.ensureBlobReferences()
    return store
  }

  constructor(dataDir: string, options: StoreOptions = {}) {
    this.env = openEnvironment(dataDir)
    // Never recorded: each node keeps its own position, written with the entry it records.
    const positions = this.env.openDB<LogPosition, string>({ name: 'replication', encoding: 'msgpack' })
    this.#clusterPositions = positions
    const archived = options.replicated !== true && options.archive !== undefined
    this.replication =
      options.replicated === true
        ? new Replication(this, positions)
        : archived
          ? new Replication(this, this.env.openDB<LogPosition, string>({ name: ARCHIVE_POSITIONS, encoding: 'msgpack' }))
          : null
    this.#clusterNodeAlone = options.replicated !== true && positions.get('position') !== undefined
    const openDB = this.#openDB.bind(this)
    const table = <T extends { v: number }>(name: keyof typeof RECORD_SCHEMAS) =>
      new RecordTable<T>(name, openDB<unknown>(name, 'msgpack'), RECORD_SCHEMAS[name])
    const index = (name: string) => new IndexTable(openDB<string>(name, 'msgpack'))
    const counter = (name: string) => new CounterTable(openDB<number, Key>(name, 'msgpack', true))
    openTables(this, { table, index, counter, raw: (name, encoding) => openDB(name, encoding) })
    this.files = new BlobFiles(dataDir)
    this.#blobs = openDB<Buffer, string>(BLOBS, 'binary')
    this.#variants = openDB<Buffer, [string, string]>('variants', 'binary')
    this.#counters = openDB<number, string>('counters', 'msgpack')
    this.#references = new BlobReferences(openDB<number, string>(BLOB_REFS, 'msgpack'), this.#blobs, this.#variants, {
      versions: this.versions,
      builds: this.builds,
      submissions: this.formSubmissions,
    })
    this.legacySecrets = openDB<Buffer, string>('secrets', 'binary')
    if (archived && options.archive !== 'replay') this.replication!.useLog(options.archive!.begin(this.replication!.position()))
    this.blobs = new BlobKeeper(this.files, {
      // A site version may name the same bytes (a large file of a ticket deploy): they stay while it does.
      references: (hash) => Math.max(0, this.fileRefs.get(hash)) + this.#references.count(hash),
      // A replica drops nothing itself: the primary's drop arrives through the log.
      dropCounter: (hash) =>
        !this.writable
          ? Promise.resolve()
          : this.commit(() => {
              if (this.fileRefs.get(hash) <= 0) void this.fileRefs.db.remove(hash)
            }),
    })
  }

  /** Opens a table of the environment (in a replicated store, through `Replication.table`: its writes go to the log). */
  #openDB<V, K extends Key | number = Key>(name: string, encoding: 'msgpack' | 'binary', counts = false): Database<V, K> {
    const db = this.env.openDB<V, K>({ name, encoding })
    return this.replication === null ? db : this.replication.table(db, name, encoding, counts)
  }

  /** True when content with this sha256 is stored. */
  hasBlob(hash: string): boolean {
    return this.#blobs.doesExist(hash)
  }

  /** Stores content under its sha256 once; only inside `commit`. */
  putBlob(hash: string, bytes: Uint8Array): void {
    if (!this.#blobs.doesExist(hash)) void this.#blobs.put(hash, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
  }

  /** Content and its precompressed variants (either may be null: not worth it, or already stored); only inside `commit`. */
  putContent(hash: string, bytes: Uint8Array, variants: { gzip: Uint8Array | null; br: Uint8Array | null } | null): void {
    this.putBlob(hash, bytes)
    if (variants?.gzip) this.putVariant(hash, 'gzip', variants.gzip)
    if (variants?.br) this.putVariant(hash, 'br', variants.br)
  }

  /** A copy of the content with this sha256 (never lmdb's reused read buffer). */
  getBlob(hash: string): Buffer | undefined {
    return this.#blobs.get(hash)
  }

  /** Stores a precompressed variant (`gzip` or `br`) of a blob; only inside `commit`. */
  putVariant(hash: string, encoding: string, bytes: Uint8Array): void {
    void this.#variants.put([hash, encoding], Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
  }

  hasVariant(hash: string, encoding: string): boolean {
    return this.#variants.doesExist([hash, encoding])
  }

  getVariant(hash: string, encoding: string): Buffer | undefined {
    return this.#variants.get([hash, encoding])
  }

  // Blob references: the writes that name blobs keep their counts (blob-references.ts).

  /** Stores a version (append-only); its blobs gain a reference. Only inside `commit`. */
  putVersion(key: [string, number], record: VersionRecord): void {
    this.#references.putVersion(key, record)
  }

  /** Removes a version (a purge); blobs nothing else names go. Only inside `commit`. */
  removeVersion(key: [string, number]): void {
    this.#references.removeVersion(key)
  }

  /** Stores a build (a rebuild replaces the version's previous one). Only inside `commit`. */
  putBuild(key: [string, number], record: BuildRecord): void {
    this.#references.putBuild(key, record)
  }

  removeBuild(key: [string, number]): void {
    this.#references.removeBuild(key)
  }

  /** Stores a form submission; its files' blobs gain a reference. Only inside `commit`. */
  putSubmission(record: Forms.SubmissionRecord): void {
    this.#references.putSubmission(record)
  }

  /** Removes a submission; blobs nothing else names go. Only inside `commit`. */
  removeSubmission(id: string): void {
    this.#references.removeSubmission(id)
  }

  /** How many manifest entries name the blob (0: none, and it is gone or about to be). */
  blobReferences(hash: string): number {
    return this.#references.count(hash)
  }

  /**
   * Counts the references of a data directory written before blobs were counted (once; a flag in the
   * counters says it is done). New data directories count from their first write.
   */
  async ensureBlobReferences(): Promise<void> {
    if (this.#counters.get('blob-refs-counted') === 1) return
    await this.commit(() => {
      if (this.#counters.get('blob-refs-counted') === 1) return
      this.#references.recount()
      void this.#counters.put('blob-refs-counted', 1)
    })
  }

  /** The versions of a website, newest first, from `before` (exclusive). */
  *versionsOf(websiteId: string, before = Number.MAX_SAFE_INTEGER): Generator<VersionRecord> {
    for (const { value } of this.versions.range({ start: [websiteId, before - 1], end: [websiteId, 0], reverse: true })) yield value
  }

  /**
   * Runs `fn` in one write transaction and resolves once it is committed and flushed. If `fn`
   * throws, nothing it wrote is kept and the promise rejects with that error.
   */
  commit<T>(fn: () => T): Promise<T> {
    if (this.replication !== null) return this.replication.commit(fn)
    if (this.#clusterNodeAlone) return Promise.reject(new ApiError('unavailable', CLUSTER_NODE_STOPPED))
    return this.env.childTransaction(fn) as Promise<T>
  }

  /** Whether this node makes commits: the embedded server, or a cluster's primary (a replica only applies the log). */
  get writable(): boolean {
    return this.replication === null ? !this.#clusterNodeAlone : this.replication.writable
  }

  /**
   * A number greater than every one handed out before, also across restarts; only inside `commit`.
   * Ordering keys built from it make keyset pagination stable while new records arrive.
   */
  nextSeq(): number {
    const last = this.#counters.get('seq') ?? 0
    const next = Math.max(last + 1, Date.now() * 1000)
    void this.#counters.put('seq', next)
    return next
  }

  async close(): Promise<void> {
    await this.env.close()
  }
}
