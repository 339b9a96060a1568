/** The plan's limits on shared files (storage quota, link lifetime, the in-progress allowance) and the checks against them. */

import { ApiError } from '../../core/errors.js'
import {
  STORAGE_FILE_MAX_BYTES,
  STORAGE_IN_PROGRESS_BYTES,
  STORAGE_IN_PROGRESS_PAID_BYTES,
  STORAGE_LARGE_FILE_MAX_BYTES,
} from '../../core/limits.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { FilesStore } from './tables.js'
import type { Plans } from '../billing/plans.js'

export const DAY = 24 * 60 * 60 * 1000

/** An organization's storage quota in bytes (null: none) and its default link lifetime in days (null: none). */
export interface StorageLimits {
  storageBytes: number | null
  linkDays: number | null
}

/** The organization's storage quota in bytes (null: none) and its default link lifetime. */
export function storageLimits(plans: Plans, orgId: string): StorageLimits {
  const view = plans.view(orgId)
  return { storageBytes: view.limits.storageBytes, linkDays: view.limits.shareLinkMaxDays }
}

/**
 * An organization's held large file of ticket deploys (an `orgBlobs` value, keyed [orgId, the name
 * the deploy uses]): its size; when it was last sent or announced (Unix ms); and, for bytes in the
 * blob directory, the SHA-256 of the content there, on which this entry holds one `fileRefs`
 * reference. Records written before large files moved to the blob directory hold only the size:
 * content in LMDB under the name, no reference.
 */
export interface OrgBlob {
  size: number
  at: number
  /** The blob directory's name for the bytes; null: the content is in LMDB under the entry's name. */
  disk: string | null
}

export function orgBlob(value: string | undefined): OrgBlob | null {
  if (value === undefined) return null
  const [size, at, disk] = value.split(' ')
  return { size: Number(size), at: Number(at ?? 0), disk: disk ?? null }
}

export function orgBlobValue(blob: OrgBlob): string {
  return blob.disk === null ? String(blob.size) : `${blob.size} ${blob.at} ${blob.disk}`
}

/**
 * What an organization keeps against its plan's storage: its finished shared files, its websites'
 * assets (archived ones too) and the large files of its ticket deploys. Read when a check needs it.
 */
export function orgStorageUsed(store: FilesStore, orgId: string): number {
  let bytes = store.storageBytes.get([orgId])
  for (const { value: websiteId } of store.websitesByOrg.range({ start: [orgId, ''], end: [orgId, '\uffff'] }))
    for (const { value } of store.assetsByWebsite.range({ start: [websiteId, 0, ''], end: [websiteId, Number.MAX_SAFE_INTEGER, ''] })) {
      const asset = store.assets.get(value)
      if (asset?.status === 'ready') bytes += asset.bytes
    }
  for (const { value } of store.orgBlobs.range({ start: [orgId, ''], end: [orgId, '\uffff'] })) bytes += orgBlob(value)!.size
  return bytes
}

/** Bytes of unfinished uploads allowed at once: 1 GiB on the free plan and for anonymous credentials, 10 GiB otherwise. */
export function inProgressAllowance(limits: StorageLimits, anonymous: boolean): number {
  return anonymous || limits.storageBytes !== null ? STORAGE_IN_PROGRESS_BYTES : STORAGE_IN_PROGRESS_PAID_BYTES
}

/** The largest shared file: 100 MiB on the free plan and for anonymous credentials, 2 GiB (in parts) otherwise. */
export function fileAllowance(limits: StorageLimits, anonymous: boolean): number {
  return anonymous || limits.storageBytes !== null ? STORAGE_FILE_MAX_BYTES : STORAGE_LARGE_FILE_MAX_BYTES
}

/** Bytes announced by the organization's uploads in progress. */
export function inProgressBytes(store: FilesStore, orgId: string): number {
  let bytes = 0
  for (const { value } of store.uploadsByOrg.range({ start: [orgId, ''], end: [orgId, '\uffff'] }))
    bytes += store.storageUploads.get(value)?.size ?? 0
  return bytes
}

