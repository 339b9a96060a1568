import { rm } from 'node:fs/promises'
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import type { Logger } from '../../core/log.js'
import { RateLimiter } from '../../core/rate-limit.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { StorageObjectRecord, StorageUploadRecord } from '../../core/schemas/storage.js'
import type { FilesStore } from './tables.js'
import type { Mailboxes } from '../mailboxes.js'
import type { Plans } from '../billing/plans.js'
import { inspectArchive } from './archive.js'
import { finalizeReady } from './storage-finalize.js'
import { sweepExpired, type Swept } from './storage-sweep.js'
import { folderLabelOf, labelOf, moveFolderLabels, putObjectLabel } from './storage-labels.js'
import { folderOf, nameOf, newFolderName } from './storage-names.js'
import { assertRoomFor, DAY, fileAllowance, inProgressBytes, moveStorageRows, orgStorageUsed, storageLimits } from './storage-quotas.js'
import { openUploadPart } from './storage-parts.js'
import {
  archiveIn,
  holdsFolder,
  listAll,
  listFolder,
  objectAtPath,
  objectOf,
  putObject,
  removeObject,
  treeOf,
  type Served,
} from './storage-records.js'
import {
  createUploads,
  openUploadChunk,
  assertNotRestarting,
  placeUploads,
  planUploads,
  unready,
  resumeUpload,
  uploadOf,
  uploadsOf,
  type BeginFile,
  type ChunkWriter,
  type FinalizeOutcome,
} from './storage-uploads.js'

export { folderOf } from './storage-names.js'
export { inspectArchive, openArchive, type ArchiveReader } from './archive.js'
export type { FinalizeOutcome } from './storage-uploads.js'

/**
 * Shared files of storage websites (spec: storage kind; issue 15): uploads in progress written to
 * the blob directory's work area chunk by chunk (resumable: the offset is the file's length), then
 * finalized into content-addressed files referenced by object records; links by folder and name;
 * expiry from the plan (7 days on free with billing on) or as set; quotas of the plan's storage and an
 * in-progress allowance per organization. Commands that check and then write run in their website's
 * lane; a blob file is added and removed through the store's `blobs`, which take turns per hash, so a
 * file is never removed while another record (of any website) is about to name it.
 */
export class SharedFiles {
  /** Uploads with a chunk being written now (one writer each). */
  readonly #writing = new Set<string>()
  /** Begins of the same file (website, path, size): a client restarting an upload over and over is told to resume. */
  readonly #restarts: RateLimiter

  constructor(
    private readonly store: FilesStore,
    private readonly clock: Clock,
    /** Websites' lanes: each command runs in the lane of the website whose files it changes. */
    private readonly lanes: Mailboxes,
    private readonly plans: Plans,
    private readonly log: Logger,
  ) {
    this.#restarts = new RateLimiter(clock)
  }

  /** At start: files and upload areas that no record names are removed (a crash between a rename and its commit). */
  sweepOrphans(): number {
    // Named by a shared file, an asset, an organization's held large file, or a site version.
    return this.store.blobs.sweepOrphans((uploadId) => this.store.storageUploads.get(uploadId) !== undefined)
  }

  /** Bytes of a website's finished files, or (an organization id) of all its storage websites'. */
  usage(websiteOrOrgId: string): number {
    return this.store.storageBytes.get([websiteOrOrgId])
  }

  /** Bytes an organization's uploads in progress announced (the in-progress allowance counts them). */
  uploading(orgId: string): number {
    return inProgressBytes(this.store, orgId)
  }

