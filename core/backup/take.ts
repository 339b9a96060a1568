// Taking a backup: the database copied at one read transaction, the blob files it names, the manifest last.
import { existsSync, mkdirSync, rmSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { crashPoint } from '../crash.js'
import { openReadOnly, namedFiles, tableCounts } from './database.js'
import { BackupError } from './errors.js'
import { copyFileDurably, sha256File, syncDirectory } from './files.js'
import { DATABASE_FILE, manifestHeader, writeManifest, type BackupManifest } from './manifest.js'
import { blobPath, lockRoot, newBackupId, prune } from './root.js'

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
export async function takeBackup(root: string, source: BackupSource, options: { keep?: number } = {}): Promise<TakenBackup> {
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
    const database = await sha256File(join(dir, DATABASE_FILE))
    let copiedBytes = database.size
    let newBlobs = 0
    const blobs: BackupManifest['blobs'] = []
    const touched = new Set<string>()
    for (const sha256 of named) {
      const target = blobPath(root, sha256)
      if (existsSync(target)) {
        blobs.push({ sha256, size: statSync(target).size })
        continue
      }
      const from = source.blobPath(sha256)
      if (!existsSync(from))
        throw new BackupError(
          `the data directory lacks the blob file ${sha256} its records name (${from}); the data directory is damaged, so no backup claims to be complete. Verify the disk, then take a new backup`,
        )
      mkdirSync(dirname(target), { recursive: true, mode: 0o700 })
      await copyFileDurably(from, target)
      touched.add(dirname(target))
      const size = statSync(target).size
      blobs.push({ sha256, size })
      copiedBytes += size
      newBlobs++
      crashPoint('backup:blob-copied')
    }
    for (const blobDir of touched) await syncDirectory(blobDir)
    const finished = Date.now()
    const manifest: BackupManifest = {
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
    }
    await source.confirm()
    crashPoint('backup:before-manifest')
    await writeManifest(dir, manifest)
    outcome = { ok: true, manifest }
    const pruned = options.keep === undefined ? null : prune(root, options.keep)
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
