import { manifestDigest } from '../../core/content.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { ManifestEntry, VersionRecord } from '../../core/schemas/records.js'

export type Manifest = Record<string, ManifestEntry>

/** A new version record over `files`, numbered after `previous`. */
export function makeVersion(
  websiteId: string,
  number: number,
  files: Manifest,
  source: VersionRecord['source'],
  message: string | null,
  actor: AuditActorValue | null,
  now: number,
): VersionRecord {
  let totalBytes = 0
  for (const path in files) totalBytes += files[path].size
  return {
    v: 1,
    websiteId,
    version: number,
    files,
    digest: manifestDigest(files),
    fileCount: Object.keys(files).length,
    totalBytes,
    source,
    message,
    createdAt: now,
    createdBy: actor,
  }
}

/** Version 1 of every website: empty. */
export function firstVersion(websiteId: string, actor: AuditActorValue | null, now: number): VersionRecord {
  return makeVersion(websiteId, 1, {}, 'create', null, actor, now)
}

export type Change = 'added' | 'removed' | 'modified'

/** Files that differ between two manifests, by path. */
export function diffManifests(
  from: Manifest,
  to: Manifest,
): { path: string; change: Change; fromSize: number | null; toSize: number | null }[] {
  const out: { path: string; change: Change; fromSize: number | null; toSize: number | null }[] = []
  for (const path of new Set([...Object.keys(from), ...Object.keys(to)])) {
    const a = from[path]
    const b = to[path]
    const sizes = { fromSize: a?.size ?? null, toSize: b?.size ?? null }
    if (a === undefined) out.push({ path, change: 'added', ...sizes })
    else if (b === undefined) out.push({ path, change: 'removed', ...sizes })
    else if (a.hash !== b.hash || a.contentType !== b.contentType) out.push({ path, change: 'modified', ...sizes })
  }
  return out.sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0))
}
