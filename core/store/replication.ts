// A replicated store's side of the cluster's log: each commit's writes recorded and sealed, a log entry applied.
import { rm } from 'node:fs/promises'
import type { Database, RootDatabase } from 'lmdb'
import type { TSchema } from '@sinclair/typebox'
import { ApiError } from '../errors.js'
import type { BlobFiles } from './blob-files.js'
import type { BlobKeeper } from './blob-keeper.js'
import type { ChangeFeed } from './changes.js'
import { entryProblem } from './entry-shape.js'
import { BINARY_TABLES, BLOB_REFS, BLOBS, FILE_REFS, RECORD_SCHEMAS } from './record-schemas.js'
import type { Key } from './tables.js'
import type { CommitLog, Entry, EntrySink, LogPosition, Write } from './write-set.js'

/** What of the store the replication needs: its blob files, their keeper, the content table and the change feed. */
export interface ReplicatedParts {
  env: RootDatabase
  files: BlobFiles
  blobs: BlobKeeper
  /** Whether the content table holds these bytes (a version's small file travels in the entry itself). */
  hasBlob(hash: string): boolean
  changes: ChangeFeed
}

/**
 * The store of a cluster's node (`Store.replication`; null on the embedded server). Every table is
 * opened through `table`, which records each `put` and `remove` made while a commit's callback runs
 * (the writes the log carries, as the bytes the table stores) and refuses one made outside a commit;
 * `commit` hands them to the log (`CommitLog.seal`, the seam the cluster implements) inside the
 * transaction, with the position they will have. A replica applies the primary's entries with
 * `applyEntry`, through binary handles of the same tables, so its database holds what the primary's
 * does; then the store's change feed tells the caches.
 */
export class Replication {
  /** Where this database reached in the cluster's log (`position`), kept with each commit's writes. */
  readonly #positions: Database<LogPosition, string>
  /** The writes of the commit whose callback runs now (null: none runs). */
  #writes: Write[] | null = null
  /** The backup archive (PLINTH_BACKUP_ARCHIVE) on a cluster's node: told each entry this store applies or its primary seals. */
  archive: EntrySink | null = null
  /** The cluster's log, while this node is its primary (null: a replica, or a primary that stepped down). */
  #log: CommitLog | null = null
  /** Each table's name to a handle that reads and writes its values' bytes as stored (a replica applies through them). */
  readonly #raw = new Map<string, Database<Buffer, Key>>()
  /** Each msgpack table's decoder (an entry's writes are checked against their tables' shapes before they are applied). */
  readonly #decoders = new Map<string, { decode(bytes: Uint8Array): unknown }>()
  /** The tables whose values are counts. */
  readonly #counters = new Set<string>([BLOB_REFS, 'counters'])

  constructor(
    private readonly parts: ReplicatedParts,
    positions: Database<LogPosition, string>,
  ) {
    this.#positions = positions
  }

