import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { BuildRecord, VersionRecord, WebsiteRecord } from '../../core/schemas/records.js'
import type { Outcome } from './commits.js'
import { checkPublishable, emptyError, missingVersion, refuseStorage } from './rules.js'
import { makeVersion } from './versions.js'

/*
 * Publishing decisions: pure planners from the committed state to an outcome the actor commits in
 * one transaction. They throw the error that says what to do when the command cannot apply.
 */

export interface PublishingState {
  record: WebsiteRecord
  head: VersionRecord
  published: VersionRecord | null
  version(number: number): VersionRecord | undefined
  /** The version's ready build (null for static websites); throws 409 while building, 400 when it failed. */
  readyBuild(version: number): BuildRecord | null
}

/** Publishes the head: nothing changes when it is already live. */
export function planPublish(s: PublishingState, now: number): Outcome {
  const current = s.record
  checkPublishable(current, 'publish')
  const head = s.head
  if (head.fileCount === 0) throw emptyError(current, head.version)
  s.readyBuild(head.version)
  if (s.published?.version === head.version) return { record: current }
  return {
    record: { ...current, publishedVersion: head.version, updatedAt: now },
    published: head,
    audit: { eventType: 'website.published', metadata: { version: head.version } },
  }
}

/** Takes the site offline; head and history stay as they are. */
export function planUnpublish(current: WebsiteRecord, now: number): Outcome {
  refuseStorage(current, 'unpublish')
  if (current.publishedVersion === null) return { record: current }
  return {
    record: { ...current, publishedVersion: null, updatedAt: now },
    published: null,
    audit: { eventType: 'website.unpublished', metadata: { version: current.publishedVersion } },
  }
}

/** Version `number` as a new head (unless the head already has its content), published. */
export function planRollback(s: PublishingState, number: number, actor: AuditActorValue, now: number): Outcome {
  const current = s.record
  checkPublishable(current, 'rollback')
  const target = s.version(number)
  if (target === undefined) throw missingVersion(number, s.head.version)
  if (target.fileCount === 0) throw emptyError(current, target.version)
  const targetBuild = s.readyBuild(number)
  const head =
    target.digest === s.head.digest
      ? s.head
      : makeVersion(current.id, s.head.version + 1, target.files, 'rollback', `Rollback to version ${number}`, actor, now)
  const fresh = head !== s.head
  return {
    record: { ...current, headVersion: head.version, publishedVersion: head.version, updatedAt: now },
    ...(fresh ? { head } : {}),
    // The new head has the target's source, so it has the target's build too.
    ...(fresh && targetBuild !== null ? { build: { ...targetBuild, version: head.version } } : {}),
    published: head,
    audit: { eventType: 'website.rolled_back', metadata: { to: number, version: head.version } },
  }
}