/**
 * Announced uploads checked against the plan's link lifetime, the in-progress allowance (402
 * `storage_limit`, or 413 `anonymous_storage_limit` for an anonymous credential) and the plan's storage.
 */
export function assertUploadsFit(
  store: FilesStore,
  limits: StorageLimits,
  website: WebsiteRecord,
  planned: { size: number }[],
  options: { expiresInDays?: number; anonymous?: boolean },
): void {
  if (options.expiresInDays !== undefined && limits.linkDays !== null && options.expiresInDays > limits.linkDays) {
    throw new ApiError('payment_required', `Links on the free plan last at most ${limits.linkDays} days; upgrade to keep them longer`, {
      reason: 'storage_limit',
      field: 'body.expiresInDays',
    })
  }
  const incoming = planned.reduce((sum, f) => sum + f.size, 0)
  const progress = inProgressBytes(store, website.orgId)
  const allowance = inProgressAllowance(limits, options.anonymous === true)
  if (progress + incoming > allowance) {
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
      `Uploads in progress would hold ${progress + incoming} bytes; an organization holds at most ${allowance} at once: finalize or abort some (GET /v1/storage/uploads)`,
      { reason: 'storage_limit', inProgressBytes: progress, limitBytes: allowance },
    )
  }
  // An anonymous credential has no plan: its budget (500 MiB) is its only storage limit.
  if (limits.storageBytes !== null && options.anonymous !== true) {
    const used = orgStorageUsed(store, website.orgId)
    if (used + progress + incoming > limits.storageBytes) {
      throw new ApiError(
        'payment_required',
        `Shared files, assets and site media would need ${used + progress + incoming} bytes; the plan holds ${limits.storageBytes}: delete files or upgrade`,
        { reason: 'storage_limit', usedBytes: used, limitBytes: limits.storageBytes },
      )
    }
  }
}

/** 402 `storage_limit` when `bytes` more do not fit the organization's plan (claims of shared files). */
export function assertRoomFor(
  store: FilesStore,
  plans: Plans,
  orgId: string,
  bytes: number,
  what = 'The shared files',
  then = 'claim again',
): void {
  const { storageBytes } = storageLimits(plans, orgId)
  if (storageBytes === null || bytes === 0) return
  const used = orgStorageUsed(store, orgId)
  if (used + bytes > storageBytes)
    throw new ApiError(
      'payment_required',
      `${what} need ${bytes} bytes and the workspace has ${Math.max(0, storageBytes - used)} left of its plan's ${storageBytes}: delete files there or upgrade, then ${then}`,
      { reason: 'storage_limit', usedBytes: used, limitBytes: storageBytes },
    )
}

/**
 * A storage website moved to another organization (a claim, a transfer), inside the move's own
 * commit: its bytes count there from the same commit, and its files expire as that plan says,
 * counted from now. (In a commit of its own after the move, a file finalized in between was counted
 * in the new organization twice.)
 */
export function moveStorageRows(
  store: FilesStore,
  now: number,
  linkDays: number | null,
  websiteId: string,
  fromOrgId: string,
  toOrgId: string,
): void {
  const bytes = store.storageBytes.get([websiteId])
  store.storageBytes.add([fromOrgId], -bytes)
  store.storageBytes.add([toOrgId], bytes)
  for (const { value } of store.objectsByPath.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) {
    const object = store.storageObjects.get(value)
    if (object === undefined || (object.expiresAt !== null && object.expiresAt <= now)) continue
    const expiresAt = linkDays === null ? null : now + linkDays * DAY
    if (object.expiresAt !== null) store.objectsExpiring.remove([object.expiresAt, object.id])
    if (expiresAt !== null) store.objectsExpiring.put([expiresAt, object.id], object.id)
    store.storageObjects.put(object.id, { ...object, expiresAt })
  }
}
