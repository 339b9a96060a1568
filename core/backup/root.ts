// A backup root: one directory per backup (its database copy and manifest) and one content-addressed store of blob files they share.
import { existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { livePidIn } from '../pid-file.js'
import { BackupError } from './errors.js'
import { DATABASE_FILE, MANIFEST_FILE, readManifest, type BackupManifest } from './manifest.js'

/** The root's content-addressed store of blob files, shared by its backups (`blobs/ab/cdef…`). */
export const BLOBS_DIR = 'blobs'
const LOCK_FILE = '.backup.pid'
/** Backup directories are named by their UTC start time (`20261127T010203Z`), so names sort by age. */
const BACKUP_NAME = /^\d{8}T\d{6}Z(-\d+)?$/

/** Where a blob of the root's store lives. */
export function blobPath(root: string, sha256: string): string {
  return join(root, BLOBS_DIR, sha256.slice(0, 2), sha256.slice(2))
}

/** A new backup's directory name: its start time, with a counter if one of that second exists. */
export function newBackupId(root: string, at: Date): string {
  const base = at
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z')
  let id = base
  for (let n = 2; existsSync(join(root, id)); n++) id = `${base}-${n}`
  return id
}

/** The backups under a root, oldest first: complete ones have a manifest. */
export function listBackups(root: string): { id: string; dir: string; complete: boolean }[] {
  if (!existsSync(root)) return []
  return readdirSync(root)
    .filter((name) => BACKUP_NAME.test(name) && statSync(join(root, name)).isDirectory())
    .sort()
    .map((id) => ({ id, dir: join(root, id), complete: existsSync(join(root, id, MANIFEST_FILE)) }))
}

/**
 * The backup a path names: a backup directory itself (it has a manifest or a database copy), or a root,
 * whose newest complete backup it means. Refuses a path that is neither, naming what it found.
 */
export function resolveBackup(path: string): string {
  if (!existsSync(path)) throw new BackupError(`${path} does not exist`)
  if (!statSync(path).isDirectory())
    throw new BackupError(
      `${path} is a file; give a backup directory (ROOT/<id>, the one holding ${MANIFEST_FILE} and ${DATABASE_FILE}) or a backup root (the directory \`plinth backup ROOT\` writes to)`,
    )
  if (existsSync(join(path, MANIFEST_FILE)) || existsSync(join(path, DATABASE_FILE))) return path
  const backups = listBackups(path)
  const complete = backups.filter((b) => b.complete)
  if (complete.length > 0) return complete.at(-1)!.dir
  throw new BackupError(
    backups.length > 0
      ? `${path} holds no complete backup: ${backups.length} incomplete (no ${MANIFEST_FILE}; each was stopped before it finished). Take a new backup`
      : `${path} is not a Plinth backup or backup root: it has no ${MANIFEST_FILE} and no backups (ROOT/<id>/${MANIFEST_FILE})`,
  )
}

/** The root a backup directory belongs to (its parent, which holds the blob store). */
export function rootOf(backupDir: string): string {
  return join(backupDir, '..')
}

/**
 * One backup at a time into a root (two would prune each other's blobs): a pid file, taken over from
 * a process that is gone. Returns its release.
 */
export function lockRoot(root: string): () => void {
  mkdirSync(join(root, BLOBS_DIR), { recursive: true, mode: 0o700 })
  const file = join(root, LOCK_FILE)
  const holder = livePidIn(file)
  if (holder !== null) throw new BackupError(`another backup into ${root} is running (pid ${holder}); wait for it to finish`)
  writeFileSync(file, String(process.pid), { mode: 0o600 })
  return () => rmSync(file, { force: true })
}

/** In a root with an archive, a blob file younger than this is never pruned: a running server's archive may have copied it for an entry it has not appended yet. */
const BLOB_GRACE_MS = 10 * 60_000

/**
 * Keeps the newest `keep` complete backups of a root: older complete ones and every incomplete one
 * (a backup that was stopped; the root's lock says none is running) go, then every blob no remaining
 * manifest names, nor the root's archive if it has one (`archived`: what its entries list; then only
 * files older than BLOB_GRACE_MS).
 * Returns what went.
 */
export function prune(
  root: string,
  keep: number,
  archived: ReadonlySet<string> | null = null,
): { backups: string[]; blobs: number; bytes: number } {
  const backups = listBackups(root)
  const complete = backups.filter((b) => b.complete)
  const gone = [...complete.slice(0, Math.max(0, complete.length - keep)), ...backups.filter((b) => !b.complete)]
  for (const backup of gone) rmSync(backup.dir, { recursive: true, force: true })
  const named = new Set<string>()
  for (const backup of listBackups(root)) {
    const manifest: BackupManifest = readManifest(backup.dir)
    for (const blob of manifest.blobs) named.add(blob.sha256)
  }
  let blobs = 0
  let bytes = 0
  const store = join(root, BLOBS_DIR)
  for (const dir of existsSync(store) ? readdirSync(store) : []) {
    if (!/^[0-9a-f]{2}$/.test(dir)) continue
    for (const rest of readdirSync(join(store, dir))) {
      if (named.has(dir + rest) || archived?.has(dir + rest)) continue
      const path = join(store, dir, rest)
      const stat = statSync(path)
      if (archived !== null && Date.now() - stat.mtimeMs < BLOB_GRACE_MS) continue
      bytes += stat.size
      rmSync(path, { force: true })
      blobs++
    }
  }
  return { backups: gone.map((b) => b.id), blobs, bytes }
}
