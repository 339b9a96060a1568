// `plinth cluster init`: a new cluster's log seeded from an embedded installation's data directory.
import type { Logger } from '../core/log.js'
import { BLOB_REFS, FILE_REFS } from '../core/store/record-schemas.js'
import type { Store } from '../core/store/store.js'
import type { ClusterNode } from './node.js'
import { replicationOf } from './standing.js'

/** Writes a seeded entry carries at most (about): a few parts of the server's max_payload each. */
const SEED_ENTRY_BYTES = 4 * 1024 * 1024
/** How often a long seed says how far it got. */
const PROGRESS_MS = 2000

export interface Seeded {
  records: number
  entries: number
  files: number
  bytes: number
  /** The log's last entry (this data directory's position). */
  position: number
}

/**
 * Seals every record of `store` into the log of a new cluster, `node` leading it (`ClusterNode.leadNew`):
 * entries of up to about 4 MiB of writes, table by table, each listing the blob files its reference
 * counts name (put in the cluster's blob store before the entry). The data directory's position ends
 * at the last entry, so this node starts as the cluster's member; a node on an empty data directory
 * replays the log and holds every record and file, byte for byte.
 */
export async function seedLog(node: ClusterNode, store: Store, logger: Logger): Promise<Seeded> {
  const replication = replicationOf(store)
  const seeded: Seeded = { records: 0, entries: 0, files: 0, bytes: 0, position: 0 }
  const put = new Set<string>()
  let told = Date.now()
  for (const writes of replication.snapshot(SEED_ENTRY_BYTES)) {
    const blobs: string[] = []
    for (const [table, key, value] of writes) {
      seeded.bytes += value?.length ?? 0
      // A version's small file lives in LMDB (its count names no file); a file of the directory goes to the blob store.
      if ((table !== FILE_REFS && table !== BLOB_REFS) || typeof key !== 'string' || put.has(key) || !store.files.holds(key)) continue
      await node.blobs.put(key, store.files.path(key))
      put.add(key)
      blobs.push(key)
    }
    await replication.seed(writes, blobs)
    seeded.records += writes.length
    seeded.entries++
    seeded.files += blobs.length
    if (Date.now() - told >= PROGRESS_MS) {
      told = Date.now()
      logger.info('seeding the log', { records: seeded.records, entries: seeded.entries, files: seeded.files })
    }
  }
  seeded.position = replication.position()?.seq ?? 0
  return seeded
}
