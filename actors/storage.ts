import { open, rm, stat } from 'node:fs/promises'
import { openPromise as openZip, type Entry, type ZipFile as ArchiveReader } from 'yauzl'
import type { Clock } from '../core/clock.js'
import { contentTypeFor } from '../core/content-type.js'
import { ApiError } from '../core/errors.js'
import { newId } from '../core/ids.js'
import {
  STORAGE_FILE_MAX_BYTES,
  STORAGE_FOLDER_MAX_CHARS,
  STORAGE_IN_PROGRESS_BYTES,
  STORAGE_NAME_MAX_CHARS,
  STORAGE_UPLOAD_ABANDON_MS,
  STORAGE_UPLOADS_PER_BEGIN,
} from '../core/limits.js'
import type { Logger } from '../core/log.js'
import type { WebsiteRecord } from '../core/schemas/records.js'
import type { StorageObjectRecord, StorageUploadRecord } from '../core/schemas/storage.js'
import type { Store } from '../core/store/store.js'
import { Mailbox } from './mailbox.js'
import type { Plans } from './plans.js'

const DAY = 24 * 60 * 60 * 1000

/** A folder path as stored: segments without `.`/`..`, control characters or slashes at the ends. */
export function folderOf(text: string | undefined, field: string): string {
  const folder = (text ?? '').trim().replace(/^\/+|\/+$/g, '')
  if (folder === '') return ''
  const segments = folder.split('/')
  if (
    folder.length > STORAGE_FOLDER_MAX_CHARS ||
    segments.some((s) => s === '' || s === '.' || s === '..' || s.length > 100 || /[\u0000-\u001f\u007f\\]/.test(s))
  ) {
    throw new ApiError(
      'validation',
      `${field} is a folder path such as "photos/2026": segments of 1-100 characters, no "." or ".." segments, no backslashes or control characters, at most ${STORAGE_FOLDER_MAX_CHARS} characters`,
      { field },
    )
  }
  return segments.join('/')
}

/** A file name as stored. */
export function nameOf(text: string, field: string): string {
  const name = text.trim()
  if (name === '' || name === '.' || name === '..' || name.length > STORAGE_NAME_MAX_CHARS || /[\u0000-\u001f\u007f/\\]/.test(name)) {
    throw new ApiError(
      'validation',
      `${field} is a file name of 1-${STORAGE_NAME_MAX_CHARS} characters without slashes or control characters`,
      { field },
    )
  }
  return name
}

export type { ArchiveReader }

/** Reads an uploaded zip's central directory (at most 65,536 entries); the caller closes the reader. */
export async function openArchive(file: string): Promise<{ zip: ArchiveReader; entries: Entry[] }> {
  const zip = await openZip(file, { lazyEntries: true, autoClose: false, strictFileNames: false, decodeStrings: true })
  const entries: Entry[] = []
  try {
    for await (const entry of zip.eachEntry()) {
      entries.push(entry)
      if (entries.length >= 65_536) break
    }
  } catch (error) {
    zip.close()
    throw error
  }
  return { zip, entries }
}

export interface BeginFile {
  name: string
  size: number
  contentType?: string
  folder?: string
}

/** Where a shared file's bytes are, for serving: the blob directory's file, its size and type. */
export interface Served {
  object: StorageObjectRecord
  file: string
}

/**
 * Shared files of storage websites (spec: storage kind; issue 15): uploads in progress written to
 * the blob directory's work area chunk by chunk (resumable: the offset is the file's length), then
 * finalized into content-addressed files referenced by object records; links by folder and name;
 * expiry from the plan (7 days on free with billing on) or as set; quotas of the plan's storage and an
 * in-progress allowance per organization. Commands that check and then write, and every step that
 * adds or removes a blob file, run one at a time through one mailbox, so a file is never removed
 * while another record is about to name it.
 */
