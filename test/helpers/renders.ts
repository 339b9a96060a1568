import { execFileSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { waitUntil } from './wait.js'

/** Pids of the render processes this test process started (they run render.worker.js). */
export function renderProcesses(): number[] {
  try {
    return execFileSync('pgrep', ['-P', String(process.pid), '-f', 'render.worker.js'], { encoding: 'utf8' })
      .trim()
      .split('\n')
      .filter(Boolean)
      .map(Number)
  } catch {
    return [] // pgrep exits 1 when nothing matches
  }
}

/** CPU time a process has used, in ms (user and system, from /proc; 0 once it is gone). */
export function cpuMs(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100
  } catch {
    return 0
  }
}

/** The render processes that used at least `ms` of CPU over the next 300 ms (pages looping, not a process loading a site's code). */
export async function looping(ms = 150): Promise<number[]> {
  const before = new Map(renderProcesses().map((pid) => [pid, cpuMs(pid)]))
  await new Promise((resolve) => setTimeout(resolve, 300))
  return renderProcesses().filter((pid) => before.has(pid) && cpuMs(pid) - before.get(pid)! >= ms)
}

/** Waits until render processes have burned `ms` of CPU since the call: a page is rendering (looping). */
export async function rendering(ms: number): Promise<void> {
  const before = new Map(renderProcesses().map((pid) => [pid, cpuMs(pid)]))
  await waitUntil(
    () => renderProcesses().reduce((sum, pid) => sum + cpuMs(pid) - (before.get(pid) ?? 0), 0) >= ms,
    `renders to use ${ms} ms of CPU`,
    30_000,
  )
}
