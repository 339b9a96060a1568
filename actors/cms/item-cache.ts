// Each collection's items, decoded once and kept in step by the CMS's writes (the actor is their one writer).
import type { ItemRecord } from '../../core/schemas/cms.js'
import type { StoreReader } from '../../core/store/reader.js'

/** Each collection's items by id, read from the store on first use, then kept in step by the writes of the CMS. */
export class ItemCache {
  readonly #items = new Map<string, Map<string, ItemRecord>>()

  constructor(private readonly store: StoreReader) {}

  /** A collection's items in position order. */
  sorted(collectionId: string): ItemRecord[] {
    return [...this.all(collectionId)].sort((a, b) => a.position - b.position)
  }

  /** A collection's items in no order (cheaper when order does not matter). */
  all(collectionId: string): IterableIterator<ItemRecord> {
    let cached = this.#items.get(collectionId)
    if (cached === undefined) {
      cached = new Map()
      for (const { value } of this.store.itemsByCollection.range({ start: [collectionId, ''], end: [collectionId, '\uffff'] })) {
        const item = this.store.items.get(value)
        if (item !== undefined) cached.set(item.id, item)
      }
      this.#items.set(collectionId, cached)
    }
    return cached.values()
  }

  /** After a commit wrote `item`: the cache holds it as written. */
  written(item: ItemRecord): void {
    this.#items.get(item.collectionId)?.set(item.id, item)
  }

  /** Everything read again on next use (an item removed elsewhere: which collection held it is unknown). */
  clear(): void {
    this.#items.clear()
  }

  /** After a commit changed a collection's items wholesale (or removed them): read again on next use. */
  delete(collectionId: string): void {
    this.#items.delete(collectionId)
  }
}
