// Large files of ticket deploys: sent on their own first, kept in the blob directory by hash, reused by the organization that sent them.
import { createHash, randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { open, rm } from 'node:fs/promises'
import type { Clock } from '../../core/clock.js'
import { contentTypeFor } from '../../core/content-type.js'
import { ApiError } from '../../core/errors.js'
import { DEPLOY_PART_BYTES, STORAGE_UPLOAD_ABANDON_MS } from '../../core/limits.js'
import type { FilesStore } from './tables.js'
import type { ChunkWriter } from './storage-uploads.js'
import { bodyWriter } from './storage-uploads.js'
import { orgBlob, orgBlobValue, type OrgBlob } from './storage-quotas.js'
import type { Upload } from '../website/commits.js'

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

/** Held large files that no version names are let go this long after they were last sent or announced. */
export const UNUSED_LARGE_FILE_MS = 24 * 60 * 60 * 1000

/** Part n (from 1) of a file: its offset and length. */
export function deployPart(size: number, n: number): { start: number; length: number } {
  const start = (n - 1) * DEPLOY_PART_BYTES
  return { start, length: Math.min(DEPLOY_PART_BYTES, size - start) }
}

/**
 * A ticket deploy's files over 1 MiB (the agent helper's images and video) do not travel in the
 * deploy's multipart body: `/public/v1/deploys/uploads` names them first, by SHA-256 (a file over 100
 * MiB by its fingerprint, the SHA-256 of its 100 MiB parts' digests), and each one the organization
 * has not sent before is PUT on its own (or part by part, each part checked against its digest),
 * checked against its hash and size. The bytes go to the blob directory under their own SHA-256 (a
 * fingerprint is never a file name: 64 bytes of digests hash to it too); the organization's entry
 * (`orgBlobs`, keyed by the name the deploy uses) says where, and holds one reference on them. Sites
 * serve them streamed from there, with Range. The deploy then names them in `uploaded`. Content is
 * matched per organization: whether some other organization holds the same bytes is never
 * revealed. What no version names a day after it was last sent or announced (a deploy that never
 * came, or sites deleted since) is let go by the sweeper. Parts on their way are remembered in
 * memory for an hour without activity (after a restart they are all sent again).
 */
export class LargeFiles {
  readonly #partial = new Map<string, PartialFile>()

  constructor(
    private readonly store: FilesStore,
    private readonly clock: Clock,
  ) {}

  /** The organization's entry for a name and size, or null. */
  #entry(orgId: string, name: string, size: number): OrgBlob | null {
    const entry = orgBlob(this.store.orgBlobs.get([orgId, name]))
    return entry?.size === size ? entry : null
  }

  /** True when the organization sent this content before (the same name and size): it need not send it again. */
  held(orgId: string, name: string, size: number): boolean {
    const entry = this.#entry(orgId, name, size)
    // In the blob directory: its own reference keeps it. In LMDB (an older release): while a version names it.
    return entry !== null && (entry.disk !== null || this.store.hasBlob(name))
  }

  /** Held files an uploads call named again (by `sha256` and size): kept at least another day for the deploy that follows. */
  async touch(orgId: string, files: readonly { sha256: string; size: number }[]): Promise<void> {
    if (files.length === 0) return
    await this.store.commit(() => {
      for (const { sha256, size } of files) {
        const entry = this.#entry(orgId, sha256, size)
        if (entry?.disk != null) this.store.orgBlobs.put([orgId, sha256], orgBlobValue({ ...entry, at: this.clock.now() }))
      }
    })
  }

  /**
   * Lets go of held large files that no version of any site names, a day after they were last sent
   * or announced (a deploy that never came, or sites deleted since): they stop counting toward the
   * plan, and their bytes go once nothing holds them. Parts idle for an hour go too. Returns how many.
   */
  async sweep(): Promise<number> {
    this.#sweepParts()
    const now = this.clock.now()
    const unused = (name: string, entry: OrgBlob) =>
      now - entry.at > UNUSED_LARGE_FILE_MS && this.store.blobReferences(entry.disk ?? name) === 0
    const found: [string, string][] = []
    for (const { key, value } of this.store.orgBlobs.range({ start: ['', ''], end: ['\uffff', ''] })) {
      if (unused(String(key[1]), orgBlob(value)!)) found.push([String(key[0]), String(key[1])])
      if (found.length >= 1000) break
    }
    if (found.length === 0) return 0
    const gone: string[] = []
    await this.store.commit(() => {
      for (const key of found) {
        const entry = orgBlob(this.store.orgBlobs.get(key))
        // Named by a deploy (or sent again) since it was listed: kept.
        if (entry === null || !unused(key[1], entry)) continue
        this.store.orgBlobs.remove(key)
        if (entry.disk === null) continue
        this.store.fileRefs.add(entry.disk, -1)
        if (this.store.fileRefs.get(entry.disk) <= 0) gone.push(entry.disk)
      }
    })
    await this.store.blobs.release(gone)
    return found.length
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
          { field: 'body' },
        )
      await this.#adopt(orgId, hash, size, path, actual.hash)
    } finally {
      await rm(path, { force: true })
    }
  }

  /**
   * The parts (numbers from 1) of a file over 100 MiB still to send: all of them the first time,
   * only the missing ones when the deploy runs again. `parts` are their SHA-256 digests.
   */
  missingParts(orgId: string, fingerprint: string, size: number, parts: readonly string[]): number[] {
    this.#sweepParts()
    const key = `${orgId} ${fingerprint}`
    let partial = this.#partial.get(key)
    if (partial !== undefined && partial.size !== size && partial.writing.size === 0) {
      void rm(partial.path, { force: true })
      partial = undefined
    }
    if (partial === undefined) {
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
   * checked against its digest when done; the last part in makes the file whole (hashed whole, then
   * kept under that hash).
   */
  async openPart(
    orgId: string,
    fingerprint: string,
    n: number,
    contentLength: number | null,
  ): Promise<{ writer: ChunkWriter; length: number }> {
    const key = `${orgId} ${fingerprint}`
    const partial = this.#partial.get(key)
    if (partial === undefined)
      throw new ApiError(
        'not_found',
        'No upload in parts of this file is under way (finished, idle for an hour, or the server restarted): get a new ticket from begin_deploy and deploy again; the uploads call answers the parts to send',
      )
    if (!Number.isInteger(n) || n < 1 || n > partial.parts.length)
      throw new ApiError('validation', `This file has parts 1 to ${partial.parts.length}`, { field: 'path.partNumber' })
    const { start, length } = deployPart(partial.size, n)
    if (contentLength !== null && contentLength !== length)
      throw new ApiError('validation', `Part ${n} is ${length} bytes; the body has ${contentLength}`, { field: 'header.content-length' })
    if (partial.writing.has(n)) throw new ApiError('conflict', `Part ${n} is being written now; wait for it`, { reason: 'upload_busy' })
    // Sent again: it counts only once these bytes pass their check.
    partial.done.delete(n)
    partial.writing.add(n)
    partial.lastActive = this.clock.now()
    let handle
    try {
      // Made by the first part in (any of them), written at each part's offset.
      handle = await open(partial.path, constants.O_RDWR | constants.O_CREAT)
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
        // Whole (every part checked, none being written: a part sent again leaves `done` until it passes).
        if (partial.done.size === partial.parts.length && partial.writing.size === 0 && this.#partial.get(key) === partial) {
          this.#partial.delete(key)
          try {
            const whole = await this.store.files.hashOf(partial.path)
            await this.#adopt(orgId, fingerprint, partial.size, partial.path, whole.hash)
          } finally {
            await rm(partial.path, { force: true })
          }
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
      const entry = this.held(orgId, file.sha256, file.size) ? this.#entry(orgId, file.sha256, file.size) : null
      if (entry === null)
        throw new ApiError(
          'validation',
          `uploaded[${i}] (${file.path}) was not received: send it through /public/v1/deploys/uploads first (its PUT), then deploy with the ticket that answered`,
          { field: `body.uploaded.${i}` },
        )
      // The tree names the content by its own hash; content an earlier release kept in LMDB stays there.
      const onDisk = entry.disk !== null
      return {
        bytes: onDisk ? Buffer.alloc(0) : this.store.getBlob(file.sha256)!,
        size: file.size,
        onDisk,
        hash: entry.disk ?? file.sha256,
        contentType: contentTypeFor(file.path),
        fresh: false,
        variants: null,
      }
    })
  }

  /**
   * Keeps the files of `uploads` that live in the blob directory until the returned function is
   * called, after the deploy that names them committed: the sweeper may let go of an organization's
   * unused large file meanwhile, and its bytes must stay for the version about to name them.
   */
  hold(uploads: readonly { onDisk?: boolean; hash: string }[]): () => void {
    return this.store.blobs.hold(uploads.filter((u) => u.onDisk === true).map((u) => u.hash))
  }

  /** Checked bytes into the blob directory under their SHA-256, held by the organization under `name` (one reference). */
  async #adopt(orgId: string, name: string, size: number, path: string, hash: string): Promise<void> {
    const unpin = await this.store.blobs.place(path, hash)
    try {
      await this.store.commit(() => {
        const before = orgBlob(this.store.orgBlobs.get([orgId, name]))
        this.store.orgBlobs.put([orgId, name], orgBlobValue({ size, at: this.clock.now(), disk: hash }))
        if (before?.disk != null) this.store.fileRefs.add(before.disk, -1)
        this.store.fileRefs.add(hash, 1)
      })
    } finally {
      unpin()
    }
  }

  /** Parts idle for an hour are let go, with their bytes. */
  #sweepParts(): void {
    const now = this.clock.now()
    for (const [key, partial] of this.#partial)
      if (partial.writing.size === 0 && now - partial.lastActive > STORAGE_UPLOAD_ABANDON_MS) {
        this.#partial.delete(key)
        void rm(partial.path, { force: true })
      }
  }
}
