/** The shared files' sweeper: links past their life and uploads abandoned, deleted with their bytes. */

import { rm } from 'node:fs/promises'
import type { Clock } from '../../core/clock.js'
import type { Logger } from '../../core/log.js'
import type { StorageObjectRecord, StorageUploadRecord } from '../../core/schemas/storage.js'
import type { Store } from '../../core/store/store.js'
import { removeObject } from './storage-records.js'

/** Deletes what expired, at most 1,000 of each a call (run in the shared files' mailbox); returns how many. */
export async function sweepExpired(store: Store, clock: Clock, writing: Set<string>, log: Logger): Promise<number> {
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
  if (expired.length === 0 && abandoned.length === 0) return 0
  const gone: string[] = []
  await store.commit(() => {
    for (const object of expired) gone.push(...removeObject(store, object))
    for (const upload of abandoned) {
      store.storageUploads.remove(upload.id)
      store.uploadsByOrg.remove([upload.orgId, upload.id])
    }
  })
  await store.releaseFiles(gone)
  for (const upload of abandoned) await rm(store.files.uploadPath(upload.id), { force: true })
  if (expired.length + abandoned.length > 0) log.info('shared files expired', { files: expired.length, uploads: abandoned.length })
  return expired.length + abandoned.length
}