export class SharedFiles {
  readonly mailbox = new Mailbox()
  /** Uploads with a chunk being written now (one writer each). */
  readonly #writing = new Set<string>()

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly plans: Plans,
    private readonly log: Logger,
  ) {}

  /** At start: files and upload areas that no record names are removed (a crash between a rename and its commit). */
  sweepOrphans(): number {
    return this.store.files.sweep(
      (hash) => this.store.fileRefs.get(hash) > 0,
      (uploadId) => this.store.storageUploads.get(uploadId) !== undefined,
    )
  }

  /** The organization's storage quota in bytes (null: none) and its default link lifetime. */
  #limits(orgId: string): { storageBytes: number | null; linkDays: number | null } {
    const view = this.plans.view(orgId)
    return { storageBytes: view.limits.storageBytes, linkDays: view.limits.shareLinkMaxDays }
  }

  usage(websiteId: string): number {
    return this.store.storageBytes.get([websiteId])
  }

  #inProgress(orgId: string): number {
    let bytes = 0
    for (const { value } of this.store.uploadsByOrg.range({ start: [orgId, ''], end: [orgId, '\uffff'] }))
      bytes += this.store.storageUploads.get(value)?.size ?? 0
    return bytes
  }

  /**
   * Announces files to upload: each gets an upload id and its own file in the work area. A signed-in
   * organization's uploads are held to its plan (402 `storage_limit`); an anonymous credential's
   * (`anonymous`) to the spec's anonymous limits instead: its byte budget, checked by the caller, and
   * the in-progress allowance, past which it is 413 `anonymous_storage_limit`.
   */
  begin(
    website: WebsiteRecord,
    files: BeginFile[],
    options: { folder?: string; expiresInDays?: number; anonymous?: boolean },
  ): Promise<StorageUploadRecord[]> {
    if (website.kind !== 'storage')
      throw new ApiError(
        'conflict',
        `Website ${website.id} is a ${website.kind} site; files are shared from a storage website (create one with kind: "storage")`,
        { reason: 'wrong_kind' },
      )
    if (files.length === 0 || files.length > STORAGE_UPLOADS_PER_BEGIN)
      throw new ApiError('validation', `Announce 1-${STORAGE_UPLOADS_PER_BEGIN} files per call`, { field: 'body.files' })
    const base = folderOf(options.folder, 'body.folder')
    const planned = files.map((file, i) => {
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
    return this.mailbox.run(async () => {
      const now = this.clock.now()
      const limits = this.#limits(website.orgId)
      if (options.expiresInDays !== undefined && limits.linkDays !== null && options.expiresInDays > limits.linkDays) {
        throw new ApiError('payment_required', `Links on the free plan last at most ${limits.linkDays} days; upgrade to keep them longer`, {
          reason: 'storage_limit',
          field: 'body.expiresInDays',
        })
      }
      const incoming = planned.reduce((sum, f) => sum + f.size, 0)
      const progress = this.#inProgress(website.orgId)
      if (progress + incoming > STORAGE_IN_PROGRESS_BYTES) {
        if (options.anonymous === true) {
          // Spec (Anonymous limits): "in-progress uploads have a separate 1 GB allowance".
          throw new ApiError(
            'payload_too_large',
            `Uploads in progress would hold ${progress + incoming} bytes; an anonymous credential holds at most ${STORAGE_IN_PROGRESS_BYTES} bytes of unfinished uploads at once: finalize them, or cancel some with DELETE /public/v1/anonymous/sites/${website.id}/objects/<uploadId>`,
            {
              reason: 'anonymous_storage_limit',
              limit: 'in-progress uploads',
              inProgressBytes: progress,
              limitBytes: STORAGE_IN_PROGRESS_BYTES,
            },
          )
        }
        throw new ApiError(
          'payment_required',
          `Uploads in progress would hold ${progress + incoming} bytes; an organization holds at most ${STORAGE_IN_PROGRESS_BYTES} (1 GiB) at once: finalize or abort some (GET /v1/storage/uploads)`,
          { reason: 'storage_limit', inProgressBytes: progress, limitBytes: STORAGE_IN_PROGRESS_BYTES },
        )
      }
      // An anonymous credential has no plan: its budget (500 MiB) is its only storage limit.
      if (limits.storageBytes !== null && options.anonymous !== true) {
        const used = this.store.storageBytes.get([website.orgId])
        if (used + progress + incoming > limits.storageBytes) {
          throw new ApiError(
            'payment_required',
            `Shared files would need ${used + progress + incoming} bytes; the plan holds ${limits.storageBytes}: delete files or upgrade`,
            { reason: 'storage_limit', usedBytes: used, limitBytes: limits.storageBytes },
          )
        }
      }
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
      for (const upload of uploads) await (await open(this.store.files.uploadPath(upload.id), 'w')).close()
      await this.store.commit(() => {
        for (const upload of uploads) {
          this.store.storageUploads.put(upload.id, upload)
          this.store.uploadsByOrg.put([upload.orgId, upload.id], upload.id)
        }
      })
      return uploads
    })
  }

  /** An upload of this website, or 404. */
  upload(websiteId: string, uploadId: string): StorageUploadRecord {
    const upload = this.store.storageUploads.get(uploadId)
    if (upload === undefined || upload.websiteId !== websiteId)
      throw new ApiError(
        'not_found',
        `No upload ${uploadId} in progress on this website (finalized, aborted or abandoned after 24 hours); begin again with POST /v1/websites/${websiteId}/objects/uploads`,
      )
    return upload
  }

  /** The offset to send from: every byte the work-area file holds (synced now). */
  async resume(websiteId: string, uploadId: string): Promise<{ upload: StorageUploadRecord; offset: number }> {
    const upload = this.upload(websiteId, uploadId)
    const path = this.store.files.uploadPath(uploadId)
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
   */
  async openChunk(
    websiteId: string,
    uploadId: string,
    start: number,
    end: number,
    total: number,
  ): Promise<{ write(chunk: Buffer): Promise<void>; done(): Promise<number>; abort(): Promise<void> }> {
    const upload = this.upload(websiteId, uploadId)
    if (total !== upload.size)
      throw new ApiError('validation', `Content-Range says the file has ${total} bytes; it was announced with ${upload.size}`, {
        field: 'header.content-range',
      })
    if (end >= upload.size || end < start)
      throw new ApiError('validation', `Content-Range bytes ${start}-${end} fall outside the file's ${upload.size} bytes`, {
        field: 'header.content-range',
      })
    if (this.#writing.has(uploadId))
      throw new ApiError('conflict', 'Another request is writing this upload now; wait for it, then ask for the offset (POST …/resume)', {
        reason: 'upload_busy',
      })
    this.#writing.add(uploadId)
    try {
      const path = this.store.files.uploadPath(uploadId)
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
          this.#writing.delete(uploadId)
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
          await this.store.commit(() => {
            const current = this.store.storageUploads.get(uploadId)
            if (current !== undefined) this.store.storageUploads.put(uploadId, { ...current, received: position })
          })
          return position
        },
        abort: finish,
      }
    } catch (error) {
      this.#writing.delete(uploadId)
      throw error
    }
  }

  /** Turns complete uploads into shared files: hashed, moved into the blob directory, recorded. */
  finalize(website: WebsiteRecord, uploadIds: string[], options: { expiresAt?: number | null } = {}): Promise<StorageObjectRecord[]> {
    return this.mailbox.run(async () => {
      const uploads = uploadIds.map((id) => this.upload(website.id, id))
      for (const upload of uploads) {
        if (this.#writing.has(upload.id))
          throw new ApiError('conflict', `Upload ${upload.id} is still being written; finalize once its last chunk was answered`, {
            reason: 'upload_busy',
            uploadId: upload.id,
          })
        const { size } = await stat(this.store.files.uploadPath(upload.id))
        if (size !== upload.size)
          throw new ApiError(
            'conflict',
            `Upload ${upload.id} (${upload.name}) holds ${size} of ${upload.size} bytes; send the rest from byte ${size}, then finalize`,
            { reason: 'upload_incomplete', uploadId: upload.id, offset: size },
          )
      }
      const now = this.clock.now()
      const limits = this.#limits(website.orgId)
      const adopted: { upload: StorageUploadRecord; hash: string }[] = []
      for (const upload of uploads)
        adopted.push({ upload, hash: (await this.store.files.adopt(this.store.files.uploadPath(upload.id))).hash })
      const objects: StorageObjectRecord[] = []
      const replaced: string[] = []
      await this.store.commit(() => {
        for (const { upload, hash } of adopted) {
          const lifetime = upload.expiresInMs ?? (limits.linkDays === null ? null : limits.linkDays * DAY)
          const expiresAt = options.expiresAt !== undefined ? options.expiresAt : lifetime === null ? null : now + lifetime
          const object: StorageObjectRecord = {
            v: 1,
            id: newId('obj'),
            websiteId: website.id,
            folder: upload.folder,
            name: upload.name,
            size: upload.size,
            contentType: upload.contentType,
            hash,
            createdAt: now,
            expiresAt,
          }
          // A file uploaded again under the same name takes its place (its link keeps working).
          const previous = this.store.objectsByPath.get([website.id, object.folder, object.name])
          if (previous !== undefined) {
            const old = this.store.storageObjects.get(previous)
            if (old !== undefined) replaced.push(...this.#remove(old))
          }
          this.#put(object)
          this.store.fileRefs.add(hash, 1)
          this.store.storageUploads.remove(upload.id)
          this.store.uploadsByOrg.remove([upload.orgId, upload.id])
          objects.push(object)
        }
      })
      await this.#unlink(replaced)
      return objects
    })
  }

  #put(object: StorageObjectRecord): void {
    this.store.storageObjects.put(object.id, object)
    this.store.objectsByPath.put([object.websiteId, object.folder, object.name], object.id)
    if (object.expiresAt !== null) this.store.objectsExpiring.put([object.expiresAt, object.id], object.id)
    const orgId = this.store.websites.get(object.websiteId)?.orgId
    this.store.storageBytes.add([object.websiteId], object.size)
    if (orgId !== undefined) this.store.storageBytes.add([orgId], object.size)
  }

  /** Removes an object's records inside a commit; returns the hashes whose last reference went (to unlink after). */
  /** `orgId`: the website's organization, for a website whose record is gone already (a purge). */
  #remove(object: StorageObjectRecord, orgId = this.store.websites.get(object.websiteId)?.orgId): string[] {
    this.store.storageObjects.remove(object.id)
    if (this.store.objectsByPath.get([object.websiteId, object.folder, object.name]) === object.id)
      this.store.objectsByPath.remove([object.websiteId, object.folder, object.name])
    if (object.expiresAt !== null) this.store.objectsExpiring.remove([object.expiresAt, object.id])
    this.store.storageBytes.add([object.websiteId], -object.size)
    if (orgId !== undefined) this.store.storageBytes.add([orgId], -object.size)
    this.store.fileRefs.add(object.hash, -1)
    return this.store.fileRefs.get(object.hash) <= 0 ? [object.hash] : []
  }

  #unlink(hashes: string[]): Promise<void> {
    return this.store.releaseFiles(hashes)
  }

  /** 402 `storage_limit` when `bytes` more do not fit the organization's plan (claims of shared files). */
  assertRoom(orgId: string, bytes: number): void {
    const { storageBytes } = this.#limits(orgId)
    if (storageBytes === null || bytes === 0) return
    const used = this.store.storageBytes.get([orgId])
    if (used + bytes > storageBytes)
      throw new ApiError(
        'payment_required',
        `The shared files need ${bytes} bytes and the workspace has ${Math.max(0, storageBytes - used)} left of its plan's ${storageBytes}: delete files there or upgrade, then claim again`,
        { reason: 'storage_limit', usedBytes: used, limitBytes: storageBytes },
      )
  }

  /**
   * A storage website moved to another organization (a claim, a transfer): its bytes count there now,
   * and its files expire as that plan says, counted from now.
   */
  moved(websiteId: string, fromOrgId: string, toOrgId: string): Promise<void> {
    return this.mailbox.run(async () => {
      const now = this.clock.now()
      const { linkDays } = this.#limits(toOrgId)
      const objects: StorageObjectRecord[] = []
      for (const { value } of this.store.objectsByPath.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) {
        const object = this.store.storageObjects.get(value)
        if (object !== undefined && !this.#expired(object)) objects.push(object)
      }
      const bytes = this.store.storageBytes.get([websiteId])
      await this.store.commit(() => {
        this.store.storageBytes.add([fromOrgId], -bytes)
        this.store.storageBytes.add([toOrgId], bytes)
        for (const object of objects) {
          const expiresAt = linkDays === null ? null : now + linkDays * DAY
          if (object.expiresAt !== null) this.store.objectsExpiring.remove([object.expiresAt, object.id])
          if (expiresAt !== null) this.store.objectsExpiring.put([expiresAt, object.id], object.id)
          this.store.storageObjects.put(object.id, { ...object, expiresAt })
        }
      })
    })
  }

  /** A shared file of this website (expired ones are gone), or 404. */
  object(websiteId: string, objectId: string): StorageObjectRecord {
    const object = this.store.storageObjects.get(objectId)
    if (object === undefined || object.websiteId !== websiteId || this.#expired(object))
      throw new ApiError('not_found', `No shared file ${objectId} on this website (deleted, or its link expired)`)
    return object
  }

  #expired(object: StorageObjectRecord): boolean {
    return object.expiresAt !== null && object.expiresAt <= this.clock.now()
  }

  /** The files of a folder (directly in it), by name, and the folders right under it. */
  list(
    websiteId: string,
    folder: string,
    options: { limit: number; cursor?: string },
  ): { items: StorageObjectRecord[]; next: string | null; folders: string[] } {
    const items: StorageObjectRecord[] = []
    let next: string | null = null
    for (const { value } of this.store.objectsByPath.range({
      start: [websiteId, folder, options.cursor === undefined ? '' : `${options.cursor}\u0000`],
      end: [websiteId, folder, '\uffff'],
    })) {
      const object = this.store.storageObjects.get(value)
      if (object === undefined || this.#expired(object)) continue
      if (items.length === options.limit) {
        next = items[items.length - 1].name
        break
      }
      items.push(object)
    }
    return { items, next, folders: this.subfolders(websiteId, folder) }
  }

  /** Folders right under `folder` that hold files (at any depth). */
  subfolders(websiteId: string, folder: string): string[] {
    const prefix = folder === '' ? '' : `${folder}/`
    const out = new Set<string>()
    // Folders sort together in the path index: walk them, skipping each found subtree at once.
    let from = prefix
    for (;;) {
      let found: string | null = null
      for (const { key } of this.store.objectsByPath.range({ start: [websiteId, from], end: [websiteId, `${prefix}\uffff`] })) {
        const at = (key as [string, string, string])[1]
        if (at === folder || !at.startsWith(prefix)) continue
        found = at.slice(prefix.length).split('/')[0]
        break
      }
      if (found === null) break
      out.add(found)
      from = `${prefix}${found}/\uffff`
      if (out.size >= 1000) break
    }
    return [...out]
  }

  /** Every file in `folder` and below (for a zip of the folder), at most `max`. */
  *tree(websiteId: string, folder: string, max: number): Generator<StorageObjectRecord> {
    const prefix = folder === '' ? '' : `${folder}/`
    let n = 0
    for (const { key, value } of this.store.objectsByPath.range({ start: [websiteId, folder], end: [websiteId, `${prefix}\uffff`] })) {
      const at = (key as [string, string, string])[1]
      if (at !== folder && !at.startsWith(prefix)) continue
      const object = this.store.storageObjects.get(value)
      if (object === undefined || this.#expired(object)) continue
      if (++n > max) return
      yield object
    }
  }

  /** The file a link names, for serving (null: none, or expired). */
  byPath(websiteId: string, folder: string, name: string): Served | null {
    const id = this.store.objectsByPath.get([websiteId, folder, name])
    const object = id === undefined ? undefined : this.store.storageObjects.get(id)
    if (object === undefined || this.#expired(object)) return null
    return { object, file: this.store.files.path(object.hash) }
  }

  /** Renames a file, moves it to another folder, or changes its expiry. */
  update(
    website: WebsiteRecord,
    objectId: string,
    change: { name?: string; folder?: string; expiresAt?: number | null },
  ): Promise<StorageObjectRecord> {
    return this.mailbox.run(async () => {
      const object = this.object(website.id, objectId)
      const limits = this.#limits(website.orgId)
      const now = this.clock.now()
      if (change.expiresAt !== undefined) {
        if (change.expiresAt !== null && change.expiresAt <= now)
          throw new ApiError('validation', 'expiresAt is in the past; delete the file instead, or give a later time', {
            field: 'body.expiresAt',
          })
        if (limits.linkDays !== null && (change.expiresAt === null || change.expiresAt > object.createdAt + limits.linkDays * DAY)) {
          throw new ApiError(
            'payment_required',
            `Links on the free plan last at most ${limits.linkDays} days from upload; upgrade to keep them longer`,
            { reason: 'storage_limit', field: 'body.expiresAt' },
          )
        }
      }
      const next: StorageObjectRecord = {
        ...object,
        ...(change.name === undefined ? {} : { name: nameOf(change.name, 'body.name') }),
        ...(change.folder === undefined ? {} : { folder: folderOf(change.folder, 'body.folder') }),
        ...(change.expiresAt === undefined ? {} : { expiresAt: change.expiresAt }),
      }
      const taken = this.store.objectsByPath.get([website.id, next.folder, next.name])
      if (taken !== undefined && taken !== object.id)
        throw new ApiError(
          'conflict',
          `${next.folder === '' ? '' : `${next.folder}/`}${next.name} is taken by another file; pick another name or delete that one`,
          { reason: 'name_taken', objectId: taken },
        )
      await this.store.commit(() => {
        this.#remove(object)
        this.#put(next)
        this.store.fileRefs.add(next.hash, 1)
      })
      return next
    })
  }

  /** Deletes a file; its bytes go when nothing else names them. */
  delete(website: WebsiteRecord, objectId: string): Promise<void> {
    return this.mailbox.run(async () => {
      const object = this.object(website.id, objectId)
      let gone: string[] = []
      await this.store.commit(() => (gone = this.#remove(object)))
      await this.#unlink(gone)
    })
  }

  /** Renames a folder (its files and subfolders move with it): `to` may not hold files already. */
  renameFolder(website: WebsiteRecord, from: string, to: string): Promise<{ moved: number }> {
    return this.mailbox.run(async () => {
      const source = folderOf(from, 'path.folder')
      const target = folderOf(to, 'body.to')
      if (source === '' || target === '')
        throw new ApiError('validation', 'The top level cannot be renamed, nor a folder renamed to it; move files one by one instead', {
          field: 'body.to',
        })
      if (target === source || target.startsWith(`${source}/`))
        throw new ApiError('validation', 'A folder cannot move into itself', { field: 'body.to' })
      const objects = [...this.tree(website.id, source, Number.MAX_SAFE_INTEGER)]
      if (objects.length === 0) throw new ApiError('not_found', `No folder ${source} with files on this website`)
      if ([...this.tree(website.id, target, 1)].length > 0)
        throw new ApiError('conflict', `Folder ${target} already holds files; pick another name`, { reason: 'name_taken' })
      await this.store.commit(() => {
        for (const object of objects) {
          const folder = target + object.folder.slice(source.length)
          this.#remove(object)
          this.#put({ ...object, folder })
          this.store.fileRefs.add(object.hash, 1)
        }
      })
      return { moved: objects.length }
    })
  }

  /** Deletes a folder with every file in and below it. */
  deleteFolder(website: WebsiteRecord, folder: string): Promise<{ deleted: number }> {
    return this.mailbox.run(async () => {
      const source = folderOf(folder, 'path.folder')
      if (source === '')
        throw new ApiError('validation', 'Name a folder; to delete everything, delete the website', { field: 'path.folder' })
      const objects = [...this.tree(website.id, source, Number.MAX_SAFE_INTEGER)]
      if (objects.length === 0) throw new ApiError('not_found', `No folder ${source} with files on this website`)
      const gone: string[] = []
      await this.store.commit(() => {
        for (const object of objects) gone.push(...this.#remove(object))
      })
      await this.#unlink(gone)
      return { deleted: objects.length }
    })
  }

  /** The files inside an uploaded zip (read from its central directory), or 400 when it is not one. */
  async entries(websiteId: string, objectId: string): Promise<{ path: string; size: number; compressedSize: number }[]> {
    const object = this.object(websiteId, objectId)
    const opened = await openArchive(this.store.files.path(object.hash)).catch(() => null)
    if (opened === null)
      throw new ApiError('validation', `${object.name} is not a readable zip archive; only zips can be browsed`, { field: 'path.objectId' })
    opened.zip.close()
    return opened.entries
      .filter((e) => !e.fileName.endsWith('/'))
      .map((e) => ({ path: e.fileName, size: e.uncompressedSize, compressedSize: e.compressedSize }))
  }

  /** Uploads in progress of an organization. */
  uploads(orgId: string): StorageUploadRecord[] {
    const out: StorageUploadRecord[] = []
    for (const { value } of this.store.uploadsByOrg.range({ start: [orgId, ''], end: [orgId, '\uffff'] })) {
      const upload = this.store.storageUploads.get(value)
      if (upload !== undefined) out.push(upload)
    }
    return out
  }

  /** Drops an upload in progress with its bytes. */
  abort(orgId: string, uploadId: string): Promise<void> {
    return this.mailbox.run(async () => {
      const upload = this.store.storageUploads.get(uploadId)
      if (upload === undefined || upload.orgId !== orgId)
        throw new ApiError('not_found', `No upload ${uploadId} in progress in this organization`)
      if (this.#writing.has(uploadId))
        throw new ApiError('conflict', 'A chunk of this upload is being written now; abort once it was answered', { reason: 'upload_busy' })
      await this.store.commit(() => {
        this.store.storageUploads.remove(uploadId)
        this.store.uploadsByOrg.remove([orgId, uploadId])
      })
      await rm(this.store.files.uploadPath(uploadId), { force: true })
    })
  }

  /** Deletes what expired (files past their link's life, uploads abandoned); returns how many. */
  sweep(): Promise<number> {
    return this.mailbox.run(async () => {
      const now = this.clock.now()
      const expired: StorageObjectRecord[] = []
      for (const { value } of this.store.objectsExpiring.range({ start: [0, ''], end: [now + 1, ''] })) {
        const object = this.store.storageObjects.get(value)
        if (object !== undefined) expired.push(object)
        if (expired.length >= 1000) break
      }
      const abandoned: StorageUploadRecord[] = []
      for (const { value } of this.store.storageUploads.range({ start: '', end: '\uffff' })) {
        if (value.abandonAt <= now && !this.#writing.has(value.id)) abandoned.push(value)
        if (abandoned.length >= 1000) break
      }
      if (expired.length === 0 && abandoned.length === 0) return 0
      const gone: string[] = []
      await this.store.commit(() => {
        for (const object of expired) gone.push(...this.#remove(object))
        for (const upload of abandoned) {
          this.store.storageUploads.remove(upload.id)
          this.store.uploadsByOrg.remove([upload.orgId, upload.id])
        }
      })
      await this.#unlink(gone)
      for (const upload of abandoned) await rm(this.store.files.uploadPath(upload.id), { force: true })
      if (expired.length + abandoned.length > 0) this.log.info('shared files expired', { files: expired.length, uploads: abandoned.length })
      return expired.length + abandoned.length
    })
  }

  /** Everything of a website (its purge): files, and the uploads in progress its organization holds for it. */
  removeWebsite(websiteId: string, orgId: string): Promise<void> {
    return this.mailbox.run(async () => {
      const all: StorageObjectRecord[] = []
      for (const { value } of this.store.objectsByPath.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) {
        const object = this.store.storageObjects.get(value)
        if (object !== undefined) all.push(object)
      }
      const uploads = this.uploads(orgId).filter((u) => u.websiteId === websiteId)
      // Most purged websites share no files: nothing to write, no commit to wait for.
      if (all.length === 0 && uploads.length === 0) return
      const gone: string[] = []
      await this.store.commit(() => {
        for (const object of all) gone.push(...this.#remove(object, orgId))
        for (const upload of uploads) {
          this.store.storageUploads.remove(upload.id)
          this.store.uploadsByOrg.remove([upload.orgId, upload.id])
        }
      })
      await this.#unlink(gone)
      for (const upload of uploads) await rm(this.store.files.uploadPath(upload.id), { force: true })
    })
  }
}
