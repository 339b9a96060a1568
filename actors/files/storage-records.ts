/** Shared files' records in the store: an object written or removed with its indexes and byte counts, and read back by id, folder, subtree or link. */

import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import type { StorageObjectRecord } from '../../core/schemas/storage.js'
import type { FilesStore } from './tables.js'

/** Where a shared file's bytes are, for serving: the blob directory's file, its size and type. */
export interface Served {
  object: StorageObjectRecord
  file: string
}

/** Past its link's life (such a file is gone for every reader before the sweep removes it). */
export function isExpired(clock: Clock, object: StorageObjectRecord): boolean {
  return object.expiresAt !== null && object.expiresAt <= clock.now()
}

/** Writes an object's records inside a commit: the record, its path and expiry, the website's and organization's bytes. */
export function putObject(store: FilesStore, object: StorageObjectRecord): void {
  store.storageObjects.put(object.id, object)
  store.objectsByPath.put([object.websiteId, object.folder, object.name], object.id)
  if (object.expiresAt !== null) store.objectsExpiring.put([object.expiresAt, object.id], object.id)
  const orgId = store.websites.get(object.websiteId)?.orgId
  store.storageBytes.add([object.websiteId], object.size)
  if (orgId !== undefined) store.storageBytes.add([orgId], object.size)
}

/** Removes an object's records inside a commit; returns the hashes whose last reference went (to unlink after). */
/** `orgId`: the website's organization, for a website whose record is gone already (a purge). */
export function removeObject(
  store: FilesStore,
  object: StorageObjectRecord,
  orgId = store.websites.get(object.websiteId)?.orgId,
): string[] {
  store.storageObjects.remove(object.id)
  if (store.objectsByPath.get([object.websiteId, object.folder, object.name]) === object.id)
    store.objectsByPath.remove([object.websiteId, object.folder, object.name])
  if (object.expiresAt !== null) store.objectsExpiring.remove([object.expiresAt, object.id])
  store.storageBytes.add([object.websiteId], -object.size)
  if (orgId !== undefined) store.storageBytes.add([orgId], -object.size)
  store.fileRefs.add(object.hash, -1)
  return store.fileRefs.get(object.hash) <= 0 ? [object.hash] : []
}

/** A shared file of this website (expired ones are gone), or 404. */
export function objectOf(store: FilesStore, clock: Clock, websiteId: string, objectId: string): StorageObjectRecord {
  const object = store.storageObjects.get(objectId)
  if (object === undefined || object.websiteId !== websiteId || isExpired(clock, object))
    throw new ApiError('not_found', `No shared file ${objectId} on this website (deleted, or its link expired)`)
  return object
}

/** The files of a folder (directly in it), by name, and the folders right under it. */
export function listFolder(
  store: FilesStore,
  clock: Clock,
  websiteId: string,
  folder: string,
  options: { limit: number; cursor?: string },
): { items: StorageObjectRecord[]; next: string | null; folders: string[] } {
  const items: StorageObjectRecord[] = []
  let next: string | null = null
  for (const { value } of store.objectsByPath.range({
    start: [websiteId, folder, options.cursor === undefined ? '' : `${options.cursor}\u0000`],
    end: [websiteId, folder, '\uffff'],
  })) {
    const object = store.storageObjects.get(value)
    if (object === undefined || isExpired(clock, object)) continue
    if (items.length === options.limit) {
      next = items[items.length - 1].name
      break
    }
    items.push(object)
  }
  return { items, next, folders: subfoldersOf(store, websiteId, folder) }
}

