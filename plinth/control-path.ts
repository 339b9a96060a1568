import { join } from 'node:path'

/** The operator's control socket inside the data directory (owner-only permissions). */
export function controlSocketPath(dataDir: string): string {
  return join(dataDir, 'control.sock')
}
