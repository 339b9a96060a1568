import { rm, stat } from 'node:fs/promises'
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { newId } from '../../core/ids.js'
import type { Logger } from '../../core/log.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { StorageObjectRecord, StorageUploadRecord } from '../../core/schemas/storage.js'
import type { Store } from '../../core/store/store.js'
import { Mailbox } from '../mailbox.js'
import type { Plans } from '../billing/plans.js'
import { openArchive } from './archive.js'
import { folderOf, nameOf } from './storage-names.js'
import { assertRoomFor, DAY, storageLimits } from './storage-quotas.js'
import {
  isExpired,
  listFolder,
  objectAtPath,
  objectOf,
  putObject,
  removeObject,
  subfoldersOf,
  treeOf,
  type Served,
} from './storage-records.js'
import {
  createUploads,
  openUploadChunk,
  planUploads,
  resumeUpload,
  uploadOf,
  uploadsOf,
  type BeginFile,
  type ChunkWriter,
} from './storage-uploads.js'

export { folderOf } from './storage-names.js'
export { openArchive, type ArchiveReader } from './archive.js'

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

  usage(websiteId: string): number {
    return this.store.storageBytes.get([websiteId])
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
    const planned = planUploads(website, files, options.folder)
    return this.mailbox.run(() => createUploads(this.store, this.clock, this.plans, website, planned, options))
  }

  /** An upload of this website, or 404. */
  upload(websiteId: string, uploadId: string): StorageUploadRecord {
    return uploadOf(this.store, websiteId, uploadId)
  }

  /** The offset to send from: every byte the work-area file holds (synced now). */
  async resume(websiteId: string, uploadId: string): Promise<{ upload: StorageUploadRecord; offset: number }> {
    return resumeUpload(this.store, websiteId, uploadId)
  }

  /**
   * Starts writing one chunk at `start` (which must be the offset stored): the caller streams the
   * body into the returned writer and then calls `done`, which syncs the file and records it.
   */
  async openChunk(websiteId: string, uploadId: string, start: number, end: number, total: number): Promise<ChunkWriter> {
    return openUploadChunk(this.store, this.#writing, websiteId, uploadId, start, end, total)
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
      const limits = storageLimits(this.plans, website.orgId)
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
            if (old !== undefined) replaced.push(...removeObject(this.store, old))
          }
          putObject(this.store, object)
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

  #unlink(hashes: string[]): Promise<void> {
    return this.store.releaseFiles(hashes)
  }

  /** 402 `storage_limit` when `bytes` more do not fit the organization's plan (claims of shared files). */
  assertRoom(orgId: string, bytes: number): void {
    assertRoomFor(this.store, this.plans, orgId, bytes)
  }

  /**
   * A storage website moved to another organization (a claim, a transfer): its bytes count there now,
   * and its files expire as that plan says, counted from now.
   */
  moved(websiteId: string, fromOrgId: string, toOrgId: string): Promise<void> {
    return this.mailbox.run(async () => {
      const now = this.clock.now()
      const { linkDays } = storageLimits(this.plans, toOrgId)
      const objects: StorageObjectRecord[] = []
      for (const { value } of this.store.objectsByPath.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) {
        const object = this.store.storageObjects.get(value)
        if (object !== undefined && !isExpired(this.clock, object)) objects.push(object)
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
    return objectOf(this.store, this.clock, websiteId, objectId)
  }

  /** The files of a folder (directly in it), by name, and the folders right under it. */
  list(
    websiteId: string,
    folder: string,
    options: { limit: number; cursor?: string },
  ): { items: StorageObjectRecord[]; next: string | null; folders: string[] } {
    return listFolder(this.store, this.clock, websiteId, folder, options)
  }

  /** Folders right under `folder` that hold files (at any depth). */
  subfolders(websiteId: string, folder: string): string[] {
    return subfoldersOf(this.store, websiteId, folder)
  }

  /** Every file in `folder` and below (for a zip of the folder), at most `max`. */
  tree(websiteId: string, folder: string, max: number): Generator<StorageObjectRecord> {
    return treeOf(this.store, this.clock, websiteId, folder, max)
  }

  /** The file a link names, for serving (null: none, or expired). */
  byPath(websiteId: string, folder: string, name: string): Served | null {
    return objectAtPath(this.store, this.clock, websiteId, folder, name)
  }

  /** Renames a file, moves it to another folder, or changes its expiry. */
  update(
    website: WebsiteRecord,
    objectId: string,
    change: { name?: string; folder?: string; expiresAt?: number | null },
  ): Promise<StorageObjectRecord> {
    return this.mailbox.run(async () => {
      const object = this.object(website.id, objectId)
      const limits = storageLimits(this.plans, website.orgId)
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
        removeObject(this.store, object)
        putObject(this.store, next)
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
      await this.store.commit(() => (gone = removeObject(this.store, object)))
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
          removeObject(this.store, object)
          putObject(this.store, { ...object, folder })
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
        for (const object of objects) gone.push(...removeObject(this.store, object))
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
    return uploadsOf(this.store, orgId)
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
        for (const object of expired) gone.push(...removeObject(this.store, object))
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
        for (const object of all) gone.push(...removeObject(this.store, object, orgId))
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