/** Every file of the website, by folder and name, a page at a time (the cursor names the last file); the top-level folders. */
export function listAll(
  store: FilesStore,
  clock: Clock,
  websiteId: string,
  options: { limit: number; cursor?: string },
): { items: StorageObjectRecord[]; next: string | null; folders: string[] } {
  let after: [string, string] = ['', '']
  if (options.cursor !== undefined) {
    try {
      after = JSON.parse(Buffer.from(options.cursor, 'base64url').toString('utf8')) as [string, string]
      if (!Array.isArray(after) || typeof after[0] !== 'string' || typeof after[1] !== 'string') throw new Error('cursor')
    } catch {
      throw new ApiError('validation', 'query.cursor is not a cursor this list answered; start again without it', { field: 'query.cursor' })
    }
  }
  const items: StorageObjectRecord[] = []
  let next: string | null = null
  const start = options.cursor === undefined ? [websiteId, ''] : [websiteId, after[0], `${after[1]}\u0000`]
  for (const { value } of store.objectsByPath.range({ start, end: [websiteId, '\uffff'] })) {
    const object = store.storageObjects.get(value)
    if (object === undefined || isExpired(clock, object)) continue
    if (items.length === options.limit) {
      const last = items[items.length - 1]!
      next = Buffer.from(JSON.stringify([last.folder, last.name])).toString('base64url')
      break
    }
    items.push(object)
  }
  return { items, next, folders: subfoldersOf(store, websiteId, '') }
}

/** Folders right under `folder` that hold files (at any depth). */
export function subfoldersOf(store: FilesStore, websiteId: string, folder: string): string[] {
  const prefix = folder === '' ? '' : `${folder}/`
  const out = new Set<string>()
  // Folders sort together in the path index: walk them, skipping each found subtree at once.
  let from = prefix
  for (;;) {
    let found: string | null = null
    for (const { key } of store.objectsByPath.range({ start: [websiteId, from], end: [websiteId, `${prefix}\uffff`] })) {
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
export function* treeOf(store: FilesStore, clock: Clock, websiteId: string, folder: string, max: number): Generator<StorageObjectRecord> {
  const prefix = folder === '' ? '' : `${folder}/`
  let n = 0
  for (const { key, value } of store.objectsByPath.range({ start: [websiteId, folder], end: [websiteId, `${prefix}\uffff`] })) {
    const at = (key as [string, string, string])[1]
    if (at !== folder && !at.startsWith(prefix)) continue
    const object = store.storageObjects.get(value)
    if (object === undefined || isExpired(clock, object)) continue
    if (++n > max) return
    yield object
  }
}

/** The file a link names, for serving (null: none, or expired). */
export function objectAtPath(store: FilesStore, clock: Clock, websiteId: string, folder: string, name: string): Served | null {
  const id = store.objectsByPath.get([websiteId, folder, name])
  const object = id === undefined ? undefined : store.storageObjects.get(id)
  if (object === undefined || isExpired(clock, object)) return null
  return { object, file: store.files.path(object.hash) }
}

/** The archive a folder is served from (a zip sent with `archive: true` at its top), or null. */
export function archiveIn(store: FilesStore, clock: Clock, websiteId: string, folder: string): StorageObjectRecord | null {
  if (folder === '') return null
  for (const { value } of store.objectsByPath.range({ start: [websiteId, folder, ''], end: [websiteId, folder, '\uffff'] })) {
    const object = store.storageObjects.get(value)
    if (object?.archive === true && !isExpired(clock, object)) return object
  }
  return null
}

/** True when the website has files, or uploads in progress, in or under `folder`. */
export function holdsFolder(store: FilesStore, website: { id: string; orgId: string }, folder: string): boolean {
  const prefix = `${folder}/`
  for (const { key } of store.objectsByPath.range({ start: [website.id, folder], end: [website.id, `${prefix}\uffff`] })) {
    const at = (key as [string, string, string])[1]
    if (at === folder || at.startsWith(prefix)) return true
  }
  for (const { value } of store.uploadsByOrg.range({ start: [website.orgId, ''], end: [website.orgId, '\uffff'] })) {
    const upload = store.storageUploads.get(value)
    if (upload?.websiteId === website.id && (upload.folder === folder || upload.folder.startsWith(prefix))) return true
  }
  return false
}
