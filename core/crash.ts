/**
 * Crash points for tests of crash safety: with `PLINTH_CRASH_AT=<name>` (or `<name>#<n>`: its n-th
 * time) in the environment, the process kills itself with SIGKILL when it reaches that point (no
 * handler runs, nothing is flushed: what a power cut or the OOM killer does). Unset, a crash point is
 * one string compare.
 */
const [target = '', nth = '1'] = (process.env.PLINTH_CRASH_AT ?? '').split('#')
let reached = 0

export function crashPoint(name: string): void {
  if (target !== '' && target === name && ++reached === Number(nth)) process.kill(process.pid, 'SIGKILL')
}
