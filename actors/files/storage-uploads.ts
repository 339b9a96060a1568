/** Resumable uploads into the blob directory's work area: files announced, the offset to resume from, one chunk written at a time. */

import { open } from 'node:fs/promises'
import type { Clock } from '../../core/clock.js'
import { contentTypeFor } from '../../core/content-type.js'
import { ApiError } from '../../core/errors.js'
import { newId } from '../../core/ids.js'
import {
  STORAGE_FILE_MAX_BYTES,
  STORAGE_FOLDER_MAX_CHARS,
  STORAGE_UPLOAD_ABANDON_MS,
  STORAGE_UPLOADS_PER_BEGIN,
} from '../../core/limits.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { StorageUploadRecord } from '../../core/schemas/storage.js'
import type { Store } from '../../core/store/store.js'
import type { Plans } from '../billing/plans.js'
import { folderOf, nameOf } from './storage-names.js'
import { assertUploadsFit, DAY, storageLimits } from './storage-quotas.js'

export interface BeginFile {
  name: string
  size: number
  contentType?: string
  folder?: string
}

/** An announced file as checked: its folder joined under the call's folder, its name as stored. */
export interface PlannedFile extends BeginFile {
  folder: string
}

/** One chunk being written: the body streamed into `write`, then `done` (synced and recorded) or `abort`. */
export interface ChunkWriter {
  write(chunk: Buffer): Promise<void>
  done(): Promise<number>
  abort(): Promise<void>
}

/** Announced files checked (kind, count, size, folder, name) before anything is written: a refusal throws at once. */
export function planUploads(website: WebsiteRecord, files: BeginFile[], baseFolder: string | undefined): PlannedFile[] {
  if (website.kind !== 'storage')
    throw new ApiError(
      'conflict',
      `Website ${website.id} is a ${website.kind} site; files are shared from a storage website (create one with kind: "storage")`,
      { reason: 'wrong_kind' },
    )
  if (files.length === 0 || files.length > STORAGE_UPLOADS_PER_BEGIN)
    throw new ApiError('validation', `Announce 1-${STORAGE_UPLOADS_PER_BEGIN} files per call`, { field: 'body.files' })
  const base = folderOf(baseFolder, 'body.folder')
  return files.map((file, i) => {
    if (file.size > STORAGE_FILE_MAX_BYTES)
      throw new ApiError(
        'payload_too_large',
        `files[${i}] (${file.name}) is ${file.size} bytes; a shared file is at most ${STORAGE_FILE_MAX_BYTES} bytes (100 MiB)`,
        { field: `body.files.${i}.size`, limitBytes: STORAGE_FILE_MAX_BYTES },
      )
    const sub = folderOf(file.folder, `body.files.${i}.folder`)
    const folder = [base, sub].filter((s) => s !== '').join('/')
    if (folder.length > STORAGE_FOLDER_MAX_CHARS)
      throw new ApiError('validation', `files[${i}]: the folder is over ${STORAGE_FOLDER_MAX_CHARS} characters`, {
        field: `body.files.${i}.folder`,
      })
    return { ...file, folder, name: nameOf(file.name, `body.files.${i}.name`) }
  })
}

/** Inside the mailbox: the plan's limits checked, then each announced file gets an upload id and its own file in the work area. */
export async function createUploads(
  store: Store,
  clock: Clock,
  plans: Plans,
  website: WebsiteRecord,
  planned: PlannedFile[],
  options: { expiresInDays?: number; anonymous?: boolean },
): Promise<StorageUploadRecord[]> {
  const now = clock.now()
  const limits = storageLimits(plans, website.orgId)
  assertUploadsFit(store, limits, website, planned, options)
  const uploads: StorageUploadRecord[] = planned.map((f) => ({
    v: 1,
    id: newId('upl'),
    orgId: website.orgId,
    websiteId: website.id,
    folder: f.folder,
    name: f.name,
    size: f.size,
    contentType: f.contentType ?? contentTypeFor(f.name),
    received: 0,
    expiresInMs: options.expiresInDays === undefined ? null : options.expiresInDays * DAY,
    createdAt: now,
    abandonAt: now + STORAGE_UPLOAD_ABANDON_MS,
  }))
  // The work-area files first: a record always has its file (an orphan file is swept at start).
  for (const upload of uploads) await (await open(store.files.uploadPath(upload.id), 'w')).close()
  await store.commit(() => {
    for (const upload of uploads) {
      store.storageUploads.put(upload.id, upload)
      store.uploadsByOrg.put([upload.orgId, upload.id], upload.id)
    }
  })
  return uploads
}

