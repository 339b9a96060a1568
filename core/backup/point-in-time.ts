// A backup root with an archive: the bases' positions, a restore to a point in time, the archive checked and pruned.
import { existsSync, rmSync } from 'node:fs'
import { copyFile } from 'node:fs/promises'
import { join } from 'node:path'
import { lockDataDir } from '../store/lock.js'
import { ARCHIVE_POSITIONS, Store } from '../store/store.js'
import { unpackEntry, type LogPosition } from '../store/write-set.js'
import { ARCHIVE_DIR, archiveKey, listSegments, readArchive, readSegment, type ArchivedEntry } from './archive-format.js'
import { openReadOnly, tableNames } from './database.js'
import { BackupError } from './errors.js'
import { readManifest } from './manifest.js'
import { checkSigned, restoreBackup } from './restore.js'
import { blobPath, listBackups } from './root.js'

/** Where a cluster node's store keeps its position in the log. */
const CLUSTER_POSITIONS = 'replication'
/** Entries applied a transaction while replaying. */
const REPLAY_BATCH = 500

/** A complete backup of the root and the data directory's last archived entry it holds (null: taken without the archive). */
export function basesOf(root: string): { dir: string; id: string; position: LogPosition | null; startedAt: string }[] {
  return listBackups(root)
    .filter((backup) => backup.complete)
    .map((backup) => {
      const env = openReadOnly(join(backup.dir, 'db'))
      try {
        // The embedded server's archived position, or a cluster node's in the log (a backup taken without either has neither table).
        const names = tableNames(env)
        const read = (table: string) =>
          names.includes(table) ? (env.openDB<LogPosition, string>({ name: table, encoding: 'msgpack' }).get('position') ?? null) : null
        const position = read(ARCHIVE_POSITIONS) ?? read(CLUSTER_POSITIONS)
        return { dir: backup.dir, id: backup.id, position, startedAt: readManifest(backup.dir).startedAt }
      } finally {
        void env.close()
        rmSync(join(backup.dir, 'db', 'lock.mdb'), { force: true })
      }
    })
}

/** Where a base's position is on the archive's chain: the index of the entry it is (-1: the one before the first), or null (off it). */
function placeOnChain(position: LogPosition, entries: readonly ArchivedEntry[]): number | null {
  if (entries[0]?.prev === position.digest) return -1
  const index = entries.findIndex((entry) => entry.position.digest === position.digest)
  return index === -1 ? null : index
}

export interface PointRestored {
  base: string
  from: LogPosition
  to: ArchivedEntry
  replayed: number
  ms: number
}

/**
 * Restores the root's newest base (a signed complete backup holding an archived position) before the
 * point asked for, then replays the archive's entries after its position up to that point: the last
 * entry committed at or before `at` (ms), or the entry `position`. Refused (BackupError, nothing
 * changed) when the archive does not check out or holds no such point, or no base precedes it.
 */
