/** Resumable uploads into the blob directory's work area: files announced, the offset to resume from, one chunk written at a time. */

import { open, rm, stat, type FileHandle } from 'node:fs/promises'
import type { Clock } from '../../core/clock.js'
import { contentTypeFor } from '../../core/content-type.js'
import { ApiError } from '../../core/errors.js'
import { newId } from '../../core/ids.js'
import {
  STORAGE_FILE_MAX_BYTES,
  STORAGE_FOLDER_MAX_CHARS,
  STORAGE_PART_BYTES,
  STORAGE_RESTART_LIMIT,
  STORAGE_UPLOAD_ABANDON_MS,
  STORAGE_UPLOADS_PER_BEGIN,
} from '../../core/limits.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { StorageObjectRecord, StorageUploadRecord } from '../../core/schemas/storage.js'
import type { FilesStore } from './tables.js'
import type { RateLimiter } from '../../core/rate-limit.js'
import type { Plans } from '../billing/plans.js'
import { damagedEntry, inspectArchive } from './archive.js'
import { pathOf } from './storage-names.js'
import { assertUploadsFit, DAY, storageLimits } from './storage-quotas.js'

export interface BeginFile {
  /** The file's path inside the folder: subfolders (`src/main.cpp`) and hidden files (`.gitignore`) kept. */
  name: string
  size: number
  contentType?: string
  /** A single .zip to serve as its folder. */
  archive?: boolean
}

/** An announced file as checked: its folder (the call's folder and the file's subfolders) and its own name. */
export interface PlannedFile extends BeginFile {
  folder: string
  /** The path inside the call's folder, as announced (`src/main.cpp`). */
  path: string
}

/** One upload's answer at finalize: the file it became, or why it did not (it stays as it was). */
export interface FinalizeOutcome {
  id: string
  upload?: StorageUploadRecord
  object?: StorageObjectRecord
  error?: string
}

/** One chunk being written: the body streamed into `write`, then `done` (synced and recorded) or `abort`. */
export interface ChunkWriter {
  write(chunk: Buffer): Promise<void>
  done(): Promise<number>
  abort(): Promise<void>
}

/** A storage website, or 409 `wrong_kind`. */
export function assertStorage(website: WebsiteRecord): void {
  if (website.kind !== 'storage')
    throw new ApiError(
      'conflict',
      `Website ${website.id} is a ${website.kind} site; files are shared from a storage website (create one with kind: "storage")`,
      { reason: 'wrong_kind' },
    )
}

/** Announced files checked (count, size, path, archive) before anything is written: a refusal throws at once. */
export function planUploads(
  website: WebsiteRecord,
  files: BeginFile[],
  maxFileBytes = STORAGE_FILE_MAX_BYTES,
): { path: string; dirs: string[]; name: string; file: BeginFile }[] {
  assertStorage(website)
  if (files.length === 0 || files.length > STORAGE_UPLOADS_PER_BEGIN)
    throw new ApiError(
      'validation',
      `Announce 1-${STORAGE_UPLOADS_PER_BEGIN} files per call; send more with another call and the folder this one returned`,
      {
        field: 'body.files',
      },
    )
  if (files.some((f) => f.archive === true) && (files.length !== 1 || !/^[^/]+\.zip$/i.test(files[0]!.name.replace(/^\/+/, ''))))
    throw new ApiError(
      'validation',
      'archive: true is for one .zip file alone, named without a folder (project.zip), which becomes a new folder served from inside the zip; send other files in their own call',
      { field: 'body.files' },
    )
  return files.map((file, i) => {
    if (file.size > maxFileBytes)
      throw new ApiError(
        'payload_too_large',
        `files[${i}] (${file.name}) is ${file.size} bytes; a shared file is at most ${maxFileBytes} bytes here${maxFileBytes === STORAGE_FILE_MAX_BYTES ? ' (100 MiB; paid plans take 2 GiB)' : ''}`,
        { reason: 'file_too_large', field: `body.files.${i}.byteSize`, file: file.name, limit: maxFileBytes },
      )
    const { dirs, name } = pathOf(file.name, `body.files.${i}.name`)
    return { path: [...dirs, name].join('/'), dirs, name, file }
  })
}

/**
 * 429 `upload_retries` when a file is begun again over and over while an upload of it is still
 * unfinished (the same website, name and size): that upload is there to resume. A first begin, or one
 * after the last finished, is never counted.
 */
export function assertNotRestarting(
  restarts: RateLimiter,
  website: WebsiteRecord,
  planned: ReturnType<typeof planUploads>,
  inProgress: StorageUploadRecord[],
): void {
  for (const { path, name, file } of planned) {
    if (!inProgress.some((u) => u.websiteId === website.id && u.name === name && u.size === file.size)) continue
    const rate = restarts.take(`${website.id}\n${path}\n${file.size}`, STORAGE_RESTART_LIMIT)
    if (!rate.allowed)
      throw new ApiError(
        'rate_limited',
        `${path} was begun again too often while an upload of it is unfinished; resume that upload (resume_object_upload) instead of beginning it again, or try again in ${rate.retryAfterSeconds} s`,
        { reason: 'upload_retries', file: path, retryAfterSeconds: rate.retryAfterSeconds },
        { 'retry-after': String(rate.retryAfterSeconds) },
      )
  }
}

