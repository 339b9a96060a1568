/** The commit of a finalize: checked uploads become shared files (hashed, moved into the blob directory, recorded). */

import type { Clock } from '../../core/clock.js'
import { newId } from '../../core/ids.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { StorageObjectRecord, StorageUploadRecord } from '../../core/schemas/storage.js'
import type { FilesStore } from './tables.js'
import type { Plans } from '../billing/plans.js'
import { archiveFileCount } from './archive.js'
import { DAY, storageLimits } from './storage-quotas.js'
import { putObject, removeObject } from './storage-records.js'
import type { FinalizeOutcome } from './storage-uploads.js'

/**
 * Inside the website's lane, with the uploads claimed from writers: `charge` is told the
 * bytes about to go live (it may refuse), each ready upload is hashed into the blob directory, and one
 * commit records them (a file of the same path is replaced, its link kept).
 */
export async function finalizeReady(
  store: FilesStore,
  clock: Clock,
  plans: Plans,
  website: WebsiteRecord,
  ready: StorageUploadRecord[],
  outcomes: FinalizeOutcome[],
  options: { expiresAt?: number | null; charge?: (bytes: number) => void },
): Promise<FinalizeOutcome[]> {
  options.charge?.(ready.reduce((sum, u) => sum + u.size, 0))
  const now = clock.now()
  const limits = storageLimits(plans, website.orgId)
  const adopted: { upload: StorageUploadRecord; hash: string; files: number }[] = []
  // Each hash stays pinned until the commit names it: no release of the same bytes removes them meanwhile.
  const pins: (() => void)[] = []
  const objects = new Map<string, StorageObjectRecord>()
  const replaced: string[] = []
  try {
    for (const upload of ready) {
      // An archive's file count, for lists (its central directory was checked a moment ago).
      const files = upload.archive === true ? await archiveFileCount(store.files.uploadPath(upload.id)) : 0
      const { hash, unpin } = await store.blobs.adopt(store.files.uploadPath(upload.id))
      pins.push(unpin)
      adopted.push({ upload, hash, files })
    }
    await commitFinalized(store, now, limits, website, adopted, options, objects, replaced)
  } finally {
    for (const unpin of pins) unpin()
  }
  await store.blobs.release(replaced)
  return outcomes.map((o) => (objects.has(o.id) ? { ...o, object: objects.get(o.id)! } : o))
}

/** The one commit of a finalize: each adopted upload becomes a shared file (one of the same path is replaced, its link kept). */
function commitFinalized(
  store: FilesStore,
  now: number,
  limits: ReturnType<typeof storageLimits>,
  website: WebsiteRecord,
  adopted: { upload: StorageUploadRecord; hash: string; files: number }[],
  options: { expiresAt?: number | null },
  objects: Map<string, StorageObjectRecord>,
  replaced: string[],
): Promise<void> {
  return store.commit(() => {
    for (const { upload, hash, files } of adopted) {
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
        ...(upload.archive === true ? { archive: true, archiveFiles: files } : {}),
      }
      // A file uploaded again under the same name takes its place (its link keeps working).
      const previous = store.objectsByPath.get([website.id, object.folder, object.name])
      if (previous !== undefined) {
        const old = store.storageObjects.get(previous)
        if (old !== undefined) replaced.push(...removeObject(store, old))
      }
      putObject(store, object)
      store.fileRefs.add(hash, 1)
      store.storageUploads.remove(upload.id)
      store.uploadsByOrg.remove([upload.orgId, upload.id])
      objects.set(upload.id, object)
    }
  })
}
