/** The shared files' sweeper: links past their life and uploads abandoned, deleted with their bytes. */

import { rm } from 'node:fs/promises'
import type { Clock } from '../../core/clock.js'
import type { Logger } from '../../core/log.js'
import type { StorageObjectRecord, StorageUploadRecord } from '../../core/schemas/storage.js'
import type { Store } from '../../core/store/store.js'
import { moveFolderLabels } from './storage-labels.js'
import { holdsFolder, removeObject } from './storage-records.js'

/** What a sweep did: how many files and uploads went, and the top-level folders it left without a file. */
export interface Swept {
  count: number
  emptied: { websiteId: string; folder: string }[]
}

/**
 * Deletes what expired, at most 1,000 of each a call (run in the shared files' mailbox). A top-level
 * folder whose last file expired loses its label here, in the same commit; the caller drops its
 * passwords (no new upload can join an emptied folder: a begin makes a new one; one begun before
 * keeps the folder).
 */
export async function sweepExpired(store: Store, clock: Clock, writing: Set<string>, log: Logger): Promise<Swept> {
  const now = clock.now()
  const expired: StorageObjectRecord[] = []
  for (const { value } of store.objectsExpiring.range({ start: [0, ''], end: [now + 1, ''] })) {
    const object = store.storageObjects.get(value)
    if (object !== undefined) expired.push(object)
    if (expired.length >= 1000) break
  }
  const abandoned: StorageUploadRecord[] = []
  for (const { value } of store.storageUploads.range({ start: '', end: '\uffff' })) {
    if (value.abandonAt <= now && !writing.has(value.id)) abandoned.push(value)
    if (abandoned.length >= 1000) break
  }
  if (expired.length === 0 && abandoned.length === 0) return { count: 0, emptied: [] }
  const gone: string[] = []
  const emptied: Swept['emptied'] = []
  await store.commit(() => {
    for (const object of expired) gone.push(...removeObject(store, object))
    for (const upload of abandoned) {
      store.storageUploads.remove(upload.id)
      store.uploadsByOrg.remove([upload.orgId, upload.id])
    }
    const tops = new Set(expired.map((object) => `${object.websiteId}/${object.folder.split('/')[0]}`))
    for (const top of tops) {
      const slash = top.indexOf('/')
      const websiteId = top.slice(0, slash)
      const folder = top.slice(slash + 1)
      const website = store.websites.get(websiteId)
      // A file left, or an upload under way into it (its password must still hold when it finishes): kept.
      if (folder === '' || website === undefined || holdsFolder(store, website, folder)) continue
      moveFolderLabels(store, websiteId, folder, null)
      emptied.push({ websiteId, folder })
    }
  })
  await store.releaseFiles(gone)
  for (const upload of abandoned) await rm(store.files.uploadPath(upload.id), { force: true })
  if (expired.length + abandoned.length > 0) log.info('shared files expired', { files: expired.length, uploads: abandoned.length })
  return { count: expired.length + abandoned.length, emptied }
}
