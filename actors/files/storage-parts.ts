/** Parts of a large shared file: each PUT on its own, in any order, written at its own offset of the work-area file. */

import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { STORAGE_UPLOAD_ABANDON_MS } from '../../core/limits.js'
import type { FilesStore } from './tables.js'
import { bodyWriter, openWorkFile, partRange, uploadOf, type ChunkWriter } from './storage-uploads.js'

/** The key a part being written holds in the writers' set (the upload's own id is finalize's claim). */
export const partKey = (uploadId: string, partNumber: number) => `${uploadId}#${partNumber}`

/**
 * Starts writing part `partNumber` of a file sent in parts: the body must be exactly the part's
 * bytes; `done` syncs them and records the part received (a part sent again replaces itself). Two
 * parts may be written at once (the agent helper sends two at a time); a part and a finalize may not.
 */
export async function openUploadPart(
  store: FilesStore,
  clock: Clock,
  writing: Set<string>,
  websiteId: string,
  uploadId: string,
  partNumber: number,
  contentLength: number | null,
): Promise<ChunkWriter> {
  const upload = uploadOf(store, websiteId, uploadId)
  if (upload.partSize === undefined)
    throw new ApiError('conflict', `${upload.name} is not sent in parts: PUT the whole file to its upload url`, { reason: 'upload_busy' })
  const count = Math.ceil(upload.size / upload.partSize)
  if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > count)
    throw new ApiError('validation', `${upload.name} has parts 1 to ${count}`, { field: 'path.partNumber' })
  const { start, length } = partRange(upload, partNumber)
  if (contentLength !== null && contentLength !== length)
    throw new ApiError('validation', `Part ${partNumber} of ${upload.name} is ${length} bytes; the body has ${contentLength}`, {
      field: 'header.content-length',
    })
  const key = partKey(uploadId, partNumber)
  if (writing.has(uploadId) || writing.has(key))
    throw new ApiError('conflict', 'This part (or the whole upload, being finalized) is being written now; wait for it, then resume', {
      reason: 'upload_busy',
    })
  writing.add(key)
  let handle
  try {
    handle = await openWorkFile(store, uploadId)
  } catch (error) {
    writing.delete(key)
    throw error
  }
  const body = bodyWriter(
    handle,
    start,
    length,
    () => new ApiError('validation', `The body is longer than part ${partNumber} (${length} bytes)`, { field: 'body' }),
    () => writing.delete(key),
  )
  return {
    write: body.write,
    done: async () => {
      await body.finish()
      const written = body.written
      if (written !== length)
        throw new ApiError('validation', `Part ${partNumber} is ${length} bytes; the body had ${written}. Send the part again whole`, {
          field: 'body',
        })
      await store.commit(() => {
        const current = store.storageUploads.get(uploadId)
        if (current === undefined) return
        const parts = [...new Set([...(current.parts ?? []), partNumber])].sort((a, b) => a - b)
        const received = parts.reduce((sum, n) => sum + partRange(current, n).length, 0)
        store.storageUploads.put(uploadId, { ...current, parts, received, abandonAt: clock.now() + STORAGE_UPLOAD_ABANDON_MS })
      })
      return written
    },
    abort: body.finish,
  }
}
