// The backup commands (`plinth backup`, `backup verify`, `restore`): loaded only when asked for, so that
// every other command (and a start that fails on its configuration) starts without the backup modules.
import { existsSync } from 'node:fs'
import { join, relative, resolve } from 'node:path'
import type { Config } from '../core/config.js'
import { BackupError } from '../core/backup/errors.js'
import { readSecretFile, sameSecret, writeSecretFile } from '../core/installation-secret.js'
import { restoreBackup } from '../core/backup/restore.js'
import { ARCHIVE_DIR } from '../core/backup/archive-format.js'
import { restoreToPoint, verifyArchive } from '../core/backup/point-in-time.js'
import { readManifest } from '../core/backup/manifest.js'
import { resolveBackup } from '../core/backup/root.js'
import { recordBackup } from '../core/backup/status.js'
import { takeBackup } from '../core/backup/take.js'
import { verifyBackup } from '../core/backup/verify.js'
import { lockDataDir } from '../core/store/lock.js'
import { openEnvironment } from '../core/store/environment.js'
import { runningSource, stoppedSource } from '../plinth/backup.js'

const mib = (bytes: number) => `${(bytes / (1 << 20)).toFixed(1)} MiB`

/**
 * `plinth backup <root>`: through the running server's control socket when one runs on the data
 * directory (it goes on serving and writing), else on the stopped directory (held for the while).
 */
export async function backup(cfg: Config, rootArg: string, keep: number | undefined): Promise<void> {
  const root = resolve(rootArg)
  const inside = relative(cfg.dataDir, root)
  if (inside === '' || (!inside.startsWith('..') && !inside.startsWith('/')))
    throw new BackupError(`the backup root ${root} is inside the data directory ${cfg.dataDir}; choose a directory outside it`)
  const blobFile = (sha256: string) => join(cfg.dataDir, 'files', sha256.slice(0, 2), sha256.slice(2))
  if (!existsSync(cfg.secretFile))
    throw new BackupError(
      `there is no installation secret at ${cfg.secretFile} (PLINTH_SECRET_FILE) to sign the backup with: back up the data directory of a server that has started (it makes the file), with the same PLINTH_SECRET_FILE as the server`,
    )
  const secret = readSecretFile(cfg.secretFile)
  const running = await runningSource(cfg.dataDir, { path: blobFile })
  let taken: Awaited<ReturnType<typeof takeBackup>>
  if (running !== null) taken = await takeBackup(root, running, { keep, secret })
  else {
    if (!existsSync(join(cfg.dataDir, 'db', 'data.mdb')))
      throw new BackupError(`there is no Plinth data directory at ${cfg.dataDir} (PLINTH_DATA_DIR) to back up, and no server answers on it`)
    const unlock = lockDataDir(cfg.dataDir)
    try {
      const env = openEnvironment(cfg.dataDir)
      try {
        taken = await takeBackup(root, stoppedSource(env, { path: blobFile }), { keep, secret })
      } finally {
        await env.close()
      }
    } finally {
      unlock()
    }
  }
  await recordBackup(cfg.dataDir, taken.dir, taken.manifest)
  const { manifest } = taken
  process.stdout.write(
    `Backup ${manifest.id} of ${cfg.dataDir} (${manifest.source}) is complete: ${taken.dir}\n  database ${mib(manifest.database.size)} at transaction ${manifest.txnId}, ${manifest.blobs.length} blob files (${manifest.totals.newBlobs} new), ${mib(manifest.totals.bytes)} in all, ${mib(manifest.totals.copiedBytes)} copied, in ${(manifest.durationMs / 1000).toFixed(1)} s\n`,
  )
  if (taken.pruned !== null && (taken.pruned.backups.length > 0 || taken.pruned.blobs > 0))
    process.stdout.write(
      `  --keep ${keep}: removed ${taken.pruned.backups.length} older or incomplete backups (${taken.pruned.backups.join(', ') || 'none'}) and ${taken.pruned.blobs} blob files no kept backup names (${mib(taken.pruned.bytes)})\n`,
    )
}

/**
 * The installation's secret a restore or verify checks a backup with: `--secret FILE`, else
 * PLINTH_SECRET_FILE (or the data directory's own file); null when none of them exists.
 */
function secretFor(cfg: Config, given: string | undefined): { path: string; secret: Buffer } | null {
  const path = given === undefined ? cfg.secretFile : resolve(given)
  if (given === undefined && !existsSync(path)) return null
  return { path, secret: readSecretFile(path) }
}

/** `plinth backup verify`: every file and table; exit 1 naming each problem. */
export async function verify(cfg: Config, path: string, secretFile: string | undefined): Promise<void> {
  const key = secretFor(cfg, secretFile)
  const checked = await verifyBackup(resolve(path), key?.secret ?? null)
  const { manifest } = checked
  process.stdout.write(
    `Backup ${checked.dir} (Plinth ${manifest.plinth}, format ${manifest.format}, taken ${manifest.startedAt} from a ${manifest.source}, transaction ${manifest.txnId})\n`,
  )
  const empty = Object.values(checked.tables).filter((count) => count === 0).length
  for (const [table, count] of Object.entries(checked.tables)) if (count > 0) process.stdout.write(`  ${table.padEnd(28)} ${count}\n`)
  process.stdout.write(`  (${empty} other tables empty)\n`)
  process.stdout.write(`  ${manifest.blobs.length} blob files, ${mib(manifest.totals.bytes)} in all\n`)
  process.stdout.write(
    checked.signature === 'ok'
      ? `  signed by the installation's secret (${key!.path})\n`
      : checked.signature === 'unsigned'
        ? '  not signed (taken before backups were signed): nothing proves it unchanged; restoring it needs --trust-unsigned\n'
        : checked.signature === 'unchecked'
          ? `  signature not checked: no installation secret at ${cfg.secretFile} (give it with PLINTH_SECRET_FILE or --secret FILE)\n`
          : '',
  )
  // A root with an archive: every segment checked too (its key derives from the secret).
  const root = resolve(path)
  const problems = [...checked.problems]
  const archived = existsSync(join(root, ARCHIVE_DIR))
  if (archived) {
    if (key === null) problems.push(`the archive (${join(root, ARCHIVE_DIR)}) cannot be checked without the installation's secret`)
    else {
      const archive = verifyArchive(root, key.secret)
      process.stdout.write(`  archive: ${archive.segments} segments, ${archive.span}\n`)
      problems.push(...archive.problems.map((p) => `archive: ${p}`))
    }
  }
  if (problems.length === 0) {
    process.stdout.write(
      `OK: every file matches its manifest, every record its schema, every blob file the records name is there${archived ? '; every archive segment authentic, the chain without a gap, every blob file it lists there' : ''}\n`,
    )
    return
  }
  process.stderr.write(`plinth: the backup is damaged (${problems.length} problems):\n${problems.map((p) => `  ${p}`).join('\n')}\n`)
  process.exit(1)
}

