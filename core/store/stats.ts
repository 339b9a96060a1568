// What /metrics reads of the database: its size and free list, and the anonymous credentials it holds.
import type { RootDatabase } from 'lmdb'

export interface StoreStats {
  usedBytes: number
  mapBytes: number
  freelistEntries: number
  anonymousCredentials: number
}

/** The database's size and free list, and the anonymous credentials it holds (read when /metrics is scraped). */
export function storeStats(store: { env: RootDatabase; anonCredentials: { db: { getStats(): unknown } } }): StoreStats {
  const stats = store.env.getStats() as { pageSize: number; lastPageNumber: number; mapSize: number; free: { entryCount: number } }
  return {
    usedBytes: (stats.lastPageNumber + 1) * stats.pageSize,
    mapBytes: stats.mapSize,
    freelistEntries: stats.free.entryCount,
    anonymousCredentials: (store.anonCredentials.db.getStats() as { entryCount: number }).entryCount,
  }
}
