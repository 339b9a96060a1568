import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

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

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** The pid of a live process holding the data directory, or null. */
export function dataDirHolder(dataDir: string): number | null {
  let pid: number
  try {
    pid = Number(readFileSync(join(dataDir, 'plinth.pid'), 'utf8'))
  } catch {
    return null
  }
  return Number.isInteger(pid) && pid > 0 && pid !== process.pid && alive(pid) ? pid : null
}

/**
 * Claims the data directory for this process: one writer keeps its actors' memory in step with
 * LMDB, so a second server (or an offline CLI) on the same directory is refused. A stale file left
 * by a killed process is taken over.
 */
export function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true })
  const holder = dataDirHolder(dataDir)
  if (holder !== null) throw new DataDirBusyError(holder, dataDir)
  const file = join(dataDir, 'plinth.pid')
  writeFileSync(file, String(process.pid))
  return () => {
    if (dataDirHolder(dataDir) === null) rmSync(file, { force: true })
  }
}