/** The planned files placed in `folder` (the call's folder, resolved): folder lengths checked. */
export function placeUploads(planned: ReturnType<typeof planUploads>, folder: string): PlannedFile[] {
  return planned.map(({ path, dirs, name, file }, i) => {
    const full = [folder, ...dirs].filter((s) => s !== '').join('/')
    if (full.length > STORAGE_FOLDER_MAX_CHARS)
      throw new ApiError('validation', `files[${i}]: its folder path is over ${STORAGE_FOLDER_MAX_CHARS} characters`, {
        field: `body.files.${i}.name`,
      })
    return { ...file, folder: full, name, path }
  })
}

/** Inside the website's lane: the plan's limits checked, then each announced file gets an upload id and its own file in the work area. */
export async function createUploads(
  store: FilesStore,
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
    ...(f.archive === true ? { archive: true } : {}),
    ...(f.size > STORAGE_PART_BYTES ? { partSize: STORAGE_PART_BYTES, parts: [] } : {}),
    expiresInMs: options.expiresInDays === undefined ? null : options.expiresInDays * DAY,
    createdAt: now,
    abandonAt: now + STORAGE_UPLOAD_ABANDON_MS,
  }))
  // The work-area files first: a record always has its file (an orphan file is swept at start).
  for (const upload of uploads) await (await open(store.files.uploadPath(upload.id), 'w')).close()
  try {
    await store.commit(() => {
      // Again where it is written: another website of the organization (its own lane) may have begun uploads meanwhile.
      assertUploadsFit(store, limits, website, planned, options)
      for (const upload of uploads) {
        store.storageUploads.put(upload.id, upload)
        store.uploadsByOrg.put([upload.orgId, upload.id], upload.id)
      }
    })
  } catch (error) {
    for (const upload of uploads) await rm(store.files.uploadPath(upload.id), { force: true })
    throw error
  }
  return uploads
}

/** An upload of this website, or 404. */
export function uploadOf(store: FilesStore, websiteId: string, uploadId: string): StorageUploadRecord {
  const upload = store.storageUploads.get(uploadId)
  if (upload === undefined || upload.websiteId !== websiteId)
    throw new ApiError(
      'not_found',
      `No upload ${uploadId} in progress on this website (finalized, cancelled, or dropped after an hour without activity); begin it again`,
    )
  return upload
}

/** Uploads in progress of an organization. */
export function uploadsOf(store: FilesStore, orgId: string): StorageUploadRecord[] {
  const out: StorageUploadRecord[] = []
  for (const { value } of store.uploadsByOrg.range({ start: [orgId, ''], end: [orgId, '\uffff'] })) {
    const upload = store.storageUploads.get(value)
    if (upload !== undefined) out.push(upload)
  }
  return out
}

/**
 * Opens an upload's work-area file to write or read it. A file that is gone (the data directory was
 * restored from a backup, which never holds uploads in progress, or its work area was cleared) is a
 * 404 that says to begin the upload again, never a 500 or bytes missing from the finished file.
 */
export async function openWorkFile(store: FilesStore, uploadId: string): Promise<FileHandle> {
  try {
    return await open(store.files.uploadPath(uploadId), 'r+')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    throw new ApiError(
      'not_found',
      `The bytes received for upload ${uploadId} are gone from the server (it was restored from a backup, which holds no uploads in progress, or its work area was cleared): begin the upload again`,
    )
  }
}

