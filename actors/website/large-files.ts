// Large files of ticket deploys: sent on their own first, kept as content by hash, reused by the organization that sent them.
import { createHash, randomBytes } from 'node:crypto'
import { readFile, rm } from 'node:fs/promises'
import { contentTypeFor } from '../../core/content-type.js'
import { ApiError } from '../../core/errors.js'
import { DEPLOY_LARGE_FILE_MAX_BYTES } from '../../core/limits.js'
import type { Store } from '../../core/store/store.js'
import type { Upload } from './commits.js'

/**
 * A ticket deploy's files over 1 MiB (the agent helper's images and video) do not travel in the
 * deploy's multipart body: `/public/v1/deploys/uploads` names them by SHA-256 first, and each one the
 * organization has not sent before is PUT on its own, checked against its hash and size, and kept as
 * content (served like any site file: from LMDB, with Range). The deploy then names them in
 * `uploaded`. Content is matched per organization: whether some other organization holds the same
 * bytes is never revealed. Bytes sent but never deployed stay stored (nothing references them to
 * count them out).
 */
export class LargeFiles {
  constructor(private readonly store: Store) {}

  /** True when the organization sent this content before (the same hash and size): it need not send it again. */
  held(orgId: string, hash: string, size: number): boolean {
    // The size is kept beside the hash: no 100 MiB read to answer it.
    return this.store.orgBlobs.get([orgId, hash]) === String(size) && this.store.hasBlob(hash)
  }

  /** Where a PUT's body is written before it is checked (the work area, swept at start). */
  workPath(): string {
    return this.store.files.uploadPath(`dl_${randomBytes(12).toString('hex')}`)
  }

  /** Checks the bytes written to `path` against the hash and size announced, and keeps them for the organization. */
  async keep(orgId: string, hash: string, size: number, path: string): Promise<void> {
    try {
      const bytes = await readFile(path)
      if (bytes.length !== size)
        throw new ApiError('validation', `The body had ${bytes.length} bytes; the file was announced with ${size}. Send it again whole`, {
          field: 'body',
        })
      const actual = createHash('sha256').update(bytes).digest('hex')
      if (actual !== hash)
        throw new ApiError('validation', `The body's SHA-256 is ${actual}, not the ${hash} announced; send the file as it is on disk`, {
          field: 'body',
        })
      await this.store.commit(() => {
        if (!this.store.hasBlob(hash)) this.store.putContent(hash, bytes, null)
        this.store.orgBlobs.put([orgId, hash], String(size))
      })
    } finally {
      await rm(path, { force: true })
    }
  }

  /** The deploy's `uploaded` entries as uploads of the new tree (400 for any the organization did not send). */
  uploads(orgId: string, uploaded: { path: string; size: number; sha256: string }[]): Omit<Upload, 'path'>[] {
    return uploaded.map((file, i) => {
      if (file.size > DEPLOY_LARGE_FILE_MAX_BYTES || !this.held(orgId, file.sha256, file.size))
        throw new ApiError(
          'validation',
          `uploaded[${i}] (${file.path}) was not received: send it through /public/v1/deploys/uploads first (its PUT), then deploy with the ticket that answered`,
          { field: `body.uploaded.${i}` },
        )
      return {
        bytes: this.store.getBlob(file.sha256)!,
        hash: file.sha256,
        contentType: contentTypeFor(file.path),
        fresh: false,
        variants: null,
      }
    })
  }
}
