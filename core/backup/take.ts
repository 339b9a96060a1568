// Taking a backup: the database copied at one read transaction, the blob files it names, the manifest last.
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { copyFile, rename } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { crashPoint } from '../crash.js'
import { namedFiles, openReadOnly, referencesOf, tableCounts } from './database.js'
import { BackupError } from './errors.js'
import { sha256FileAside, syncDirectory, syncFile } from './files.js'
import { DATABASE_FILE, manifestHeader, signManifest, writeManifest, type BackupManifest } from './manifest.js'
import { blobPath, lockRoot, newBackupId, prune } from './root.js'
import { ARCHIVE_DIR } from './archive-format.js'
import { pruneArchive } from './point-in-time.js'

/**
 * Blob files copied at once from a stopped data directory (enough to keep the disk busy). From a running
 * server, one at a time: four lanes made the server's own commits (each an fsync) wait behind the
 * backup's writeback, API p99 2.8-4.5 times its p99 without a backup; one lane, 1.4 times
 * (`npm run bench:backup`, 2026-11-27), for a backup about a third slower.
 */
const BLOB_COPIES_AT_ONCE = 4

/** Runs `step` over `items`, at most `width` at a time. */
async function inTurns<T>(items: readonly T[], width: number, step: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0
  const lane = async () => {
    while (next < items.length) await step(items[next++]!)
  }
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, lane))
}

/** Where a backup reads from: a running server (through its control socket) or a stopped data directory. */
export interface BackupSource {
  kind: BackupManifest['source']
  /** Where the data directory keeps the blob file of `sha256`. */
  blobPath(sha256: string): string
  /**
   * Copies the database into the empty directory `dbDir` at one read transaction (LMDB's compacting
   * copy). From then until `finish`, the source removes no blob file, so every file the copy names can
   * still be copied.
   */
  copyDatabase(dbDir: string): Promise<void>
  /**
   * Throws when the source can no longer vouch that every file the copy names was kept (a running
   * server stopped during the backup): the manifest is then never written.
   */
  confirm(): Promise<void>
  /** The backup is over (the manifest written, or it failed): the source may remove files again. */
  finish(outcome: { ok: true; manifest: BackupManifest } | { ok: false; error: string }): Promise<void>
}

export interface TakenBackup {
  dir: string
  manifest: BackupManifest
  /** What `--keep` removed. */
  pruned: ReturnType<typeof prune> | null
}

/**
 * A consistent backup into `root/<id>/`: the database as of one transaction (compacted) and, in the
 * root's shared content-addressed store, every blob file it names that the root does not hold yet
 * (a second backup copies only what is new). The manifest is written last: a backup stopped at any
 * moment has none and is never restored; `--keep` prunes it later with the older ones.
 */
