import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { connect as netConnect } from 'node:net'
import { join } from 'node:path'
import type { TestContext } from 'node:test'
import { freePort } from './http.js'
import { tempDir } from './server.js'
import { waitUntil } from './wait.js'

/** One nats-server of a test's cluster (Debian's, JetStream on), started on loopback ports of its own. */
export interface NatsServer {
  name: string
  url: string
  /** Its monitoring endpoint (`http://127.0.0.1:<port>`: /varz, /jsz). */
  monitor: string
  child: ChildProcess
  log: () => string
  /** SIGKILLs it. */
  kill(): void
  /** Starts it again on the same ports and store (after `kill`). */
  restart(): Promise<void>
}

function portOpen(port: number, host: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = netConnect(port, host)
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
  })
}

/**
 * Starts `count` nats-servers clustered with each other (JetStream on, each with its own store under
 * `dir`, clients on `host`), and stops them after the test. Resolves once every one accepts clients.
 */
export async function startNatsCluster(t: TestContext, dir: string, count = 3, host = '127.0.0.1'): Promise<NatsServer[]> {
  const clientPorts: number[] = []
  const routePorts: number[] = []
  const monitorPorts: number[] = []
  for (let i = 0; i < count; i++) {
    clientPorts.push(await freePort())
    routePorts.push(await freePort())
    monitorPorts.push(await freePort())
  }
  const routes = routePorts.map((p) => `nats://127.0.0.1:${p}`).join(', ')
  const servers: NatsServer[] = []
  for (let i = 0; i < count; i++) {
    const name = `n${i + 1}`
    const store = join(dir, name)
    mkdirSync(store, { recursive: true })
    const conf = join(dir, `${name}.conf`)
    writeFileSync(
      conf,
      `server_name: ${name}\nlisten: ${host}:${clientPorts[i]}\nhttp: 127.0.0.1:${monitorPorts[i]}\njetstream { store_dir: "${store}" }\n` +
        (count > 1 ? `cluster { name: plinth-test, listen: 127.0.0.1:${routePorts[i]}, routes: [${routes}] }\n` : ''),
    )
    let out = ''
    const server: NatsServer = {
      name,
      url: `${host}:${clientPorts[i]}`,
      monitor: `http://127.0.0.1:${monitorPorts[i]}`,
      child: undefined as unknown as ChildProcess,
      log: () => out,
      kill: () => void server.child.kill('SIGKILL'),
      restart: async () => {
        start()
        await waitUntil(() => portOpen(clientPorts[i]!, host), `${name} to accept clients again`)
      },
    }
    const start = () => {
      server.child = spawn('nats-server', ['-c', conf], { stdio: ['ignore', 'pipe', 'pipe'] })
      server.child.stdout!.on('data', (c: Buffer) => (out += c.toString()))
      server.child.stderr!.on('data', (c: Buffer) => (out += c.toString()))
    }
    start()
    servers.push(server)
  }
  t.after(() => {
    for (const server of servers) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
  })
  for (let i = 0; i < count; i++)
    await waitUntil(() => portOpen(clientPorts[i]!, host), `nats-server ${servers[i]!.name} to accept clients`)
  return servers
}

/**
 * A cluster test's ground: a temporary directory (`prefix`), three nats-servers in it with clients on
 * `host`, their addresses, and an empty backup root (`PLINTH_CLUSTER_BACKUPS`) at `<dir>/backups`.
 */
export async function startClusterGround(
  t: TestContext,
  prefix: string,
  host = '127.0.0.1',
): Promise<{ dir: string; nats: NatsServer[]; urls: string[]; backups: string }> {
  const dir = tempDir(t, prefix)
  const nats = await startNatsCluster(t, dir, 3, host)
  const backups = join(dir, 'backups')
  mkdirSync(backups)
  return { dir, nats, urls: nats.map((s) => s.url), backups }
}
