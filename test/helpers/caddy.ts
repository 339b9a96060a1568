import { spawn } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { untilUp } from './process.js'
import { tempDir } from './server.js'

export const CADDY = '/usr/bin/caddy'
/** CI installs Debian's caddy (.ci/run); elsewhere a test says how to get it. */
export const needsCaddy = !existsSync(CADDY) && process.env.CI !== 'true' ? 'needs Debian caddy: apt-get install caddy' : false

export interface RunningCaddy {
  /** Its temporary directory (storage under data/). */
  dir: string
  /** The root certificate of its internal CA, once it made one. */
  rootCertificate: string
  /** What it logged so far. */
  log: () => string
}

/**
 * Debian's Caddy with `caddyfile` (its storage under a temporary directory, which the text names with
 * `{storage}`), stopped when the test ends; resolves once its internal CA exists.
 */
export async function startCaddy(t: TestContext, caddyfile: (storage: string) => string): Promise<RunningCaddy> {
  const dir = tempDir(t, 'plinth-caddy-')
  writeFileSync(join(dir, 'Caddyfile'), caddyfile(join(dir, 'data')))
  const caddy = spawn(CADDY, ['run', '--config', join(dir, 'Caddyfile'), '--adapter', 'caddyfile'], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, HOME: dir, XDG_DATA_HOME: dir, XDG_CONFIG_HOME: dir },
  })
  let log = ''
  caddy.stderr.on('data', (chunk) => (log += chunk))
  t.after(() => new Promise<void>((r) => (caddy.exitCode !== null ? r() : (caddy.once('exit', () => r()), caddy.kill('SIGTERM')))))
  // Caddy makes its local CA on start; wait for the root certificate.
  const rootCertificate = join(dir, 'data', 'pki', 'authorities', 'local', 'root.crt')
  await untilUp(
    caddy,
    () => existsSync(rootCertificate),
    'caddy',
    () => log,
  )
  return { dir, rootCertificate, log: () => log }
}

/** A test Caddyfile's global options: no admin endpoint, storage under the test's directory, the given ports, no trust store changes. */
export function caddyGlobals(storage: string, httpPort: number, httpsPort: number): string {
  return `{\n\tadmin off\n\tstorage file_system ${storage}\n\thttp_port ${httpPort}\n\thttps_port ${httpsPort}\n\tskip_install_trust\n}\n`
}
