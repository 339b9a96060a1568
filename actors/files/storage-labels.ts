/** The names shared files and folders are shown under: a label changes what people read, never a link. */

import { ApiError } from '../../core/errors.js'
import { STORAGE_NAME_MAX_CHARS } from '../../core/limits.js'
import type { StorageObjectRecord } from '../../core/schemas/storage.js'
import type { FilesStore } from './tables.js'
import type { StoreReader } from '../../core/store/reader.js'
import { putObject, removeObject } from './storage-records.js'

/** A label as stored, or null to clear it (a blank one clears too). */
export function labelOf(text: string | null, field: string): string | null {
  if (text === null) return null
  const label = text.trim()
  if (label === '') return null
  if (label.length > STORAGE_NAME_MAX_CHARS || /[\u0000-\u001f\u007f]/.test(label))
    throw new ApiError(
      'validation',
      `${field} is a name of 1-${STORAGE_NAME_MAX_CHARS} characters without control characters (null clears it)`,
      {
        field,
      },
    )
  return label
}

/** Inside a commit: a file shown under `label` (null: under its own name). */
export function putObjectLabel(store: FilesStore, object: StorageObjectRecord, label: string | null): StorageObjectRecord {
  const { label: _old, ...rest } = object
  const next: StorageObjectRecord = label === null ? rest : { ...rest, label }
  removeObject(store, object)
  putObject(store, next)
  store.fileRefs.add(next.hash, 1)
  return next
}

/** The label of a folder, or null. */
export function folderLabelOf(store: StoreReader, websiteId: string, folder: string): string | null {
  return folder === '' ? null : (store.folderLabels.get([websiteId, folder]) ?? null)
}

/** Inside a commit: labels of `from` and the folders under it follow it to `to` (a folder renamed or moved). */
export function moveFolderLabels(store: FilesStore, websiteId: string, from: string, to: string | null): void {
  const moved: [string, string][] = []
  for (const { key, value } of store.folderLabels.range({ start: [websiteId, from], end: [websiteId, `${from}/\uffff`] })) {
    const folder = (key as [string, string])[1]
    if (folder === from || folder.startsWith(`${from}/`)) moved.push([folder, value])
  }
  for (const [folder, label] of moved) {
    store.folderLabels.remove([websiteId, folder])
    if (to !== null) store.folderLabels.put([websiteId, to + folder.slice(from.length)], label)
  }
}
