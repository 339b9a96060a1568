// A pid file: which process holds a directory (the data directory, a backup root), and whether it still runs.
import { readFileSync } from 'node:fs'

/** Whether a process with this pid runs (one of another user's still counts). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** The pid a pid file names when that process still runs; null when the file is absent, unreadable or stale. */
export function livePidIn(file: string): number | null {
  let pid: number
  try {
    pid = Number(readFileSync(file, 'utf8'))
  } catch {
    return null
  }
  return Number.isInteger(pid) && pid > 0 && running(pid) ? pid : null
}
