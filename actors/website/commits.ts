import type { Variants } from '../../core/content.js'
import type { AuditEventType } from '../../core/schemas/audit.js'
import type { BuildRecord, VersionRecord, WebsiteRecord } from '../../core/schemas/records.js'
import type { VersionChange } from '../../core/schemas/source.js'
import { ApiError } from '../../core/errors.js'
import { STATIC_FILE_MAX_BYTES, STATIC_FILES_MAX } from '../../core/limits.js'
import type { Manifest } from './versions.js'

/*
 * What flows into a website's commands and out of them: the parts of the actor (static files,
 * framework files, publishing) share these and import nothing of each other.
 */

/** A file to commit: path already normalised, content already hashed and compressed. */
export interface Upload {
  path: string
  bytes: Buffer
  hash: string
  contentType: string
  /** False when the store already held this content (its variants were not computed again). */
  fresh: boolean
  /** Precompressed variants to store with the content; null: none (source that is never served). */
  variants: Variants | null
  /** The content is in the blob directory, not LMDB (a large file of a ticket deploy): `bytes` is empty, `size` says how many. */
  onDisk?: boolean
  size?: number
}

export interface DeployInput {
  uploads: Upload[]
  deletes: string[]
  replace: boolean
  expectedHeadVersion?: number
  message?: string
}

/** What a source command did to the head: the new head version, or the same one unchanged. */
export type CommitResult = VersionChange

/** What a source change commits: the new manifest, and content to store. */
export type SourcePlan = { files: Manifest; uploads?: Upload[]; message?: string }

/** Where a static site's files over 1 MiB go (a ticket deploy takes them up to the plan's largest file). */
export const LARGE_STATIC_FILES_HINT =
  'a static site takes larger files through a ticket deploy: POST /v1/websites/{websiteId}/deploy/tickets (MCP begin_deploy), then the folder to POST /public/v1/deploys'

/** The 413 for a file over 1 MiB (static files and typed source alike); `size` null: over it, not yet counted; `hint`: what to do instead. */
export function fileTooLarge(name: string, size: number | null, path?: string, hint?: string): ApiError {
  return new ApiError(
    'payload_too_large',
    `${name} is ${size ?? `over ${STATIC_FILE_MAX_BYTES}`} bytes; a file may be at most ${STATIC_FILE_MAX_BYTES} bytes (1 MiB)${hint === undefined ? '' : `; ${hint}`}`,
    {
      ...(path === undefined ? {} : { path }),
      limit: 'file size',
      limitBytes: STATIC_FILE_MAX_BYTES,
    },
  )
}

/** The 413 for a change that would leave a website with more than 2,000 files. */
export function tooManyFiles(what: string): ApiError {
  return new ApiError('payload_too_large', `A website holds at most ${STATIC_FILES_MAX} files; ${what}`, {
    limit: 'files per website',
    limitFiles: STATIC_FILES_MAX,
  })
}

/** What one command decided; applied by the actor in one transaction, then in memory. */
export interface Outcome {
  record: WebsiteRecord
  head?: VersionRecord
  published?: VersionRecord | null
  uploads?: Upload[]
  /** A build record to store (a rollback's new head inherits the target's build). */
  build?: BuildRecord
  audit?: { eventType: AuditEventType; metadata?: Record<string, unknown> }
}
