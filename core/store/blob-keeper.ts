import type { BlobFiles } from './blob-files.js'

/** What the keeper reads of the store: how many records name a hash, and a commit to drop its counter in. */
export interface BlobCounts {
  /** File references (shared files, assets, an organization's large files) and manifest entries naming `hash`. */
  references(hash: string): number
  /** Inside a commit: drops the hash's file counter once it is zero. */
  dropCounter(hash: string): Promise<void>
}

/**
 * Adds and removes the files of the blob directory without one queue for every website: adding a
 * reference is "place the file, then commit the record that names it", removing one is "commit, then
 * remove the file if nothing names it". Both steps on the disk take turns per hash, and a hash is
 * pinned from before its file is placed until the commit that references it is done, so a removal in
 * between sees the pin and keeps the file. Steps on different hashes never wait on each other.
 */
export class BlobKeeper {
  readonly #pins = new Map<string, number>()
  readonly #turns = new Map<string, Promise<unknown>>()
  /** Backups under way: while any is, no file is removed (releases wait in `#deferred`). */
  #paused = 0
  readonly #deferred = new Set<string>()
  /**
   * A cluster's primary: where each file goes once placed, before the commit that names it (the
   * cluster's blob store); null on the embedded server and on replicas.
   */
  mirror: ((hash: string, path: string) => Promise<void>) | null = null
  /** Files placed and mirrored since the last `takePlaced` (the next log entry lists them). */
  #placed: string[] = []

  constructor(
    private readonly files: BlobFiles,
    private readonly counts: BlobCounts,
  ) {}

  /**
   * Moves a finished upload into the blob directory under its SHA-256 and pins the hash: call `unpin`
   * once the commit that references it is done (or failed). Until then no release removes the file.
   */
  async adopt(file: string): Promise<{ hash: string; size: number; unpin: () => void }> {
    const { hash, size } = await this.files.hashOf(file)
    return { hash, size, unpin: await this.place(file, hash) }
  }

  /** As `adopt`, for bytes whose SHA-256 the caller checked already. */
  async place(file: string, hash: string): Promise<() => void> {
    const unpin = this.#pin(hash)
    try {
      await this.#turn(hash, async () => {
        await this.files.place(file, hash)
        if (this.mirror !== null) {
          await this.mirror(hash, this.files.path(hash))
          this.#placed.push(hash)
        }
      })
      return unpin
    } catch (error) {
      unpin()
      throw error
    }
  }

  /** The files placed (and mirrored) since the last call: inside a commit, what its log entry lists. */
  takePlaced(): string[] {
    const placed = this.#placed
    this.#placed = []
    return placed
  }

  /**
   * Pins files already in the directory that a commit about to run will name (a deploy naming an
   * organization's large files): a release meanwhile keeps them. Call the returned function after it.
   */
  hold(hashes: readonly string[]): () => void {
    const unpins = hashes.map((hash) => this.#pin(hash))
    return () => {
      for (const unpin of unpins) unpin()
    }
  }

  /**
   * Removes the files among `hashes` that no record names any more (after the commit that dropped
   * their last reference), and their zero counters; a pinned hash is kept.
   */
  async release(hashes: readonly string[]): Promise<void> {
    if (this.#paused > 0) {
      for (const hash of hashes) this.#deferred.add(hash)
      return
    }
    for (const hash of hashes) {
      await this.#turn(hash, async () => {
        if (this.#pins.has(hash) || this.counts.references(hash) > 0) return
        await this.files.remove(hash)
        await this.counts.dropCounter(hash)
      })
    }
  }

  /**
   * Runs `remove` (a cluster's primary removing the hash's copy from the cluster's blob store) in the
   * hash's turn, when no record names it and nothing pinned it; resolves whether it ran. A file being
   * placed meanwhile is pinned first, and is put there again after.
   */
  async whenUnnamed(hash: string, remove: () => Promise<void>): Promise<boolean> {
    return this.#turn(hash, async () => {
      if (this.#pins.has(hash) || this.counts.references(hash) > 0) return false
      await remove()
      return true
    })
  }

  /**
   * Keeps every file in the directory until the returned function is called: a backup copies the
   * files its database copy names, and one of them may lose its last reference (and would be removed)
   * after the copy's transaction began. Releases meanwhile wait, and run (each checked again) when the
   * last pause ends. Adding files goes on as before.
   */
  pauseReleases(): () => Promise<void> {
    this.#paused++
    let paused = true
    return async () => {
      if (!paused) return
      paused = false
      if (--this.#paused > 0) return
      const waiting = [...this.#deferred]
      this.#deferred.clear()
      await this.release(waiting)
    }
  }

  /**
   * At start, before anything is added or removed: files no record names (a crash between a rename
   * and its commit) and work-area files of uploads `uploading` does not know go. Returns how many.
   */
  sweepOrphans(uploading: (uploadId: string) => boolean): number {
    return this.files.sweep((hash) => this.counts.references(hash) > 0, uploading)
  }

  /** Pins `hash` until the returned function is called (once; later calls do nothing). */
  #pin(hash: string): () => void {
    this.#pins.set(hash, (this.#pins.get(hash) ?? 0) + 1)
    let pinned = true
    return () => {
      if (!pinned) return
      pinned = false
      const left = this.#pins.get(hash)! - 1
      if (left === 0) this.#pins.delete(hash)
      else this.#pins.set(hash, left)
    }
  }

  /** Runs `step` after every earlier step on the same hash has finished. */
  #turn<T>(hash: string, step: () => Promise<T>): Promise<T> {
    const result = (this.#turns.get(hash) ?? Promise.resolve()).then(step)
    const settled = result.then(
      () => undefined,
      () => undefined,
    )
    this.#turns.set(hash, settled)
    void settled.then(() => {
      if (this.#turns.get(hash) === settled) this.#turns.delete(hash)
    })
    return result
  }
}