/** The offset to send from: every byte the work-area file holds (synced now). */
export async function resumeUpload(
  store: FilesStore,
  websiteId: string,
  uploadId: string,
): Promise<{ upload: StorageUploadRecord; offset: number }> {
  const upload = uploadOf(store, websiteId, uploadId)
  const handle = await openWorkFile(store, uploadId)
  try {
    await handle.sync()
    const { size } = await handle.stat()
    if (size > upload.size) await handle.truncate(upload.size)
    // Parts land at their own offsets: the length says nothing, the parts received do.
    if (upload.partSize !== undefined) return { upload, offset: upload.received }
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
  store: FilesStore,
  clock: Clock,
  writing: Set<string>,
  websiteId: string,
  uploadId: string,
  range: { start: number; end: number; total: number } | 'whole',
): Promise<ChunkWriter> {
  const upload = uploadOf(store, websiteId, uploadId)
  if (upload.partSize !== undefined)
    throw new ApiError(
      'conflict',
      `${upload.name} is over ${upload.partSize} bytes: send it in parts, one PUT to each part's url (begin and resume answer them)`,
      { reason: 'upload_busy' },
    )
  // Without Content-Range the body is the whole file, from the first byte: whatever an earlier try left is replaced.
  const { start, end, total } = range === 'whole' ? { start: 0, end: upload.size - 1, total: upload.size } : range
  if (total !== upload.size)
    throw new ApiError('validation', `Content-Range says the file has ${total} bytes; it was announced with ${upload.size}`, {
      field: 'header.content-range',
    })
  if (range !== 'whole' && (end >= upload.size || end < start))
    throw new ApiError('validation', `Content-Range bytes ${start}-${end} fall outside the file's ${upload.size} bytes`, {
      field: 'header.content-range',
    })
  if (writing.has(uploadId))
    throw new ApiError('conflict', 'Another request is writing this upload now; wait for it, then ask for the offset (POST …/resume)', {
      reason: 'upload_busy',
    })
  writing.add(uploadId)
  try {
    const handle = await openWorkFile(store, uploadId)
    if (range === 'whole') await handle.truncate(0)
    const { size } = await handle.stat()
    if (start !== size) {
      await handle.close()
      throw new ApiError(
        'conflict',
        `This upload holds ${size} bytes: send from byte ${size} (Content-Range: bytes ${size}-…/${upload.size})`,
        { reason: 'offset_mismatch', offset: size },
      )
    }
    const body = bodyWriter(
      handle,
      start,
      end + 1 - start,
      () => new ApiError('validation', `The body is longer than Content-Range bytes ${start}-${end}`, { field: 'header.content-range' }),
      () => writing.delete(uploadId),
    )
    return {
      write: body.write,
      done: async () => {
        await body.finish()
        const position = start + body.written
        if (position !== end + 1)
          throw new ApiError(
            'validation',
            range === 'whole'
              ? `The body held ${position} bytes; the file was announced with ${upload.size}. Send the whole file again`
              : `The body held ${position - start} bytes; Content-Range bytes ${start}-${end} announced ${end - start + 1}. ${position} bytes are stored: resume from there`,
            { field: 'header.content-range', offset: position },
          )
        await store.commit(() => {
          const current = store.storageUploads.get(uploadId)
          if (current !== undefined)
            store.storageUploads.put(uploadId, { ...current, received: position, abandonAt: clock.now() + STORAGE_UPLOAD_ABANDON_MS })
        })
        return position
      },
      abort: body.finish,
    }
  } catch (error) {
    writing.delete(uploadId)
    throw error
  }
}

/**
 * A request body written into an open work-area file from `start`, in order, at most `length` bytes
 * (`tooLong` past them); `finish` syncs and closes the file and `release`s the writer's claim, once.
 */
export function bodyWriter(handle: FileHandle, start: number, length: number, tooLong: () => ApiError, release: () => void) {
  let written = 0
  let closed = false
  return {
    get written(): number {
      return written
    },
    write: async (chunk: Buffer): Promise<void> => {
      if (written + chunk.length > length) throw tooLong()
      let done = 0
      while (done < chunk.length) done += (await handle.write(chunk, done, chunk.length - done, start + written + done)).bytesWritten
      written += chunk.length
    },
    finish: async (): Promise<void> => {
      if (closed) return
      closed = true
      try {
        await handle.sync()
      } finally {
        await handle.close()
        release()
      }
    },
  }
}

/** Why an upload cannot be finalized now, or null: bytes missing, an archive out of bounds (the caller has claimed it from writers). */
export async function unready(store: FilesStore, upload: StorageUploadRecord): Promise<string | null> {
  const path = store.files.uploadPath(upload.id)
  const size = await stat(path).then(
    (s) => s.size,
    () => 0,
  )
  if (upload.partSize !== undefined) {
    const missing = missingParts(upload)
    if (missing.length > 0)
      return `${upload.name} is missing part${missing.length === 1 ? '' : 's'} ${missing.join(', ')}: send ${missing.length === 1 ? 'it' : 'them'} (resume_object_upload answers their urls), then finalize`
  }
  if (size !== upload.size)
    return `${upload.name} holds ${size} of ${upload.size} bytes: send its bytes again (resume_object_upload says what landed), then finalize`
  if (upload.archive !== true) return null
  const inspected = await inspectArchive(path)
  if (inspected === null) return `${upload.name} is not a readable zip archive; send it without archive: true to share it as a file`
  if (inspected.problem !== null) return inspected.problem
  // Every entry is read through once now (up to the 4 GiB the bounds allow), so the uploader learns
  // that one is damaged, rather than a visitor of the folder later.
  const damaged = await damagedEntry(path)
  if (damaged === null) return null
  return `${upload.name} is damaged: its entry ${damaged.entry} ${damaged.why}. Zip the folder again with a standard tool and upload that, or send this file without archive: true to share it as it is`
}

/** The part numbers of a file sent in parts that have not arrived, in order. */
export function missingParts(upload: StorageUploadRecord): number[] {
  if (upload.partSize === undefined) return []
  const count = Math.ceil(upload.size / upload.partSize)
  const received = new Set(upload.parts ?? [])
  const out: number[] = []
  for (let n = 1; n <= count; n++) if (!received.has(n)) out.push(n)
  return out
}

/** A part's bytes: its offset in the file and its length (the last part is shorter). */
export function partRange(upload: StorageUploadRecord, partNumber: number): { start: number; length: number } {
  const partSize = upload.partSize!
  const start = (partNumber - 1) * partSize
  return { start, length: Math.min(partSize, upload.size - start) }
}