/** An upload of this website, or 404. */
export function uploadOf(store: Store, websiteId: string, uploadId: string): StorageUploadRecord {
  const upload = store.storageUploads.get(uploadId)
  if (upload === undefined || upload.websiteId !== websiteId)
    throw new ApiError(
      'not_found',
      `No upload ${uploadId} in progress on this website (finalized, aborted or abandoned after 24 hours); begin again with POST /v1/websites/${websiteId}/objects/uploads`,
    )
  return upload
}

/** Uploads in progress of an organization. */
export function uploadsOf(store: Store, orgId: string): StorageUploadRecord[] {
  const out: StorageUploadRecord[] = []
  for (const { value } of store.uploadsByOrg.range({ start: [orgId, ''], end: [orgId, '\uffff'] })) {
    const upload = store.storageUploads.get(value)
    if (upload !== undefined) out.push(upload)
  }
  return out
}

/** The offset to send from: every byte the work-area file holds (synced now). */
export async function resumeUpload(
  store: Store,
  websiteId: string,
  uploadId: string,
): Promise<{ upload: StorageUploadRecord; offset: number }> {
  const upload = uploadOf(store, websiteId, uploadId)
  const path = store.files.uploadPath(uploadId)
  const handle = await open(path, 'r+')
  try {
    await handle.sync()
    const { size } = await handle.stat()
    if (size > upload.size) await handle.truncate(upload.size)
    return { upload, offset: Math.min(size, upload.size) }
  } finally {
    await handle.close()
  }
}

/**
 * Starts writing one chunk at `start` (which must be the offset stored): the caller streams the
 * body into the returned writer and then calls `done`, which syncs the file and records it.
 * `writing` holds the uploads with a chunk being written now (one writer each).
 */
export async function openUploadChunk(
  store: Store,
  writing: Set<string>,
  websiteId: string,
  uploadId: string,
  start: number,
  end: number,
  total: number,
): Promise<ChunkWriter> {
  const upload = uploadOf(store, websiteId, uploadId)
  if (total !== upload.size)
    throw new ApiError('validation', `Content-Range says the file has ${total} bytes; it was announced with ${upload.size}`, {
      field: 'header.content-range',
    })
  if (end >= upload.size || end < start)
    throw new ApiError('validation', `Content-Range bytes ${start}-${end} fall outside the file's ${upload.size} bytes`, {
      field: 'header.content-range',
    })
  if (writing.has(uploadId))
    throw new ApiError('conflict', 'Another request is writing this upload now; wait for it, then ask for the offset (POST …/resume)', {
      reason: 'upload_busy',
    })
  writing.add(uploadId)
  try {
    const path = store.files.uploadPath(uploadId)
    const handle = await open(path, 'r+')
    const { size } = await handle.stat()
    if (start !== size) {
      await handle.close()
      throw new ApiError(
        'conflict',
        `This upload holds ${size} bytes: send from byte ${size} (Content-Range: bytes ${size}-…/${upload.size})`,
        { reason: 'offset_mismatch', offset: size },
      )
    }
    let position = start
    let closed = false
    const finish = async () => {
      if (closed) return
      closed = true
      try {
        await handle.sync()
      } finally {
        await handle.close()
        writing.delete(uploadId)
      }
    }
    return {
      write: async (chunk: Buffer) => {
        if (position + chunk.length > end + 1)
          throw new ApiError('validation', `The body is longer than Content-Range bytes ${start}-${end}`, {
            field: 'header.content-range',
          })
        let written = 0
        while (written < chunk.length)
          written += (await handle.write(chunk, written, chunk.length - written, position + written)).bytesWritten
        position += chunk.length
      },
      done: async () => {
        await finish()
        if (position !== end + 1)
          throw new ApiError(
            'validation',
            `The body held ${position - start} bytes; Content-Range bytes ${start}-${end} announced ${end - start + 1}. ${position} bytes are stored: resume from there`,
            { field: 'header.content-range', offset: position },
          )
        await store.commit(() => {
          const current = store.storageUploads.get(uploadId)
          if (current !== undefined) store.storageUploads.put(uploadId, { ...current, received: position })
        })
        return position
      },
      abort: finish,
    }
  } catch (error) {
    writing.delete(uploadId)
    throw error
  }
}