/** `plinth restore ROOT --at TIME | --position N`: the newest base before that point, the archive replayed up to it. */
async function restorePoint(
  cfg: Config,
  path: string,
  options: { force: boolean; secret: string | undefined; at?: string; position?: string },
): Promise<void> {
  if (options.at !== undefined && options.position !== undefined) throw new BackupError('give --at TIME or --position N, not both')
  const at = options.at === undefined ? undefined : Date.parse(options.at)
  if (at !== undefined && (Number.isNaN(at) || !/^\d{4}-\d{2}-\d{2}T/.test(options.at!)))
    throw new BackupError(`--at must be a time in ISO 8601 (2026-11-29T10:15:00Z, or with an offset), got ${JSON.stringify(options.at)}`)
  if (options.position !== undefined && !/^\d{1,15}$/.test(options.position))
    throw new BackupError(
      `--position must be an entry's number (plinth backup verify ROOT says which the archive holds), got ${JSON.stringify(options.position)}`,
    )
  const root = resolve(path)
  if (!existsSync(join(root, ARCHIVE_DIR)))
    throw new BackupError(
      `${root} has no archive (${ARCHIVE_DIR}/: PLINTH_BACKUP_ARCHIVE): --at and --position need one. Restore a backup itself without them`,
    )
  const key = secretFor(cfg, options.secret)
  if (key === null)
    throw new BackupError(
      `the archive is read with a key derived from the installation's secret, and there is none at ${cfg.secretFile}: give the one kept apart from the backups (PLINTH_SECRET_FILE=FILE, or --secret FILE)`,
    )
  const done = await restoreToPoint(root, cfg.dataDir, {
    secret: key.secret,
    at,
    position: options.position === undefined ? undefined : Number(options.position),
    force: options.force,
  })
  if (!existsSync(cfg.secretFile)) writeSecretFile(cfg.secretFile, key.secret)
  process.stdout.write(
    `Restored ${cfg.dataDir} to entry ${done.to!.position.seq}, committed ${new Date(done.to!.at).toISOString()}: the backup ${done.base} (at entry ${done.from.seq}), then ${done.replayed} archived entries replayed, every byte checked, in ${(done.ms / 1000).toFixed(1)} s. Start the server on it: PLINTH_DATA_DIR=${cfg.dataDir} npm start (with PLINTH_BACKUP_ARCHIVE, the archive's later history is moved aside and a new one begins)\n`,
  )
}

/**
 * `plinth restore`: into PLINTH_DATA_DIR, checked against the installation's secret, which is then
 * where the server will read it (PLINTH_SECRET_FILE, or the data directory's own file).
 */
export async function restore(
  cfg: Config,
  path: string,
  options: { force: boolean; secret: string | undefined; trustUnsigned: boolean; at?: string; position?: string },
): Promise<void> {
  if (options.at !== undefined || options.position !== undefined) return restorePoint(cfg, path, options)
  // What is not a backup is said before the secret is asked for.
  readManifest(resolveBackup(resolve(path)))
  const key = secretFor(cfg, options.secret)
  if (key === null)
    throw new BackupError(
      `a backup never holds the installation's secret, and there is none at ${cfg.secretFile}: give the one kept apart from the backups (PLINTH_SECRET_FILE=FILE, or --secret FILE); the backup's signature is checked with it and the server reads it after`,
    )
  // Where the server will read it: the same secret, or none yet (then it is written there).
  const kept = key.path !== cfg.secretFile && existsSync(cfg.secretFile) ? readSecretFile(cfg.secretFile) : null
  if (kept !== null && !sameSecret(kept, key.secret))
    throw new BackupError(
      `${cfg.secretFile} (PLINTH_SECRET_FILE) holds another installation's secret than ${key.path}: the server would sign with it and every webhook secret and share link of the backup would change. Move it away, or give the same file`,
    )
  const restored = await restoreBackup(resolve(path), cfg.dataDir, {
    secret: key.secret,
    force: options.force,
    trustUnsigned: options.trustUnsigned,
  })
  if (!existsSync(cfg.secretFile)) writeSecretFile(cfg.secretFile, key.secret)
  const { manifest } = restored
  process.stdout.write(
    `Restored backup ${restored.dir} (taken ${manifest.startedAt}, Plinth ${manifest.plinth}) into ${cfg.dataDir}: ${mib(manifest.totals.bytes)}, ${manifest.blobs.length} blob files, every byte checked, in ${(restored.ms / 1000).toFixed(1)} s. Start the server on it: PLINTH_DATA_DIR=${cfg.dataDir} npm start\n`,
  )
}
