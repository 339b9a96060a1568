// Restoring a backup into a data directory: staged beside the old contents, every byte checked, then moved into place.
import { createHash } from 'node:crypto'
import { createReadStream, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { dataDirHolder, lockDataDir } from '../store/lock.js'
import { BackupError } from './errors.js'
import { syncDirectory } from './files.js'
import { namedFiles, openReadOnly } from './database.js'
import { SECRET_FILE_NAME } from '../installation-secret.js'
import { DATABASE_FILE, manifestSignature, readManifest, type BackupManifest } from './manifest.js'
import { blobPath, resolveBackup, rootOf } from './root.js'

/** Copies a file, hashing what it reads, fsynced; its SHA-256 and size. */
async function copyHashed(from: string, to: string): Promise<{ sha256: string; size: number }> {
  const hash = createHash('sha256')
  let size = 0
  const out = await open(to, 'w', 0o600)
  try {
    for await (const chunk of createReadStream(from, { highWaterMark: 1 << 20 })) {
      hash.update(chunk as Buffer)
      size += (chunk as Buffer).length
      await out.write(chunk as Buffer)
    }
    await out.sync()
  } finally {
    await out.close()
  }
  return { sha256: hash.digest('hex'), size }
}

/** What a restore leaves in a data directory: the server's own files, and the installation's secret. */
const KEPT = new Set(['plinth.pid', 'control.sock', SECRET_FILE_NAME])

/**
 * Refuses a backup whose manifest the installation's secret did not sign: changed since it was taken
 * (a database and a manifest hash changed together), another installation's, or taken before backups
 * were signed (unless the operator says to trust it).
 */
export function checkSigned(dir: string, manifest: BackupManifest, secret: Buffer, trustUnsigned: boolean): void {
  // The signature covers the backup's name: an old backup copied under a newer name is not the newest.
  if (manifest.id !== basename(dir))
    throw new BackupError(
      `${dir}: its manifest names it ${manifest.id}: the backup was copied or renamed (an older backup put where the newest is looked for). Restore it by its own name, or take a new backup`,
    )
  const signed = manifestSignature(manifest, secret)
  if (signed === 'forged')
    throw new BackupError(
      `${dir}: the manifest's signature does not match the installation's secret: the backup was changed after it was taken, or it is another installation's (then give that installation's secret file: PLINTH_SECRET_FILE, or --secret FILE). Nothing was restored`,
    )
  if (signed === 'unsigned' && !trustUnsigned)
    throw new BackupError(
      `${dir} was taken by Plinth ${manifest.plinth}, before backups were signed: nothing proves it was not changed since. Take a new backup, or restore this one with --trust-unsigned if you are sure of where it has been`,
    )
}

/** What a data directory holds, in words (for the refusal of a non-empty one). */
function describeContents(dataDir: string, entries: string[]): string {
  return entries
    .map((name) => {
      const path = join(dataDir, name)
      if (name === 'db' && existsSync(join(path, 'data.mdb')))
        return `db/ (a database, ${(statSync(join(path, 'data.mdb')).size / (1 << 20)).toFixed(1)} MiB)`
      if (name === 'files' && statSync(path).isDirectory()) {
        const blobs = readdirSync(path).filter((d) => /^[0-9a-f]{2}$/.test(d))
        const count = blobs.reduce((sum, d) => sum + readdirSync(join(path, d)).length, 0)
        return `files/ (${count} blob files)`
      }
      return statSync(path).isDirectory() ? `${name}/` : name
    })
    .join(', ')
}

export interface Restored {
  dir: string
  manifest: BackupManifest
  /** Milliseconds the restore took. */
  ms: number
}

/**
 * Restores a backup (a backup directory, or a root's newest complete one) into `dataDir`, which must
 * be empty or absent (`force`: its contents are replaced, once every byte of the backup checked out).
 * Refused (BackupError, nothing changed): an incomplete backup or one of a newer format, a data
 * directory a running server holds, a non-empty one without `force` (naming what is in it), and a
 * backup whose files do not match their manifest (naming the file). Everything is copied into a
 * staging directory inside `dataDir` and checked there, then renamed into place.
 */
export async function restoreBackup(
  path: string,
  dataDir: string,
  options: {
    /** The installation's secret: the manifest must carry its signature. */
    secret: Buffer
    /** Restore a backup taken before backups were signed (format 1), which nothing proves unchanged. */
    trustUnsigned?: boolean
    force?: boolean
    /** The caller holds the data directory (a cluster's node restoring itself at start). */
    locked?: boolean
  },
): Promise<Restored> {
  const started = Date.now()
  const dir = resolveBackup(path)
  const manifest = readManifest(dir)
  checkSigned(dir, manifest, options.secret, options.trustUnsigned === true)
  const holder = existsSync(dataDir) ? dataDirHolder(dataDir) : null
  if (holder !== null) throw new BackupError(`a Plinth server (pid ${holder}) is running on ${dataDir}; stop it before restoring into it`)
  if (existsSync(dataDir) && !statSync(dataDir).isDirectory())
    throw new BackupError(`${dataDir} (PLINTH_DATA_DIR) is a file; a restore needs a data directory there (empty, or absent: it is made)`)
  // The installation's secret file stays: the backup was just checked against it.
  const present = existsSync(dataDir) ? readdirSync(dataDir).filter((name) => !KEPT.has(name)) : []
  if (present.length > 0 && options.force !== true)
    throw new BackupError(
      `${dataDir} is not empty: it holds ${describeContents(dataDir, present)}. Restore into an empty data directory, or pass --force to replace what is there`,
    )
  const unlock = options.locked === true ? () => undefined : lockDataDir(dataDir)
  const staging = join(dataDir, `.restore-${process.pid}`)
  try {
    rmSync(staging, { recursive: true, force: true })
    mkdirSync(join(staging, 'db'), { recursive: true, mode: 0o700 })
    const database = await copyHashed(join(dir, DATABASE_FILE), join(staging, 'db', 'data.mdb')).catch((error: Error) => {
      throw new BackupError(`${join(dir, DATABASE_FILE)} cannot be read: ${error.message}`)
    })
    if (database.size !== manifest.database.size || database.sha256 !== manifest.database.sha256)
      throw new BackupError(
        `${join(dir, DATABASE_FILE)} does not match the manifest (${database.size} bytes, SHA-256 ${database.sha256}; the manifest says ${manifest.database.size} bytes, ${manifest.database.sha256}): the backup is damaged. Restore another one (plinth backup verify says which are sound)`,
      )
    // Every blob file the database names must be in the backup: a restored server would answer 404 for the others.
    const copy = openReadOnly(join(staging, 'db'))
    let named: string[]
    try {
      named = namedFiles(copy)
    } finally {
      await copy.close()
      rmSync(join(staging, 'db', 'lock.mdb'), { force: true })
    }
    const listed = new Set(manifest.blobs.map((blob) => blob.sha256))
    const unlisted = named.filter((sha256) => !listed.has(sha256))
    if (unlisted.length > 0)
      throw new BackupError(
        `the database of ${dir} names ${unlisted.length} blob ${unlisted.length === 1 ? 'file' : 'files'} the backup does not hold (${unlisted.slice(0, 3).join(', ')}${unlisted.length > 3 ? ', …' : ''}): a restored server would lose them. Restore another backup (plinth backup verify says which are whole)`,
      )
    const root = rootOf(dir)
    const touched = new Set<string>()
    for (const blob of manifest.blobs) {
      const from = blobPath(root, blob.sha256)
      if (!existsSync(from)) throw new BackupError(`blob ${blob.sha256} of the backup is missing (${from}); restore another backup`)
      const to = join(staging, 'files', blob.sha256.slice(0, 2), blob.sha256.slice(2))
      mkdirSync(dirname(to), { recursive: true, mode: 0o700 })
      const copied = await copyHashed(from, to)
      if (copied.sha256 !== blob.sha256 || copied.size !== blob.size)
        throw new BackupError(`blob ${blob.sha256} of the backup is damaged (${from} has SHA-256 ${copied.sha256}); restore another backup`)
      touched.add(dirname(to))
    }
    mkdirSync(join(staging, 'files', 'uploads'), { recursive: true, mode: 0o700 })
    for (const blobDir of touched) await syncDirectory(blobDir)
    await syncDirectory(join(staging, 'db'))
    // Every byte checked: only now does anything in the data directory change.
    for (const name of present) rmSync(join(dataDir, name), { recursive: true, force: true })
    renameSync(join(staging, 'db'), join(dataDir, 'db'))
    renameSync(join(staging, 'files'), join(dataDir, 'files'))
    await syncDirectory(dataDir)
    return { dir, manifest, ms: Date.now() - started }
  } finally {
    rmSync(staging, { recursive: true, force: true })
    unlock()
  }
}
