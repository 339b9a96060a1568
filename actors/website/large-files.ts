// Large files of ticket deploys: sent on their own first, kept in the blob directory by hash, reused by the organization that sent them.
import { createHash, randomBytes } from 'node:crypto'
import { open, rm } from 'node:fs/promises'
import type { Clock } from '../../core/clock.js'
import { contentTypeFor } from '../../core/content-type.js'
import { ApiError } from '../../core/errors.js'
import { DEPLOY_PART_BYTES, STORAGE_UPLOAD_ABANDON_MS } from '../../core/limits.js'
import type { Store } from '../../core/store/store.js'
import type { ChunkWriter } from '../files/storage-uploads.js'
import { bodyWriter } from '../files/storage-uploads.js'
import type { Upload } from './commits.js'

/** A file over DEPLOY_PART_BYTES on its way, part by part: where its bytes go, what each part must hash to, which arrived. */
interface PartialFile {
  readonly path: string
  readonly size: number
  readonly parts: readonly string[]
  readonly done: Set<number>
  readonly writing: Set<number>
  lastActive: number
}

/** The fingerprint of a file sent in parts: the SHA-256 of its parts' SHA-256 digests (32 bytes each, in order). */
export function partsFingerprint(parts: readonly string[]): string {
  return createHash('sha256')
    .update(Buffer.concat(parts.map((part) => Buffer.from(part, 'hex'))))
    .digest('hex')
}

/** Part n (from 1) of a file: its offset and length. */
export function deployPart(size: number, n: number): { start: number; length: number } {
  const start = (n - 1) * DEPLOY_PART_BYTES
  return { start, length: Math.min(DEPLOY_PART_BYTES, size - start) }
}

/**
 * A ticket deploy's files over 1 MiB (the agent helper's images and video) do not travel in the
 * deploy's multipart body: `/public/v1/deploys/uploads` names them by SHA-256 first (a file over 100
 * MiB by its fingerprint, the SHA-256 of its 100 MiB parts' digests), and each one the organization
 * has not sent before is PUT on its own (or part by part), checked against its hash and size, and
 * kept in the blob directory under that name. Sites serve them streamed from there, with Range. The
 * deploy then names them in `uploaded`. Content is matched per organization: whether some other
 * organization holds the same bytes is never revealed. Bytes sent but never deployed stay stored
 * (they count toward the plan; nothing references them to count them out). Parts on their way are
 * remembered in memory for an hour without activity (a restart sends them again).
 */
export class LargeFiles {
  readonly #partial = new Map<string, PartialFile>()

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  /** True when the organization sent this content before (the same hash and size): it need not send it again. */
  held(orgId: string, hash: string, size: number): boolean {
    // The size is kept beside the hash: no read of the file to answer it.
    return this.store.orgBlobs.get([orgId, hash]) === String(size) && (this.store.fileRefs.get(hash) > 0 || this.store.hasBlob(hash))
  }

  /** Where a whole file's PUT is written before it is checked (the work area, swept at start). */
  workPath(): string {
    return this.store.files.uploadPath(`dl_${randomBytes(12).toString('hex')}`)
  }

  /** Checks a whole file written to `path` against the hash and size announced, and keeps it for the organization. */
  async keep(orgId: string, hash: string, size: number, path: string): Promise<void> {
    try {
      const actual = await this.store.files.hashOf(path)
      if (actual.size !== size)
        throw new ApiError('validation', `The body had ${actual.size} bytes; the file was announced with ${size}. Send it again whole`, {
          field: 'body',
        })
      if (actual.hash !== hash)
        throw new ApiError(
          'validation',
          `The body's SHA-256 is ${actual.hash}, not the ${hash} announced; send the file as it is on disk`,
          {
            field: 'body',
          },
        )
      await this.#adopt(orgId, hash, size, path)
    } finally {
      await rm(path, { force: true })
    }
  }

  /**
   * The parts (numbers from 1) of a file over 100 MiB still to send: all of them the first time,
   * only the missing ones when the deploy runs again. `parts` are their SHA-256 digests.
   */
  missingParts(orgId: string, hash: string, size: number, parts: readonly string[]): number[] {
    this.#sweep()
    const key = `${orgId} ${hash}`
    let partial = this.#partial.get(key)
    if (partial === undefined || partial.size !== size) {
      partial = {
        path: this.store.files.uploadPath(`dp_${randomBytes(12).toString('hex')}`),
        size,
        parts: [...parts],
        done: new Set(),
        writing: new Set(),
        lastActive: this.clock.now(),
      }
      this.#partial.set(key, partial)
    }
    partial.lastActive = this.clock.now()
    return partial.parts.map((_, i) => i + 1).filter((n) => !partial.done.has(n))
  }