export async function restoreToPoint(
  root: string,
  dataDir: string,
  options: { secret: Buffer; at?: number; position?: number; force?: boolean },
): Promise<PointRestored> {
  const started = Date.now()
  const archive = readArchive(root, options.secret)
  if (archive.problems.length > 0)
    throw new BackupError(
      `the archive in ${join(root, ARCHIVE_DIR)} does not check out (${archive.problems.slice(0, 3).join('; ')}): nothing was restored. plinth backup verify ${root} lists every problem`,
    )
  const { entries } = archive
  if (entries.length === 0)
    throw new BackupError(`${join(root, ARCHIVE_DIR)} holds no archived entry: restore a backup itself (plinth restore ${root})`)
  const span = `entries ${entries[0]!.position.seq} to ${entries.at(-1)!.position.seq}, committed ${new Date(entries[0]!.at).toISOString()} to ${new Date(entries.at(-1)!.at).toISOString()}`
  const targetIndex =
    options.position !== undefined
      ? entries.findIndex((entry) => entry.position.seq === options.position)
      : entries.findLastIndex((entry) => entry.at <= options.at!)
  if (targetIndex === -1)
    throw new BackupError(
      options.position !== undefined
        ? `the archive holds no entry ${options.position} (it holds ${span})`
        : `the archive holds nothing committed at or before ${new Date(options.at!).toISOString()} (it holds ${span})`,
    )
  const target = entries[targetIndex]!
  const placed = basesOf(root).map((b) => ({ ...b, index: b.position === null ? null : placeOnChain(b.position, entries) }))
  const base = placed.filter((b) => b.index !== null && b.index <= targetIndex).at(-1)
  if (base === undefined)
    throw new BackupError(
      `no complete backup in ${root} holds a position of the archive at or before entry ${target.position.seq}: a restore to that point needs one taken before it (the server takes one when its archive begins; plinth backup ${root} takes another)`,
    )
  checkSigned(base.dir, readManifest(base.dir), options.secret, false)
  await restoreBackup(base.dir, dataDir, { secret: options.secret, force: options.force })
  const unlock = lockDataDir(dataDir)
  let replayed = 0
  try {
    const store = await Store.open(dataDir, { archive: 'replay' })
    try {
      const replication = store.replication!
      const fetch = (hash: string, into: string) => copyFile(blobPath(root, hash), into)
      const after = entries.slice(base.index! + 1, targetIndex + 1)
      for (let i = 0; i < after.length; i += REPLAY_BATCH) {
        const batch = after.slice(i, i + REPLAY_BATCH).map((archived) => {
          const entry = unpackEntry(archived.bytes)
          const problem = replication.checkEntry(entry)
          if (problem !== null) throw new BackupError(`archived entry ${archived.position.seq} cannot be applied: ${problem}`)
          return { entry, position: archived.position }
        })
        await replication.applyEntries(batch, fetch)
        replayed += batch.length
      }
      // A cluster node's base: the restored directory is an installation of its own now (a single server, or
      // the seed of a new cluster: plinth cluster init), not a node at a place in the log.
      await store.forgetClusterPosition()
    } finally {
      await store.close()
    }
  } finally {
    unlock()
  }
  return { base: base.dir, from: base.position!, to: target, replayed, ms: Date.now() - started }
}

/**
 * The archive checked as a restore reads it: every chunk authentic, the numbering and the chain
 * without a gap, and every blob file its entries list present in the root. A summary and the problems.
 */
export function verifyArchive(root: string, secret: Buffer): { segments: number; entries: number; span: string; problems: string[] } {
  const archive = readArchive(root, secret)
  const problems = [...archive.problems]
  for (const entry of archive.entries)
    for (const hash of unpackEntry(entry.bytes).blobs)
      if (!existsSync(blobPath(root, hash))) problems.push(`blob ${hash}, listed by archived entry ${entry.position.seq}, is missing`)
  const { entries } = archive
  const span =
    entries.length === 0
      ? 'no entries'
      : `entries ${entries[0]!.position.seq} to ${entries.at(-1)!.position.seq}, committed ${new Date(entries[0]!.at).toISOString()} to ${new Date(entries.at(-1)!.at).toISOString()}`
  return { segments: archive.segments, entries: entries.length, span, problems }
}

/**
 * After a backup into a root with an archive: removes the segments wholly before the second-newest
 * base's position (a restore to any point after it still has a base and every entry; the newest
 * segment, being appended to, always stays). Returns the blob files the remaining entries list (kept
 * by the blob prune) and how many segments went.
 */
export function pruneArchive(root: string, secret: Buffer): { removed: number; named: Set<string> } {
  const named = new Set<string>()
  const segments = listSegments(root)
  if (segments.length === 0) return { removed: 0, named }
  const positioned = basesOf(root).filter((b) => b.position !== null)
  const keepAfter = positioned.length >= 2 ? positioned.at(-2)!.position!.seq : 0
  const key = archiveKey(secret)
  let removed = 0
  for (const [i, segment] of segments.entries()) {
    const read = readSegment(key, segment.number, segment.path)
    const last = read.entries.at(-1)?.position.seq ?? Infinity
    if (i < segments.length - 1 && read.problem === null && last <= keepAfter) {
      rmSync(segment.path)
      removed++
      continue
    }
    for (const entry of read.entries) for (const hash of unpackEntry(entry.bytes).blobs) named.add(hash)
  }
  return { removed, named }
}
