// The cluster's blob files: a JetStream object store, each file under its SHA-256.
import { createReadStream, createWriteStream } from 'node:fs'
import { Readable, Writable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { Objm, type ObjectStore } from '@nats-io/obj'
import type { NatsConnection } from '@nats-io/transport-node'
import type { BlobKeeper } from '../core/store/blob-keeper.js'

const BUCKET = 'plinth-blobs'

/**
 * Blob files as the nodes share them: the primary puts each file it places (shared files, assets, a
 * ticket deploy's large files, image variants) here before the commit that names it, so its log entry
 * never names bytes a replica cannot fetch; a replica fetches an entry's files into its own blob
 * directory before it applies the entry, so no visitor of a replica gets half a deploy. The object store
 * cuts each file into chunks itself; a file already there is not sent again.
 */
export class ClusterBlobs {
  readonly #store: ObjectStore

  private constructor(store: ObjectStore) {
    this.#store = store
  }

  static async open(nc: NatsConnection, replicas: number): Promise<ClusterBlobs> {
    return new ClusterBlobs(await new Objm(nc).create(BUCKET, { replicas }))
  }

  /** Puts the file at `path` under `hash` unless the store has it (a removed file leaves a marker, which is not having it). */
  async put(hash: string, path: string): Promise<void> {
    const info = await this.#store.info(hash)
    if (info !== null && !info.deleted) return
    await this.#store.put({ name: hash }, Readable.toWeb(createReadStream(path)) as ReadableStream<Uint8Array>)
  }

  /** The names (SHA-256) of every file in the store. */
  async names(): Promise<string[]> {
    return (await this.#store.list()).map((info) => info.name)
  }

  /** Removes the file of `hash` from the store. */
  async remove(hash: string): Promise<void> {
    await this.#store.delete(hash)
  }

  /** Writes the bytes of `hash` to `into` (the store checks and places them). Throws when the store lacks it. */
  async fetch(hash: string, into: string): Promise<void> {
    const result = await this.#store.get(hash)
    if (result === null) throw new Error(`the cluster's blob store lacks ${hash}, which a log entry lists`)
    await pipeline(
      Readable.fromWeb(result.data as import('node:stream/web').ReadableStream<Uint8Array>),
      createWriteStream(into) as Writable,
    )
    const failed = await result.error
    if (failed) throw new Error(`reading ${hash} from the cluster's blob store failed: ${failed.message}`)
  }

  /**
   * Removes each file that no entry left in the log lists (`listed`: no replica replaying it will fetch it)
   * and no record of this node's store names (checked in the hash's turn of the keeper, so a file being
   * placed again is kept), while `leading`. Resolves how many went and stayed.
   */
  async sweep(listed: ReadonlySet<string>, keeper: BlobKeeper, leading: () => boolean): Promise<{ removed: number; kept: number }> {
    const swept = { removed: 0, kept: 0 }
    for (const hash of await this.names()) {
      const removed = !listed.has(hash) && leading() && (await keeper.whenUnnamed(hash, () => this.remove(hash)))
      swept[removed ? 'removed' : 'kept']++
    }
    return swept
  }
}