  /**
   * A writer for part `n` of a file announced in parts: written at its offset, hashed as it goes,
   * checked against its digest when done; the last part in makes the file whole and keeps it.
   */
  async openPart(orgId: string, hash: string, n: number, contentLength: number | null): Promise<{ writer: ChunkWriter; length: number }> {
    const partial = this.#partial.get(`${orgId} ${hash}`)
    if (partial === undefined)
      throw new ApiError(
        'not_found',
        'No upload in parts of this file is under way (finished, idle for an hour, or the server restarted): deploy again with a new ticket from begin_deploy, and only what is missing is sent',
      )
    if (!Number.isInteger(n) || n < 1 || n > partial.parts.length)
      throw new ApiError('validation', `This file has parts 1 to ${partial.parts.length}`, { field: 'path.partNumber' })
    const { start, length } = deployPart(partial.size, n)
    if (contentLength !== null && contentLength !== length)
      throw new ApiError('validation', `Part ${n} is ${length} bytes; the body has ${contentLength}`, { field: 'header.content-length' })
    if (partial.writing.has(n)) throw new ApiError('conflict', `Part ${n} is being written now; wait for it`, { reason: 'upload_busy' })
    partial.writing.add(n)
    partial.lastActive = this.clock.now()
    let handle
    try {
      handle = await open(partial.path, 'a')
        .then((h) => h.close())
        .then(() => open(partial.path, 'r+'))
    } catch (error) {
      partial.writing.delete(n)
      throw error
    }
    const digest = createHash('sha256')
    const body = bodyWriter(
      handle,
      start,
      length,
      () => new ApiError('validation', `The body is longer than part ${n} (${length} bytes)`, { field: 'body' }),
      () => partial.writing.delete(n),
    )
    const writer: ChunkWriter = {
      write: async (chunk) => {
        await body.write(chunk)
        digest.update(chunk)
      },
      done: async () => {
        await body.finish()
        if (body.written !== length)
          throw new ApiError('validation', `Part ${n} is ${length} bytes; the body had ${body.written}. Send the part again whole`, {
            field: 'body',
          })
        const actual = digest.digest('hex')
        if (actual !== partial.parts[n - 1])
          throw new ApiError(
            'validation',
            `Part ${n}'s SHA-256 is ${actual}, not the ${partial.parts[n - 1]} announced; send the part again`,
            {
              field: 'body',
            },
          )
        partial.done.add(n)
        partial.lastActive = this.clock.now()
        if (partial.done.size === partial.parts.length && this.#partial.get(`${orgId} ${hash}`) === partial) {
          this.#partial.delete(`${orgId} ${hash}`)
          await this.#adopt(orgId, hash, partial.size, partial.path).finally(() => rm(partial.path, { force: true }))
        }
        return length
      },
      abort: body.finish,
    }
    return { writer, length }
  }

  /** The deploy's `uploaded` entries as uploads of the new tree (400 for any the organization did not send). */
  uploads(orgId: string, uploaded: { path: string; size: number; sha256: string }[]): Omit<Upload, 'path'>[] {
    return uploaded.map((file, i) => {
      if (!this.held(orgId, file.sha256, file.size))
        throw new ApiError(
          'validation',
          `uploaded[${i}] (${file.path}) was not received: send it through /public/v1/deploys/uploads first (its PUT), then deploy with the ticket that answered`,
          { field: `body.uploaded.${i}` },
        )
      // Content an earlier release kept in LMDB stays there; new content is in the blob directory.
      const inStore = this.store.hasBlob(file.sha256)
      return {
        bytes: inStore ? this.store.getBlob(file.sha256)! : Buffer.alloc(0),
        size: file.size,
        onDisk: !inStore,
        hash: file.sha256,
        contentType: contentTypeFor(file.path),
        fresh: false,
        variants: null,
      }
    })
  }

  /** Verified bytes into the blob directory under `hash`, held by the organization (counted once). */
  async #adopt(orgId: string, hash: string, size: number, path: string): Promise<void> {
    await this.store.files.place(path, hash)
    await this.store.commit(() => {
      if (this.store.orgBlobs.get([orgId, hash]) === String(size)) return
      this.store.orgBlobs.put([orgId, hash], String(size))
      this.store.fileRefs.add(hash, 1)
    })
  }

  /** Parts idle for an hour are let go, with their bytes. */
  #sweep(): void {
    const now = this.clock.now()
    for (const [key, partial] of this.#partial)
      if (partial.writing.size === 0 && now - partial.lastActive > STORAGE_UPLOAD_ABANDON_MS) {
        this.#partial.delete(key)
        void rm(partial.path, { force: true })
      }
  }
}
