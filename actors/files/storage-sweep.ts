/** The shared files' sweeper: links past their life and uploads abandoned, deleted with their bytes. */

import { rm } from 'node:fs/promises'
import type { Clock } from '../../core/clock.js'
import type { Logger } from '../../core/log.js'
import type { StorageObjectRecord, StorageUploadRecord } from '../../core/schemas/storage.js'
import type { FilesStore } from './tables.js'
import { moveFolderLabels } from './storage-labels.js'
import { holdsFolder, removeObject } from './storage-records.js'

/** What a sweep did: how many files and uploads went, and the top-level folders it left without a file. */
export interface Swept {
  count: number
  emptied: { websiteId: string; folder: string }[]
}

/** Runs a step in a website's lane (one command at a time per website). */
export type InLane = <T>(websiteId: string, step: () => Promise<T>) => Promise<T>

/**
 * Deletes what expired, at most 1,000 of each a call, website by website, each in its website's lane
 * (what a command before it changed is read again there). A top-level folder whose last file expired
 * loses its label here, in the same commit; the caller drops its passwords (no new upload can join an
 * emptied folder: a begin makes a new one; one begun before keeps the folder).
 */
export async function sweepExpired(store: FilesStore, clock: Clock, writing: Set<string>, log: Logger, inLane: InLane): Promise<Swept> {
  const now = clock.now()
  const due = new Map<string, { objects: string[]; uploads: string[] }>()
  const of = (websiteId: string) => {
    let entry = due.get(websiteId)
    if (entry === undefined) due.set(websiteId, (entry = { objects: [], uploads: [] }))
    return entry
  }
  let objects = 0
  for (const { value } of store.objectsExpiring.range({ start: [0, ''], end: [now + 1, ''] })) {
    const object = store.storageObjects.get(value)
    if (object !== undefined) of(object.websiteId).objects.push(object.id)
    if (++objects >= 1000) break
  }
  let uploads = 0
  for (const { value } of store.storageUploads.range({ start: '', end: '\uffff' })) {
    if (value.abandonAt <= now && !writing.has(value.id)) {
      of(value.websiteId).uploads.push(value.id)
      if (++uploads >= 1000) break
    }
  }
  const emptied: Swept['emptied'] = []
  let files = 0
  let dropped = 0
  for (const [websiteId, { objects, uploads }] of due) {
    const done = await inLane(websiteId, () => sweepWebsite(store, now, writing, websiteId, objects, uploads))
    files += done.files
    dropped += done.uploads
    emptied.push(...done.emptied)
  }
  if (files + dropped > 0) log.info('shared files expired', { files, uploads: dropped })
  return { count: files + dropped, emptied }
}

/** One website's expired files and abandoned uploads, read again in its lane. */
async function sweepWebsite(
  store: FilesStore,
  now: number,
  writing: Set<string>,
  websiteId: string,
  objectIds: string[],
  uploadIds: string[],
): Promise<{ files: number; uploads: number; emptied: Swept['emptied'] }> {
  const expired: StorageObjectRecord[] = []
  for (const id of objectIds) {
    const object = store.storageObjects.get(id)
    if (object !== undefined && object.expiresAt !== null && object.expiresAt <= now) expired.push(object)
  }
  const abandoned: StorageUploadRecord[] = []
  for (const id of uploadIds) {
    const upload = store.storageUploads.get(id)
    if (upload !== undefined && upload.abandonAt <= now && !writing.has(upload.id)) abandoned.push(upload)
  }
  if (expired.length === 0 && abandoned.length === 0) return { files: 0, uploads: 0, emptied: [] }
  const gone: string[] = []
  const emptied: Swept['emptied'] = []
  await store.commit(() => {
    for (const object of expired) gone.push(...removeObject(store, object))
    for (const upload of abandoned) {
      store.storageUploads.remove(upload.id)
      store.uploadsByOrg.remove([upload.orgId, upload.id])
    }
    const website = store.websites.get(websiteId)
    for (const folder of new Set(expired.map((object) => object.folder.split('/')[0]!))) {
      // A file left, or an upload under way into it (its password must still hold when it finishes): kept.
      if (folder === '' || website === undefined || holdsFolder(store, website, folder)) continue
      moveFolderLabels(store, websiteId, folder, null)
      emptied.push({ websiteId, folder })
    }
  })
  await store.blobs.release(gone)
  for (const upload of abandoned) await rm(store.files.uploadPath(upload.id), { force: true })
  return { files: expired.length, uploads: abandoned.length, emptied }
}
