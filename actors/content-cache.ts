import type { Store } from '../core/store/store.js'

/** One piece of content in memory, with its precompressed variants. */
export interface Content {
  readonly hash: string
  readonly identity: Buffer
  readonly gzip: Buffer | null
  readonly br: Buffer | null
}

interface Entry {
  content: Content
  refs: number
}

/**
 * Content shared by every snapshot in memory, counted by reference: a file in a draft and a
 * published snapshot, or in two sites, is held once. Loaded from LMDB (content and stored variants,
 * never recompressed) when first needed.
 */
export class ContentCache {
  readonly #entries = new Map<string, Entry>()

  constructor(private readonly store: Store) {}

  /** The content with this hash, held until `release`. */
  acquire(hash: string): Content {
    let entry = this.#entries.get(hash)
    if (entry === undefined) {
      const identity = this.store.getBlob(hash)
      if (identity === undefined) throw new Error(`blob ${hash} is missing from the store`)
      entry = { content: { hash, identity, gzip: this.store.getVariant(hash, 'gzip') ?? null, br: this.store.getVariant(hash, 'br') ?? null }, refs: 0 }
      this.#entries.set(hash, entry)
    }
    entry.refs++
    return entry.content
  }

  release(hash: string): void {
    const entry = this.#entries.get(hash)
    if (entry === undefined) return
    if (--entry.refs <= 0) this.#entries.delete(hash)
  }

  /** Pieces of content held and their bytes (identity plus variants). */
  stats(): { entries: number; bytes: number } {
    let bytes = 0
    for (const { content } of this.#entries.values()) bytes += content.identity.length + (content.gzip?.length ?? 0) + (content.br?.length ?? 0)
    return { entries: this.#entries.size, bytes }
  }
}