export async function takeBackup(
  root: string,
  source: BackupSource,
  options: {
    /** The installation's secret: it signs the manifest (and is never in the backup). */
    secret: Buffer
    keep?: number
  },
): Promise<TakenBackup> {
  mkdirSync(root, { recursive: true, mode: 0o700 })
  const unlock = lockRoot(root)
  const started = Date.now()
  const id = newBackupId(root, new Date(started))
  const dir = join(root, id)
  let outcome: Parameters<BackupSource['finish']>[0] = { ok: false, error: 'stopped' }
  try {
    mkdirSync(join(dir, 'db'), { recursive: true, mode: 0o700 })
    await source.copyDatabase(join(dir, 'db'))
    // What the copy names, read from the copy itself: exactly its transaction's state.
    const copy = openReadOnly(join(dir, 'db'))
    let named: string[]
    let tables: Record<string, number>
    let txnId: number
    try {
      named = namedFiles(copy)
      tables = tableCounts(copy)
      txnId = (copy.getStats() as { lastTxnId: number }).lastTxnId
    } finally {
      await copy.close()
    }
    // Reading it made LMDB's lock file: not part of the backup.
    rmSync(join(dir, 'db', 'lock.mdb'), { force: true })
    // A backup goes off the machine: it never holds the installation's secret (which signs tickets, tokens and cookies).
    if ((tables['secrets'] ?? 0) > 0)
      throw new BackupError(
        "the database still holds the installation's secret (it was made before PLINTH_SECRET_FILE): start the server on this data directory once, which moves the secret into its own file, then take the backup (a backup never holds the secret)",
      )
    // The database's SHA-256 is worked out while the blob files copy (CPU here, the disk in libuv's threads).
    const hashing = sha256FileAside(join(dir, DATABASE_FILE))
    hashing.catch(() => undefined)
    const blobs: BackupManifest['blobs'] = []
    const copying: { sha256: string; from: string; target: string; size: number }[] = []
    for (const sha256 of named) {
      const from = source.blobPath(sha256)
      const size = existsSync(from) ? statSync(from).size : null
      const target = blobPath(root, sha256)
      // The root's copy is its content's name: kept, unless a crash left it shorter than the source.
      if (existsSync(target) && (size === null || statSync(target).size === size)) {
        blobs.push({ sha256, size: statSync(target).size })
        continue
      }
      if (size === null) {
        const copy = openReadOnly(join(dir, 'db'))
        const named = referencesOf(copy, sha256)
        await copy.close()
        throw new BackupError(
          `the data directory lacks the blob file ${sha256} its records name (${named}; ${from}); the data directory is damaged, so no backup claims to be complete. Verify the disk, then take a new backup`,
        )
      }
      copying.push({ sha256, from, target, size })
    }
    // New blobs: copied to temporary names a few at a time, each fsynced, and only then renamed to their
    // names (a name in the root always means the whole file is on disk), then their directories fsynced.
    const temporary = (target: string) => `${target}.tmp-${process.pid}`
    await inTurns(copying, source.kind === 'running server' ? 1 : BLOB_COPIES_AT_ONCE, async ({ from, target }) => {
      mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
      await copyFile(from, temporary(target))
      crashPoint('backup:blob-copied')
      // Each lane waits for its file's writeback while the others copy on.
      await syncFile(temporary(target))
    })
    for (const { target } of copying) await rename(temporary(target), target)
    for (const blobDir of new Set(copying.map((c) => dirname(c.target)))) await syncDirectory(blobDir)
    for (const { sha256, size } of copying) blobs.push({ sha256, size })
    blobs.sort((a, b) => (a.sha256 < b.sha256 ? -1 : 1))
    const database = await hashing
    const copiedBytes = database.size + copying.reduce((sum, c) => sum + c.size, 0)
    const newBlobs = copying.length
    const finished = Date.now()
    const manifest: BackupManifest = signManifest(
      {
        ...manifestHeader(),
        id,
        source: source.kind,
        startedAt: new Date(started).toISOString(),
        finishedAt: new Date(finished).toISOString(),
        durationMs: finished - started,
        txnId,
        database: { path: DATABASE_FILE, size: database.size, sha256: database.sha256 },
        blobs,
        tables,
        totals: {
          files: 1 + blobs.length,
          bytes: database.size + blobs.reduce((sum, b) => sum + b.size, 0),
          copiedBytes,
          newBlobs,
        },
      },
      options.secret,
    )
    await source.confirm()
    crashPoint('backup:before-manifest')
    await writeManifest(dir, manifest)
    outcome = { ok: true, manifest }
    // A new base: the archive's segments before the second-newest one go (a restore to any later point has what it needs).
    const archive = existsSync(join(root, ARCHIVE_DIR)) ? pruneArchive(root, options.secret) : null
    const pruned = options.keep === undefined ? null : prune(root, options.keep, archive?.named ?? null)
    return { dir, manifest, pruned }
  } catch (error) {
    outcome = { ok: false, error: (error as Error).message }
    // A failed backup leaves nothing that looks like one.
    rmSync(dir, { recursive: true, force: true })
    throw error
  } finally {
    await source.finish(outcome)
    unlock()
  }
}
