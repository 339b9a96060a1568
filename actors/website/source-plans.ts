// What source commands commit, planned from the head: static deploys, file deletions, head restores, and the new head version.
import { ApiError } from '../../core/errors.js'
import { STATIC_FILES_MAX } from '../../core/limits.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { VersionRecord, WebsiteRecord } from '../../core/schemas/records.js'
import { tooManyFiles, type CommitResult, type DeployInput, type Outcome, type SourcePlan } from './commits.js'
import { assertNotHeld, missingPath, missingVersion, refuseStorage, requireStatic } from './rules.js'
import { makeVersion, type Manifest } from './versions.js'

/** Static deploy: merge (or replace) files into the head's; every path to delete must exist. */
export function planDeploy(record: WebsiteRecord, head: VersionRecord, input: DeployInput): SourcePlan {
  requireStatic(record, 'deploy')
  const files: Manifest = input.replace ? {} : { ...head.files }
  for (const path of input.deletes) {
    if (files[path] === undefined) throw missingPath(path, head.version, 'body.deletes')
    delete files[path]
  }
  for (const upload of input.uploads)
    files[upload.path] = { hash: upload.hash, size: upload.size ?? upload.bytes.length, contentType: upload.contentType }
  return { files, uploads: input.uploads }
}

/** The head without `paths` (static sites); every path must exist. */
export function planDeleteFiles(record: WebsiteRecord, head: VersionRecord, paths: string[]): SourcePlan {
  requireStatic(record, 'deleteFiles')
  const files: Manifest = { ...head.files }
  for (const path of paths) {
    if (files[path] === undefined) throw missingPath(path, head.version, 'body.paths')
    delete files[path]
  }
  return { files }
}

/** The files of the published version or version `to`, as a new head. */
export function planRestoreHead(
  record: WebsiteRecord,
  to: 'published' | number,
  published: VersionRecord | null,
  version: (number: number) => VersionRecord | undefined,
  headVersion: number,
): SourcePlan {
  refuseStorage(record, 'head/restore')
  const source = to === 'published' ? published : version(to)
  if (source === null)
    throw new ApiError('validation', 'Nothing is published, so there is no published state to restore; pass a version number as to', {
      field: 'body.to',
    })
  if (source === undefined) throw missingVersion(to as number, headVersion)
  return { files: source.files, message: `Restore of version ${source.version}` }
}

/** A source change's outcome: a new head version unless the content equals the head's (then nothing changes). */
export function decideSource(
  current: WebsiteRecord,
  now: number,
  head: VersionRecord,
  plan: SourcePlan,
  source: VersionRecord['source'],
  message: string | null,
  actor: AuditActorValue,
): { outcome: Outcome; result: CommitResult } {
  assertNotHeld(current, now)
  const count = Object.keys(plan.files).length
  if (count > STATIC_FILES_MAX) throw tooManyFiles(`this change would leave ${count}`)
  const next = makeVersion(current.id, head.version + 1, plan.files, source, plan.message ?? message, actor, now)
  if (next.digest === head.digest) return { outcome: { record: current }, result: { version: head.version, changed: false } }
  return {
    outcome: {
      record: { ...current, headVersion: next.version, updatedAt: now },
      head: next,
      uploads: plan.uploads,
      audit: {
        eventType: 'website.version_created',
        metadata: { version: next.version, source, message: next.message, fileCount: next.fileCount },
      },
    },
    result: { version: next.version, changed: true },
  }
}
