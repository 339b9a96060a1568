import type { WebsiteRecord } from './schemas/records.js'

/**
 * The one home of "is this website serving": neither in the trash nor taken down nor offline (an
 * anonymous preview that ended, a held claim), and a kind that
 * has hosts (storage websites share files instead). Such a website's hostnames route to it.
 */
export function isServing(record: WebsiteRecord): boolean {
  return record.deletedAt === null && record.suspendedAt === null && (record.offline ?? null) === null && record.kind !== 'storage'
}

/** Serving, with a published version: its live host answers. */
export function isLive(record: WebsiteRecord): boolean {
  return isServing(record) && record.publishedVersion !== null
}

/** A storage website that shares its files now: not in the trash, taken down or offline. */
export function isSharing(record: WebsiteRecord): boolean {
  return record.deletedAt === null && record.suspendedAt === null && (record.offline ?? null) === null && record.kind === 'storage'
}
