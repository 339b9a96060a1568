import type { Store } from '../core/store/store.js'

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
  /** Snapshots holding this entry. */
  refs: number
}

/** The default budget of resident content: 256 MiB. */
export const CACHE_BYTES_DEFAULT = 256 * 1024 * 1024

/**
 * The served content of every snapshot in memory, with a bounded budget of resident bytes.
 *
 * A snapshot holds an entry per file (counted by reference, so a file in a draft and a published
 * snapshot, or in two sites, is one entry) but not its bytes: they are read on first request,
 * synchronously from LMDB's memory map (stored variants, never recompressed), and kept while the
 * budget allows. Over budget, the least recently used content goes first. A hit moves an entry to
 * the recent end of the order only when it has drifted into the older half, so content in steady
 * use costs one comparison per request, not a reordering. Content larger than the whole budget is
 * read and served without being kept.
 */
export class ContentCache {
  readonly #entries = new Map<string, ContentEntry>()
  /** Resident entries, least recently used first (a Set keeps insertion order). */
  readonly #order = new Set<ContentEntry>()
  #tick = 0
  #residentBytes = 0
  #reads = 0

  constructor(
    private readonly store: Store,
    readonly limitBytes: number = CACHE_BYTES_DEFAULT,
  ) {}

  /** The entry for this hash, held until `release`; its bytes are not read yet. */
  acquire(hash: string): ContentEntry {
    let entry = this.#entries.get(hash)
    if (entry === undefined) {
      if (!this.store.hasBlob(hash)) throw new Error(`blob ${hash} is missing from the store`)
      entry = { hash, gzip: this.store.hasVariant(hash, 'gzip'), br: this.store.hasVariant(hash, 'br'), content: null, bytes: 0, stamp: 0, refs: 0 }
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
    if (this.#tick - entry.stamp > this.#order.size >> 1) {
      this.#order.delete(entry)
      this.#order.add(entry)
      entry.stamp = ++this.#tick
    }
    return content
  }

  /** What the cache holds: entries referenced by snapshots, those resident, their bytes, reads from LMDB so far. */
  stats(): { entries: number; resident: number; residentBytes: number; limitBytes: number; reads: number } {
    return { entries: this.#entries.size, resident: this.#order.size, residentBytes: this.#residentBytes, limitBytes: this.limitBytes, reads: this.#reads }
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
    for (const oldest of this.#order) {
      if (this.#residentBytes + bytes <= this.limitBytes) break
      this.#drop(oldest)
    }
    entry.content = content
    entry.bytes = bytes
    entry.stamp = ++this.#tick
    this.#residentBytes += bytes
    this.#order.add(entry)
    return content
  }

  #drop(entry: ContentEntry): void {
    if (entry.content === null) return
    entry.content = null
    this.#residentBytes -= entry.bytes
    entry.bytes = 0
    this.#order.delete(entry)
  }
}
