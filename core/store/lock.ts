import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { livePidIn } from '../pid-file.js'

/** Another live process holds the data directory. */
export class DataDirBusyError extends Error {
  constructor(
    readonly pid: number,
    dataDir: string,
  ) {
    super(`another Plinth process (pid ${pid}) is using ${dataDir}; stop it first or choose another PLINTH_DATA_DIR`)
    this.name = 'DataDirBusyError'
  }
}

/** The pid of a live process holding the data directory, or null. */
export function dataDirHolder(dataDir: string): number | null {
  const pid = livePidIn(join(dataDir, 'plinth.pid'))
  return pid === process.pid ? null : pid
}

/**
 * The data directory holds password and token hashes and the key webhook secrets and share links
 * derive from: only its owner may enter it (0700, also for a directory made by an older version), and
 * every file Plinth creates is its owner's alone (umask 077: 0600 files, 0700 directories).
 */
export function privateDir(dataDir: string): void {
  process.umask(0o077)
  mkdirSync(dataDir, { recursive: true, mode: 0o700 })
  chmodSync(dataDir, 0o700)
}

/**
 * Claims the data directory for this process: one writer keeps its actors' memory in step with
 * LMDB, so a second server (or an offline CLI) on the same directory is refused. A stale file left
 * by a killed process is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  privateDir(dataDir)
  const holder = dataDirHolder(dataDir)
  if (holder !== null) throw new DataDirBusyError(holder, dataDir)
  const file = join(dataDir, 'plinth.pid')
  writeFileSync(file, String(process.pid))
  return () => {
    if (dataDirHolder(dataDir) === null) rmSync(file, { force: true })
  }
}