  /**
   * Announces files to upload into one folder: each gets an upload id and its own file in the work
   * area. Without `folder`, or with a folder this website does not hold yet, the call makes a new
   * folder whose name ends in an unguessable suffix; with a folder an earlier call returned, the files
   * join it (an archive folder takes no more). A signed-in organization's uploads are held to its plan
   * (402 `storage_limit`); an anonymous credential's (`anonymous`) to the spec's anonymous limits
   * instead: its byte budget, checked by the caller, and the in-progress allowance (413
   * `anonymous_storage_limit`).
   */
  begin(
    website: WebsiteRecord,
    files: BeginFile[],
    options: { folder?: string; expiresInDays?: number; anonymous?: boolean },
  ): Promise<{ folder: string; uploads: StorageUploadRecord[] }> {
    const planned = planUploads(website, files, fileAllowance(storageLimits(this.plans, website.orgId), options.anonymous === true))
    const given = options.folder === undefined ? '' : folderOf(options.folder, 'body.folder')
    // An archive is a folder of its own: always a new top-level one (a folder's other files would hide behind it).
    const archive = planned[0]!.file.archive === true
    return this.lanes.run(website.id, async () => {
      assertNotRestarting(this.#restarts, website, planned, uploadsOf(this.store, website.orgId))
      let folder: string
      if (!archive && given !== '' && holdsFolder(this.store, website, given)) {
        if (this.archiveOf(website.id, given) !== null)
          throw new ApiError(
            'conflict',
            `Folder ${given} is served from a zip archive and is read-only; share more files in a new folder (leave folder out)`,
            { reason: 'archive_read_only', field: 'body.folder' },
          )
        folder = given
      } else {
        const first = planned[0]!
        folder = newFolderName(given !== '' ? given.split('/').pop() : (first.dirs[0] ?? first.name.replace(/\.[^.]*$/, '')))
      }
      const uploads = await createUploads(this.store, this.clock, this.plans, website, placeUploads(planned, folder), options)
      return { folder, uploads }
    })
  }

  /** The archive a folder is served from (a zip sent with `archive: true` at its top), or null. */
  archiveOf(websiteId: string, folder: string): StorageObjectRecord | null {
    return archiveIn(this.store, this.clock, websiteId, folder)
  }

  /** When files finished now would expire: `expiresInDays` if given, else the plan's link lifetime (null: kept). */
  expiryFor(orgId: string, expiresInDays?: number): number | null {
    const days = expiresInDays ?? storageLimits(this.plans, orgId).linkDays
    return days === null ? null : this.clock.now() + days * DAY
  }

  /** An upload of this website, or 404. */
  upload(websiteId: string, uploadId: string): StorageUploadRecord {
    return uploadOf(this.store, websiteId, uploadId)
  }

  /** Whether a chunk or a part of the upload is being written now. */
  #busy(uploadId: string): boolean {
    if (this.#writing.has(uploadId)) return true
    for (const key of this.#writing) if (key.startsWith(`${uploadId}#`)) return true
    return false
  }

  /** Starts writing one part of a file sent in parts (any order; two at once is fine). */
  openPart(websiteId: string, uploadId: string, partNumber: number, contentLength: number | null): Promise<ChunkWriter> {
    return openUploadPart(this.store, this.clock, this.#writing, websiteId, uploadId, partNumber, contentLength)
  }

  /** The offset to send from: every byte the work-area file holds (synced now). */
  async resume(websiteId: string, uploadId: string): Promise<{ upload: StorageUploadRecord; offset: number }> {
    return resumeUpload(this.store, websiteId, uploadId)
  }

  /**
   * Starts writing one chunk at `start` (which must be the offset stored): the caller streams the
   * body into the returned writer and then calls `done`, which syncs the file and records it.
   */
  async openChunk(
    websiteId: string,
    uploadId: string,
    range: { start: number; end: number; total: number } | 'whole',
  ): Promise<ChunkWriter> {
    return openUploadChunk(this.store, this.clock, this.#writing, websiteId, uploadId, range)
  }

  /**
   * Turns complete uploads into shared files: hashed, moved into the blob directory, recorded. Each
   * upload is answered on its own: one whose bytes did not all arrive (or an archive outside the
   * bounds) gets an `error` and stays as it is, while the others go live. `charge` is called with the
   * bytes about to go live before anything is written (the anonymous byte budget; it may refuse).
   */
  finalize(
    website: WebsiteRecord,
    uploadIds: string[],
    options: { expiresAt?: number | null; charge?: (bytes: number) => void } = {},
  ): Promise<FinalizeOutcome[]> {
    return this.lanes.run(website.id, async () => {
      const outcomes: FinalizeOutcome[] = []
      const ready: StorageUploadRecord[] = []
      // Each upload claimed before the first await (as a PUT claims it): no PUT can start over its
      // bytes while they are checked, hashed and moved. Released when the commit is done.
      const claimed: string[] = []
      try {
        for (const id of new Set(uploadIds)) {
          const upload = this.store.storageUploads.get(id)
          if (upload === undefined || upload.websiteId !== website.id) {
            outcomes.push({
              id,
              error: `No upload ${id} in progress on this website (finalized already, cancelled, or dropped after an hour without activity); begin it again`,
            })
            continue
          }
          if (this.#busy(id)) {
            outcomes.push({ id, upload, error: `${upload.name} is still being written; finalize once its PUT was answered` })
            continue
          }
          this.#writing.add(id)
          claimed.push(id)
          const problem = await unready(this.store, upload)
          if (problem !== null) outcomes.push({ id, upload, error: problem })
          else {
            ready.push(upload)
            outcomes.push({ id, upload })
          }
        }
        return await finalizeReady(this.store, this.clock, this.plans, website, ready, outcomes, options)
      } finally {
        for (const id of claimed) this.#writing.delete(id)
      }
    })
  }

  /** 402 `storage_limit` when `bytes` more do not fit the organization's plan (claims of shared files, a deploy's large files). */
  assertRoom(orgId: string, bytes: number, what?: string, then?: string): void {
    assertRoomFor(this.store, this.plans, orgId, bytes, what, then)
  }

  /** The largest file the organization's plan takes, shared or a large file of a deploy (100 MiB free, 2 GiB otherwise). */
  largestFile(orgId: string): number {
    return fileAllowance(storageLimits(this.plans, orgId), false)
  }

  /** What the organization keeps against its plan's storage: shared files, assets, large site files. */
  orgUsed(orgId: string): number {
    return orgStorageUsed(this.store, orgId)
  }

  /**
   * A storage website moved to another organization (a claim, a transfer), called inside the move's
   * commit (the website's lane): its bytes count there now, and its files expire as that plan says.
   */
  movedWithin(websiteId: string, fromOrgId: string, toOrgId: string): void {
    moveStorageRows(this.store, this.clock.now(), storageLimits(this.plans, toOrgId).linkDays, websiteId, fromOrgId, toOrgId)
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

  /** Every file of the website, by folder and name, and the top-level folders. */
  listAll(
    websiteId: string,
    options: { limit: number; cursor?: string },
  ): { items: StorageObjectRecord[]; next: string | null; folders: string[] } {
    return listAll(this.store, this.clock, websiteId, options)
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
    /** `folder: null` moves the file into a new folder of its own (a new unguessable link). */
    change: { name?: string; folder?: string | null; expiresAt?: number | null },
  ): Promise<StorageObjectRecord> {
    return this.lanes.run(website.id, async () => {
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
        ...(change.folder === undefined
          ? {}
          : {
              folder: change.folder === null ? newFolderName(object.name.replace(/\.[^.]*$/, '')) : folderOf(change.folder, 'body.folder'),
            }),
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
    return this.lanes.run(website.id, async () => {
      const object = this.object(website.id, objectId)
      let gone: string[] = []
      await this.store.commit(() => (gone = removeObject(this.store, object)))
      await this.store.blobs.release(gone)
    })
  }

  /** Shows a file under another name (null: its own); its link stays. */
  label(website: WebsiteRecord, objectId: string, label: string | null): Promise<StorageObjectRecord> {
    const shown = labelOf(label, 'body.name')
    return this.lanes.run(website.id, async () => {
      const object = this.object(website.id, objectId)
      let next = object
      await this.store.commit(() => (next = putObjectLabel(this.store, object, shown)))
      return next
    })
  }

  /** Shows a folder under another name (null: its own); its link stays. 404 when the website holds no such folder. */
  labelFolder(website: WebsiteRecord, folder: string, label: string | null): Promise<string | null> {
    const path = folderOf(folder, 'path.folder')
    const shown = labelOf(label, 'body.label')
    return this.lanes.run(website.id, async () => {
      if (path === '' || [...this.tree(website.id, path, 1)].length === 0)
        throw new ApiError('not_found', `No folder ${path} with files on this website; list_objects shows its folders`)
      await this.store.commit(() => {
        if (shown === null) this.store.folderLabels.remove([website.id, path])
        else this.store.folderLabels.put([website.id, path], shown)
      })
      return shown
    })
  }

  /** The name a folder is shown under, or null (its own). */
  folderLabel(websiteId: string, folder: string): string | null {
    return folderLabelOf(this.store, websiteId, folder)
  }

  /** Renames a folder (its files and subfolders move with it): `to` may not hold files already. */
  renameFolder(website: WebsiteRecord, from: string, to: string): Promise<{ moved: number }> {
    return this.lanes.run(website.id, async () => {
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
        moveFolderLabels(this.store, website.id, source, target)
      })
      return { moved: objects.length }
    })
  }

  /** Deletes a folder with every file in and below it. */
  deleteFolder(website: WebsiteRecord, folder: string): Promise<{ deleted: number }> {
    return this.lanes.run(website.id, async () => {
      const source = folderOf(folder, 'path.folder')
      if (source === '')
        throw new ApiError('validation', 'Name a folder; to delete everything, delete the website', { field: 'path.folder' })
      const objects = [...this.tree(website.id, source, Number.MAX_SAFE_INTEGER)]
      if (objects.length === 0) throw new ApiError('not_found', `No folder ${source} with files on this website`)
      const gone: string[] = []
      await this.store.commit(() => {
        for (const object of objects) gone.push(...removeObject(this.store, object))
        moveFolderLabels(this.store, website.id, source, null)
      })
      await this.store.blobs.release(gone)
      return { deleted: objects.length }
    })
  }

  /** The files inside an uploaded zip (read from its central directory), or 400 when it is not one or is out of the archive bounds. */
  async entries(websiteId: string, objectId: string): Promise<{ path: string; size: number; compressedSize: number }[]> {
    const object = this.object(websiteId, objectId)
    const inspected = await inspectArchive(this.store.files.path(object.hash))
    if (inspected === null || inspected.problem !== null)
      throw new ApiError('validation', inspected?.problem ?? `${object.name} is not a readable zip archive; only zips can be browsed`, {
        field: 'path.objectId',
      })
    return inspected.entries
      .filter((e) => !e.fileName.endsWith('/'))
      .map((e) => ({ path: e.fileName, size: e.uncompressedSize, compressedSize: e.compressedSize }))
  }

  /** Uploads in progress of an organization. */
  uploads(orgId: string): StorageUploadRecord[] {
    return uploadsOf(this.store, orgId)
  }

  /** Drops an upload in progress with its bytes. */
  abort(orgId: string, uploadId: string): Promise<void> {
    const missing = () => new ApiError('not_found', `No upload ${uploadId} in progress in this organization`)
    const found = this.store.storageUploads.get(uploadId)
    if (found === undefined || found.orgId !== orgId) return Promise.reject(missing())
    return this.lanes.run(found.websiteId, async () => {
      const upload = this.store.storageUploads.get(uploadId)
      if (upload === undefined || upload.orgId !== orgId) throw missing()
      if (this.#busy(uploadId))
        throw new ApiError('conflict', 'A chunk of this upload is being written now; abort once it was answered', { reason: 'upload_busy' })
      await this.store.commit(() => {
        this.store.storageUploads.remove(uploadId)
        this.store.uploadsByOrg.remove([orgId, uploadId])
      })
      await rm(this.store.files.uploadPath(uploadId), { force: true })
    })
  }

  /** Deletes what expired (files past their link's life, uploads abandoned); says how many, and the folders it emptied. */
  sweep(): Promise<Swept> {
    return sweepExpired(this.store, this.clock, this.#writing, this.log, (websiteId, step) =>
      // A website purged meanwhile has nothing left to sweep: the step reads again and finds nothing.
      this.lanes.run(websiteId, step, { evenIfGone: true }),
    )
  }

  /** Everything of a website (its purge): files, and the uploads in progress its organization holds for it. */
  removeWebsite(websiteId: string, orgId: string): Promise<void> {
    return this.lanes.run(
      websiteId,
      async () => {
        const all: StorageObjectRecord[] = []
        for (const { value } of this.store.objectsByPath.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) {
          const object = this.store.storageObjects.get(value)
          if (object !== undefined) all.push(object)
        }
        const uploads = this.uploads(orgId).filter((u) => u.websiteId === websiteId)
        const labelled = [...this.store.folderLabels.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })].map((l) => l.key)
        // Most purged websites share no files: nothing to write, no commit to wait for.
        if (all.length === 0 && uploads.length === 0 && labelled.length === 0) return
        const gone: string[] = []
        await this.store.commit(() => {
          for (const object of all) gone.push(...removeObject(this.store, object, orgId))
          for (const key of labelled) this.store.folderLabels.remove(key)
          for (const upload of uploads) {
            this.store.storageUploads.remove(upload.id)
            this.store.uploadsByOrg.remove([upload.orgId, upload.id])
          }
        })
        await this.store.blobs.release(gone)
        for (const upload of uploads) await rm(this.store.files.uploadPath(upload.id), { force: true })
      },
      { evenIfGone: true },
    )
  }
}
