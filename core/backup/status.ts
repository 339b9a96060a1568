// The last successful backup of a data directory, kept beside it for /metrics (an alert fires when backups stop).
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { writeFileDurably } from './files.js'
import type { BackupManifest } from './manifest.js'

/** What /metrics says of the last successful backup. */
export interface LastBackup {
  /** When it finished (ms since the epoch). */
  finishedAt: number
  durationSeconds: number
  /** Bytes the backup holds (the database copy and every blob it names), and those it copied. */
  bytes: number
  copiedBytes: number
  /** Where it went (`root/<id>`). */
  dir: string
}

/** What /metrics says of the continuous archive (PLINTH_BACKUP_ARCHIVE). */
export interface ArchiveStatus {
  /** Entries committed and not appended to the archive yet. */
  behind: number
  /** The last entry appended (and fsynced), and when (ms since the epoch; null: none since the start). */
  position: number
  appendedAt: number | null
}

const STATUS_FILE = 'last-backup.json'

/** Records a successful backup of `dataDir` (by the server that was running, or the command on a stopped directory). */
export async function recordBackup(dataDir: string, dir: string, manifest: BackupManifest): Promise<LastBackup> {
  const last: LastBackup = {
    finishedAt: Date.parse(manifest.finishedAt),
    durationSeconds: manifest.durationMs / 1000,
    bytes: manifest.totals.bytes,
    copiedBytes: manifest.totals.copiedBytes,
    dir,
  }
  await writeFileDurably(join(dataDir, STATUS_FILE), JSON.stringify(last) + '\n')
  return last
}

/** The last successful backup recorded for `dataDir`, or null (none yet, or the file is unreadable). */
export function lastBackup(dataDir: string): LastBackup | null {
  try {
    const value = JSON.parse(readFileSync(join(dataDir, STATUS_FILE), 'utf8')) as LastBackup
    return typeof value.finishedAt === 'number' ? value : null
  } catch {
    return null
  }
}
