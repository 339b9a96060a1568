import { existsSync, mkdirSync, readdirSync, rmSync } from 'node:fs'
import { open, rename, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { sha256File } from '../content.js'

/**
 * Large content outside LMDB: a content-addressed directory of files under `{dataDir}/files`, named
 * by their sha256 (`ab/cdef…`), with a work area for uploads in progress (`uploads/`). A file enters by
 * `adopt`: hashed by reading it as a stream, fsynced, renamed into place (an existing copy of the same
 * bytes wins), the directory fsynced. Which files are referenced is the store's business (counts in
 * LMDB, changed in the commits that add and remove records); `sweep` removes what nothing references,
 * so a crash between a rename and its commit leaves nothing behind for long.
 */
export class BlobFiles {
  readonly root: string
  readonly uploads: string

  constructor(dataDir: string) {
    this.root = join(dataDir, 'files')
    this.uploads = join(this.root, 'uploads')
    mkdirSync(this.uploads, { recursive: true })
  }

  /** Where the bytes of `hash` live. */
  path(hash: string): string {
    return join(this.root, hash.slice(0, 2), hash.slice(2))
  }

  /** Whether the directory holds the bytes of `hash`. */
  holds(hash: string): boolean {
    return existsSync(this.path(hash))
  }

  /** Where an upload in progress is written. */
  uploadPath(uploadId: string): string {
    return join(this.uploads, uploadId)
  }

  /** sha256 (hex) and size of a file, read as a stream. */
  async hashOf(file: string): Promise<{ hash: string; size: number }> {
    const { sha256, size } = await sha256File(file)
    return { hash: sha256, size }
  }

  /**
   * Moves a finished file into the directory under its hash: durable on disk before this resolves.
   * The caller commits the record that references it next (a crash in between leaves a file the
   * sweep removes).
   */
  async adopt(file: string): Promise<{ hash: string; size: number }> {
    const { hash, size } = await this.hashOf(file)
    await this.place(file, hash)
    return { hash, size }
  }

  /**
   * Moves a file whose SHA-256 the caller computed into the directory under it, durable on disk
   * before this resolves. The name is the content's own hash, so bytes already there are the same
   * bytes: they are kept and the file is dropped (never replaced).
   */
  async place(file: string, hash: string): Promise<void> {
    const target = this.path(hash)
    if ((await stat(target).catch(() => null)) !== null) {
      await rm(file, { force: true })
      return
    }
    const handle = await open(file, 'r+')
    try {
      await handle.sync()
    } finally {
      await handle.close()
    }
    const dir = join(this.root, hash.slice(0, 2))
    mkdirSync(dir, { recursive: true })
    await rename(file, target)
    const directory = await open(dir, 'r')
    try {
      await directory.sync()
    } finally {
      await directory.close()
    }
  }

  /** Removes the bytes of `hash` (nothing references them any more). */
  async remove(hash: string): Promise<void> {
    await rm(this.path(hash), { force: true })
  }

  /**
   * Removes every file no record references and every upload file no upload record names (at start,
   * before anything is served; what a crash left between a rename and its commit). Returns the count.
   */
  sweep(referenced: (hash: string) => boolean, uploading: (uploadId: string) => boolean): number {
    let removed = 0
    for (const dir of readdirSync(this.root)) {
      if (dir === 'uploads') {
        for (const id of readdirSync(this.uploads)) {
          if (uploading(id)) continue
          rmSync(join(this.uploads, id), { force: true })
          removed++
        }
        continue
      }
      if (!/^[0-9a-f]{2}$/.test(dir)) continue
      for (const rest of readdirSync(join(this.root, dir))) {
        if (referenced(dir + rest)) continue
        rmSync(join(this.root, dir, rest), { force: true })
        removed++
      }
    }
    return removed
  }
}