  /** A table opened for this store: its writes recorded for the log (`counts`: its values are numbers). */
  table<V, K extends Key | number>(db: Database<V, K>, name: string, encoding: 'msgpack' | 'binary', counts = false): Database<V, K> {
    this.#raw.set(name, this.parts.env.openDB<Buffer, Key>({ name, encoding: 'binary' }))
    if (counts) this.#counters.add(name)
    if (encoding === 'msgpack') this.#decoders.set(name, (db as unknown as { decoder: { decode(bytes: Uint8Array): unknown } }).decoder)
    const put = db.put.bind(db) as (...args: unknown[]) => Promise<boolean>
    const remove = db.remove.bind(db) as (...args: unknown[]) => Promise<boolean>
    const record = (key: K, value: Buffer | null) => {
      if (this.#writes === null) throw new Error(`a write to ${name} outside Store.commit: a replicated store's log would miss it`)
      this.#writes.push([name, key as Key, value])
    }
    const bytes = (value: V): Buffer =>
      encoding === 'binary'
        ? Buffer.from(value as Uint8Array)
        : Buffer.from((db as unknown as { encoder: { encode(v: unknown): Uint8Array } }).encoder.encode(value))
    Object.assign(db, {
      put: (key: K, value: V, ...rest: unknown[]) => {
        record(key, bytes(value))
        return put(key, value, ...rest)
      },
      remove: (key: K, ...rest: unknown[]) => {
        if (rest.length > 0) throw new Error(`Store: remove with a value or version on ${name} is not recorded for the log`)
        record(key, null)
        return remove(key)
      },
    })
    return db
  }

  /**
   * `fn` in one write transaction whose writes go to the log: answered once the entry is in the log (a
   * quorum has it) and in this database. Refused (503, nothing written) while this node does not lead.
   */
  commit<T>(fn: () => T): Promise<T> {
    let sealed: Promise<void> | null = null
    const committed = this.parts.env.childTransaction(() => {
      const log = this.#log
      if (log === null)
        throw new ApiError(
          'unavailable',
          'This node of the cluster does not lead it right now (an election is under way, or it lost its lease): nothing was changed; try again in a few seconds',
        )
      this.#writes = []
      try {
        const result = fn()
        if (this.#writes.length > 0) {
          const next = log.seal({ writes: this.#writes, blobs: this.parts.blobs.takePlaced() })
          void this.#positions.put('position', next.position)
          void this.#positions.put('acked', next.acked)
          sealed = next.sealed
        }
        return result
      } finally {
        this.#writes = null
      }
    }) as Promise<T>
    return committed.then(async (result) => {
      if (sealed !== null) await sealed
      return result
    })
  }

  /**
   * Every record of this database as writes, a batch at a time (up to about `batchBytes` each), table
   * by table in key order: what seeds a new cluster's log from an embedded installation's data directory.
   */
  *snapshot(batchBytes: number): Generator<Write[]> {
    let batch: Write[] = []
    let bytes = 0
    for (const [table, db] of this.#raw)
      for (const { key, value } of db.getRange()) {
        batch.push([table, key, Buffer.from(value)])
        bytes += value.length + 64
        if (bytes < batchBytes) continue
        yield batch
        batch = []
        bytes = 0
      }
    if (batch.length > 0) yield batch
  }

  /**
   * Seals writes this database already holds as the log's next entry, with the blob files they name
   * (`blobs`, in the cluster's blob store already): a seed of the log (`snapshot`). Only on the primary.
   */
  seed(writes: readonly Write[], blobs: readonly string[]): Promise<void> {
    let sealed: Promise<void> = Promise.resolve()
    const log = this.#log
    if (log === null) throw new Error('only the primary seeds the log')
    return (
      this.parts.env.childTransaction(() => {
        const next = log.seal({ writes, blobs })
        void this.#positions.put('position', next.position)
        void this.#positions.put('acked', next.acked)
        sealed = next.sealed
      }) as Promise<void>
    ).then(() => sealed)
  }

  /** Whether this node makes commits: a cluster's primary (a replica only applies the log). */
  get writable(): boolean {
    return this.#log !== null
  }

  /** Where this database reached in the cluster's log (null: no entry applied or committed yet). */
  position(): LogPosition | null {
    return this.#positions.get('position') ?? null
  }

  /**
   * The last entry of this database the log was known to hold as every reader applies it: the position
   * itself on a replica; on a primary, the last acknowledged entry when its last commit was sealed (the
   * ones after it were in flight then).
   */
  acked(): LogPosition | null {
    return this.#positions.get('acked') ?? this.position()
  }

  /**
   * Makes this node the primary (its commits go to `log`) or, with null, a node that commits nothing
   * itself (a replica, or a primary that lost its lease: its commits are refused).
   */
  useLog(log: CommitLog | null): void {
    this.#log = log
  }

  /**
   * Applies one entry of the log (a replica, or a node catching up before it leads): first the blob
   * files it lists that the directory lacks, each written by `fetch` into the work area, its SHA-256
   * checked and placed through the keeper (pinned until the writes are in: a version goes live only
   * with all its bytes); then the writes and the position in one transaction, exactly once; then the
   * change feed tells the caches of the tables it wrote.
   */
  applyEntry(entry: Entry, position: LogPosition, fetch: (hash: string, into: string) => Promise<void>): Promise<void> {
    return this.applyEntries([{ entry, position }], fetch)
  }

  /**
   * Applies consecutive entries of the log as `applyEntry` applies one, their writes in one transaction
   * with the last one's position (a catch-up: one commit, one flush to disk for many entries). Every
   * entry's blob files are in place before the transaction; the change feed hears each entry's writes, in order.
   */
  async applyEntries(
    batch: readonly { entry: Entry; position: LogPosition }[],
    fetch: (hash: string, into: string) => Promise<void>,
  ): Promise<void> {
    if (batch.length === 0) return
    const { files, blobs } = this.parts
    const unpins: (() => void)[] = []
    // The blob files whose reference counters these entries write: afterwards, those nothing names any more
    // are removed here too. One counted that this node lacks and no entry lists (the primary still had it
    // when a new reference came) is fetched as well, best effort.
    const listed = new Set(batch.flatMap(({ entry }) => entry.blobs))
    const counted = new Set<string>()
    const lacking = new Set<string>()
    // A version's small file lives in LMDB and travels in the entry: its count (blob-refs) names no file
    // to fetch. Without this, every file of a deploy cost each replica an object-store miss (bench:cluster:
    // the write overhead with two replicas went from 1.59x to the figure in the README).
    const inline = new Set<string>()
    for (const { entry } of batch)
      for (const [table, key, value] of entry.writes) if (table === BLOBS && value !== null && typeof key === 'string') inline.add(key)
    for (const { entry } of batch)
      for (const [table, key, value] of entry.writes) {
        if ((table !== FILE_REFS && table !== BLOB_REFS) || typeof key !== 'string') continue
        counted.add(key)
        if (value === null || listed.has(key)) continue
        // Read LMDB before the file system (one lstat a file otherwise).
        if (table === BLOB_REFS && (inline.has(key) || this.parts.hasBlob(key))) continue
        if (!files.holds(key)) lacking.add(key)
      }
    const bring = async (hash: string) => {
      const into = files.uploadPath(`cluster-${hash}`)
      try {
        await fetch(hash, into)
        const { hash: got } = await files.hashOf(into)
        if (got !== hash) throw new Error(`a log entry lists blob ${hash}, and the bytes fetched for it are ${got}`)
        unpins.push(await blobs.place(into, hash))
      } finally {
        await rm(into, { force: true })
      }
    }
    try {
      for (const hash of listed) {
        if (files.holds(hash)) unpins.push(blobs.hold([hash]))
        else await bring(hash)
      }
      for (const hash of lacking) await bring(hash).catch(() => undefined)
      await this.#applyWrites(batch)
      for (const { entry } of batch)
        this.parts.changes.announce(entry.writes, (table, bytes) =>
          BINARY_TABLES.has(table) ? bytes : this.#decoders.get(table)!.decode(bytes),
        )
    } finally {
      for (const unpin of unpins) unpin()
    }
    if (counted.size > 0) await blobs.release([...counted])
  }

  #applyWrites(batch: readonly { entry: Entry; position: LogPosition }[]): Promise<void> {
    const position = batch[batch.length - 1]!.position
    return this.parts.env.childTransaction(() => {
      for (const { entry } of batch)
        for (const [table, key, value] of entry.writes) {
          const db = this.#raw.get(table)
          if (db === undefined) throw new Error(`a log entry writes table "${table}", which this build does not have`)
          if (value === null) void db.remove(key)
          else void db.put(key, value)
        }
      void this.#positions.put('position', position)
      void this.#positions.put('acked', position)
    }) as Promise<void>
  }

  /**
   * What is wrong with an entry's writes, or null: every write names a table of this build, a key of
   * the kinds tables take, and bytes its table can read (a record of its schema, a count, raw bytes);
   * the blob files it lists are SHA-256 names. A node applies no entry that fails this (and the primary
   * seals none), so nothing the log carries can make a table unreadable.
   */
  checkEntry(entry: Entry): string | null {
    return entryProblem(entry, (table) => {
      if (!this.#raw.has(table)) return undefined
      if (BINARY_TABLES.has(table)) return { kind: 'binary' }
      const decoder = this.#decoders.get(table)!
      if (this.#counters.has(table)) return { kind: 'counter', decoder }
      const schema = (RECORD_SCHEMAS as Record<string, TSchema>)[table]
      return schema === undefined ? { kind: 'any', decoder } : { kind: 'record', decoder, schema }
    })
  }

  /**
   * A primary's entry landed later in the log than it was sealed for (messages no node signed went
   * before it): the position recorded with it moves there, if it is still the last entry recorded.
   */
  async movePosition(digest: string, seq: number): Promise<void> {
    await this.parts.env.childTransaction(() => {
      const position = this.#positions.get('position')
      if (position !== undefined && position.digest === digest && position.seq !== seq)
        void this.#positions.put('position', { ...position, seq })
    })
  }

  /** The position is the log's, as every reader applies it (a restart checked the entries in flight at a stop). */
  async confirmPosition(position: LogPosition): Promise<void> {
    await this.parts.env.childTransaction(() => {
      void this.#positions.put('position', position)
      void this.#positions.put('acked', position)
    })
  }
}
