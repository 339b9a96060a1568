import { CACHE_BYTES_DEFAULT } from '../core/limits.js'
import type { Store } from '../core/store/store.js'

/** Where a cache reads content: the store's blobs and variants, and the blob directory (a serving thread opens its own). */
export type ContentSource = Pick<Store, 'hasBlob' | 'getBlob' | 'hasVariant' | 'getVariant'> & {
  readonly files: Pick<Store['files'], 'path' | 'holds'>
}

/** One piece of content in memory, with its precompressed variants. */
export interface Content {
  readonly identity: Buffer
  readonly gzip: Buffer | null
  readonly br: Buffer | null
}

/**
 * A piece of content some snapshot serves: what is known without reading it (hash, which variants
 * exist), and its bytes while they are resident in the cache.
 */
export interface ContentEntry {
  readonly hash: string
  readonly gzip: boolean
  readonly br: boolean
  /** The bytes, while resident; null once evicted (read again from LMDB on the next request). */
  content: Content | null
  /** Bytes of identity and variants while resident. */
  bytes: number
  /** The cache's tick when this entry last moved to the recent end of the order. */
  stamp: number
  /** Neighbours in the cache's recency list while resident (null at either end, or when not resident). */
  older: ContentEntry | null
  newer: ContentEntry | null
  /** Snapshots holding this entry. */
  refs: number
  /** Where the bytes are when they live in the blob directory, not LMDB (a large file of a ticket deploy): streamed, never loaded whole. */
  readonly disk: string | null
}

/**
 * The served content of every snapshot in memory, with a bounded budget of resident bytes.
 *
 * A snapshot holds an entry per file (counted by reference, so a file in a draft and a published
 * snapshot, or in two sites, is one entry) but not its bytes: they are read on first request,
 * synchronously from LMDB's memory map (stored variants, never recompressed), and kept while the
 * budget allows. Over budget, the least recently used content goes first. Resident entries form an
 * intrusive doubly linked list (no allocation to reorder it); a hit moves an entry to the recent end
 * only when it has drifted into the older half, so content in steady use costs one comparison per
 * request. Content larger than the whole budget is
 * read and served without being kept.
 */
export class ContentCache {
  readonly #entries = new Map<string, ContentEntry>()
  /** Ends of the recency list of resident entries. */
  #oldest: ContentEntry | null = null
  #newest: ContentEntry | null = null
  #resident = 0
  #tick = 0
  #residentBytes = 0
  #reads = 0
  #hits = 0

  constructor(
    private readonly store: ContentSource,
    readonly limitBytes: number = CACHE_BYTES_DEFAULT,
    /** A cache tier is in front (PLINTH_PURGE_URLS): published files tell it to keep them, under their website's key. */
    readonly sharedTier = false,
  ) {}

  /** The entry for this hash, held until `release`; its bytes are not read yet. */
  acquire(hash: string): ContentEntry {
    let entry = this.#entries.get(hash)
    if (entry === undefined) {
      let disk: string | null = null
      if (!this.store.hasBlob(hash)) {
        // One look at the disk, on a snapshot's first request for the file: the large files of ticket deploys.
        disk = this.store.files.path(hash)
        if (!this.store.files.holds(hash)) throw new Error(`blob ${hash} is missing from the store and the blob directory`)
      }
      entry = {
        hash,
        disk,
        gzip: disk === null && this.store.hasVariant(hash, 'gzip'),
        br: disk === null && this.store.hasVariant(hash, 'br'),
        content: null,
        bytes: 0,
        stamp: 0,
        older: null,
        newer: null,
        refs: 0,
      }
      this.#entries.set(hash, entry)
    }
    entry.refs++
    return entry
  }

  release(entry: ContentEntry): void {
    if (--entry.refs > 0) return
    if (this.#entries.get(entry.hash) === entry) this.#entries.delete(entry.hash)
    this.#drop(entry)
  }

  /** The bytes of an entry: resident, or read now from LMDB (the serving path; never awaits). */
  read(entry: ContentEntry): Content {
    const content = entry.content
    if (content === null) return this.#load(entry)
    this.#hits++
    if (this.#tick - entry.stamp > this.#resident >> 1 && entry !== this.#newest) {
      this.#unlink(entry)
      this.#append(entry)
    }
    return content
  }

  /** What the cache holds: entries referenced by snapshots, those resident, their bytes, reads from LMDB so far. */
  stats(): { entries: number; resident: number; residentBytes: number; limitBytes: number; reads: number; hits: number } {
    return {
      hits: this.#hits,
      entries: this.#entries.size,
      resident: this.#resident,
      residentBytes: this.#residentBytes,
      limitBytes: this.limitBytes,
      reads: this.#reads,
    }
  }

  #load(entry: ContentEntry): Content {
    const identity = this.store.getBlob(entry.hash)
    if (identity === undefined) throw new Error(`blob ${entry.hash} is missing from the store`)
    const content: Content = {
      identity,
      gzip: entry.gzip ? (this.store.getVariant(entry.hash, 'gzip') ?? null) : null,
      br: entry.br ? (this.store.getVariant(entry.hash, 'br') ?? null) : null,
    }
    this.#reads++
    const bytes = identity.length + (content.gzip?.length ?? 0) + (content.br?.length ?? 0)
    // Only content some snapshot still holds is kept, and only what fits the budget at all.
    if (entry.refs <= 0 || bytes > this.limitBytes) return content
    // Make room first, oldest first (the entry being read is not resident, so never chosen).
    while (this.#oldest !== null && this.#residentBytes + bytes > this.limitBytes) this.#drop(this.#oldest)
    entry.content = content
    entry.bytes = bytes
    this.#residentBytes += bytes
    this.#resident++
    this.#append(entry)
    return content
  }

  #drop(entry: ContentEntry): void {
    if (entry.content === null) return
    entry.content = null
    this.#residentBytes -= entry.bytes
    entry.bytes = 0
    this.#resident--
    this.#unlink(entry)
  }

  /** Puts a resident entry at the recent end. */
  #append(entry: ContentEntry): void {
    entry.stamp = ++this.#tick
    entry.older = this.#newest
    entry.newer = null
    if (this.#newest === null) this.#oldest = entry
    else this.#newest.newer = entry
    this.#newest = entry
  }

  #unlink(entry: ContentEntry): void {
    if (entry.older === null) this.#oldest = entry.newer
    else entry.older.newer = entry.newer
    if (entry.newer === null) this.#newest = entry.older
    else entry.newer.older = entry.older
    entry.older = entry.newer = null
  }
}
