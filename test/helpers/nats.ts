import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { TestContext } from 'node:test'
import { connect, nkeyAuthenticator, nkeys, type NatsConnection } from '@nats-io/transport-node'
import { freePort } from './http.js'
import { PortTakenError, untilUp } from './process.js'
import { tempDir } from './server.js'

/** deploy/cluster/: the NATS configuration every cluster test runs, as an operator would. */
export const DEPLOY_CLUSTER = fileURLToPath(new URL('../../../deploy/cluster/', import.meta.url))

/** One nats-server of a test's cluster (Debian's, JetStream on), started on loopback ports of its own. */
export interface NatsServer {
  name: string
  /** Its client address (`tls://host:port`). */
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

/** What a client of the test's NATS needs: the servers, Plinth's user key and the CA, as files and as a connection. */
export interface NatsAccess {
  /** `tls://host:port` of each server. */
  urls: string[]
  /** The seed file of Plinth's NATS user (`plinth nats-key`'s), and the CA that signed the servers' certificates. */
  credentials: string
  ca: string
  /** The variables a node is given for them (PLINTH_CLUSTER_NATS, _CREDS, _CA). */
  env: Record<string, string>
  /** A NATS connection with Plinth's own credentials (what an attacker holding them could do). */
  connect(): Promise<NatsConnection>
  /** A NATS connection as the operator's admin user (the `nats` CLI's: leader step-downs). */
  admin(): Promise<NatsConnection>
}

/** A NATS user key made as `plinth nats-key` makes one: the seed in a file (0600), and its public key. */
export function natsUserKey(file: string): string {
  const user = nkeys.createUser()
  writeFileSync(file, `${new TextDecoder().decode(user.getSeed())}\n`, { mode: 0o600 })
  return user.getPublicKey()
}

/** deploy/cluster's NATS configuration made ready in a directory: what `nats-server -c` needs, and each server's environment. */
export interface ExampleNats {
  conf: string
  names: string[]
  /** The seed files of Plinth's user and of the operator's admin user, and the CA that signed the servers' certificates. */
  credentials: string
  adminSeed: string
  ca: string
  /** Server `i`'s environment, as the file's header says to set it, for these ports (every server's). */
  envOf(i: number, ports: { client: number; route: number; monitor: number }[]): Record<string, string>
}

/**
 * deploy/cluster/nats-server.conf as written (with plinth-permissions.conf beside it) for `count` servers
 * with clients on `host`: certificates from make-certs.sh (each server's for `host` and 127.0.0.1, where
 * the routes are), Plinth's user key and an admin's, as `plinth nats-key` makes them. A lone server
 * runs without the file's cluster block (one server cannot form a JetStream cluster of three routes).
 */
export function prepareExampleNats(dir: string, count: number, host: string): ExampleNats {
  mkdirSync(dir, { recursive: true })
  const tls = join(dir, 'tls')
  const names = Array.from({ length: count }, (_, i) => `n${i + 1}`)
  execFileSync('sh', [join(DEPLOY_CLUSTER, 'make-certs.sh'), tls, ...names.map((name) => `${name}:${host},127.0.0.1`)], {
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  const credentials = join(dir, 'plinth.nk')
  const publicKey = natsUserKey(credentials)
  const adminSeed = join(dir, 'admin.nk')
  const adminKey = natsUserKey(adminSeed)
  let text = readFileSync(join(DEPLOY_CLUSTER, 'nats-server.conf'), 'utf8')
  if (count === 1) text = text.replace(/\ncluster \{[\s\S]*$/, '\n')
  const conf = join(dir, 'nats-server.conf')
  writeFileSync(conf, text)
  copyFileSync(join(DEPLOY_CLUSTER, 'plinth-permissions.conf'), join(dir, 'plinth-permissions.conf'))
  return {
    conf,
    names,
    credentials,
    adminSeed,
    ca: join(tls, 'ca.pem'),
    envOf: (i, ports) => {
      const name = names[i]!
      const store = join(dir, name)
      mkdirSync(store, { recursive: true })
      return {
        PLINTH_NATS_NAME: name,
        PLINTH_NATS_LISTEN: `${host}:${ports[i]!.client}`,
        PLINTH_NATS_CLUSTER_LISTEN: `127.0.0.1:${ports[i]!.route}`,
        PLINTH_NATS_MONITOR: `127.0.0.1:${ports[i]!.monitor}`,
        PLINTH_NATS_STORE: store,
        PLINTH_NATS_CA: join(tls, 'ca.pem'),
        PLINTH_NATS_CERT: join(tls, `${name}.pem`),
        PLINTH_NATS_KEY: join(tls, `${name}.key`),
        PLINTH_NATS_USER: publicKey,
        PLINTH_NATS_ADMIN: adminKey,
        // Three routes as the file lists them (a cluster of three); each server skips the one to itself.
        PLINTH_NATS_ROUTE_1: `nats://127.0.0.1:${ports[0]!.route}`,
        PLINTH_NATS_ROUTE_2: `nats://127.0.0.1:${ports[1 % count]!.route}`,
        PLINTH_NATS_ROUTE_3: `nats://127.0.0.1:${ports[2 % count]!.route}`,
      }
    },
  }
}

/** A NATS connection to `urls` (`tls://host:port`) as the user whose seed is in `seed`. */
export function connectAs(urls: string[], seed: string, ca: string): Promise<NatsConnection> {
  return connect({
    servers: urls.map((url) => url.replace(/^tls:\/\//, '')),
    authenticator: nkeyAuthenticator(new TextEncoder().encode(readFileSync(seed, 'utf8').trim())),
    // The certificate is checked against the test's CA; the client names no server for an address (Node would check "localhost").
    tls: { caFile: ca, ...({ checkServerIdentity: () => undefined } as object) },
  })
}

/** The servers of a test's cluster on these ports, each started (not yet waited for). */
function startServers(
  example: ExampleNats,
  ports: { client: number; route: number; monitor: number }[],
  host: string,
  netns: string | undefined,
): NatsServer[] {
  return ports.map((own, i) => {
    const name = example.names[i]!
    const env = { PATH: process.env.PATH, ...example.envOf(i, ports) }
    let out = ''
    const start = () => {
      // Inside the test's hub namespace when it has one (`ip netns exec` execs nats-server itself).
      const [command, args] =
        netns === undefined ? ['nats-server', ['-c', example.conf]] : ['ip', ['netns', 'exec', netns, 'nats-server', '-c', example.conf]]
      server.child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] })
      server.child.stdout!.on('data', (c: Buffer) => (out += c.toString()))
      server.child.stderr!.on('data', (c: Buffer) => (out += c.toString()))
    }
    const server: NatsServer = {
      name,
      url: `tls://${host}:${own.client}`,
      monitor: `http://127.0.0.1:${own.monitor}`,
      child: undefined as unknown as ChildProcess,
      log: () => out,
      kill: () => void server.child.kill('SIGKILL'),
      restart: async () => {
        const before = readyLines(out)
        start()
        await untilUp(server.child, () => readyLines(out) > before, `${name} to accept clients again`, server.log)
      },
    }
    start()
    return server
  })
}

/** How many times a server's log says it is ready (it listens for clients, routes and monitoring). */
function readyLines(log: string): number {
  return log.split('Server is ready').length - 1
}

/**
 * Starts `count` nats-servers from deploy/cluster's configuration as written (`prepareExampleNats`): TLS
 * on clients and routes, Plinth's user with Plinth's permissions, JetStream on, clients on `host`.
 * Stopped after the test, which then fails if a server logged a permissions violation (Plinth needing
 * something its user may not do).
 */
export async function startNatsCluster(
  t: TestContext,
  dir: string,
  count = 3,
  host = '127.0.0.1',
  netns?: string,
): Promise<NatsServer[] & { access: NatsAccess }> {
  const example = prepareExampleNats(dir, count, host)
  const servers: NatsServer[] = []
  t.after(() => {
    for (const server of servers) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL')
    const violations = servers.flatMap((s) =>
      s
        .log()
        .split('\n')
        .filter((line) => /Permissions Violation/i.test(line)),
    )
    if (violations.length > 0)
      throw new Error(`Plinth's NATS user needed more than plinth-permissions.conf allows:\n${violations.slice(0, 10).join('\n')}`)
  })
  // A port picked free may be taken before a server binds it (another test file starts servers too):
  // the servers start again on fresh ports (each server's routes name the others', so all of them).
  for (let attempt = 1; ; attempt++) {
    const ports: { client: number; route: number; monitor: number }[] = []
    for (let i = 0; i < count; i++) ports.push({ client: await freePort(), route: await freePort(), monitor: await freePort() })
    const started = startServers(example, ports, host, netns)
    servers.push(...started)
    try {
      for (let i = 0; i < count; i++) {
        const server = started[i]!
        await untilUp(server.child, () => readyLines(server.log()) > 0, `nats-server ${server.name}`, server.log)
      }
      break
    } catch (error) {
      for (const server of started) server.kill()
      if (!(error instanceof PortTakenError) || attempt >= 3) throw error
      servers.length = 0
    }
  }
  const { credentials, ca } = example
  const urls = servers.map((s) => s.url)
  const access: NatsAccess = {
    urls,
    credentials,
    ca,
    env: { PLINTH_CLUSTER_NATS: urls.join(','), PLINTH_CLUSTER_NATS_CREDS: credentials, PLINTH_CLUSTER_NATS_CA: ca },
    connect: () => connectAs(urls, credentials, ca),
    admin: () => connectAs(urls, example.adminSeed, ca),
  }
  return Object.assign(servers, { access })
}

/** The installation's secret file every node of a test's cluster is given (as `openssl rand -hex 32` makes one). */
export function clusterSecret(dir: string): string {
  const file = join(dir, 'installation.key')
  writeFileSync(file, `${execFileSync('openssl', ['rand', '-hex', '32']).toString().trim()}\n`, { mode: 0o600 })
  return file
}

/**
 * A cluster test's ground: a temporary directory (`prefix`), three nats-servers in it with clients on
 * `host` (inside the network namespace `netns`, if given), their addresses, an empty backup root (`PLINTH_CLUSTER_BACKUPS`) at `<dir>/backups`, and the
 * variables every node is given (NATS, its credentials and CA, the installation's secret file).
 */
export async function startClusterGround(
  t: TestContext,
  prefix: string,
  host = '127.0.0.1',
  netns?: string,
): Promise<{ dir: string; nats: NatsServer[]; urls: string[]; backups: string; access: NatsAccess; env: Record<string, string> }> {
  const dir = tempDir(t, prefix)
  const nats = await startNatsCluster(t, dir, 3, host, netns)
  const backups = join(dir, 'backups')
  mkdirSync(backups)
  // Every node serves the API at one origin (its requests here go to each node's address, which the API answers too).
  const env = { ...nats.access.env, PLINTH_SECRET_FILE: clusterSecret(dir), PLINTH_API_ORIGIN: 'http://localhost' }
  return { dir, nats, urls: nats.access.urls, backups, access: nats.access, env }
}

/** One node of a test's cluster, as `clusterNodeEnv` sets it up. */
export interface ClusterNodeSettings {
  /** The test's directory: the node's data directory is `<dir>/<name>`. */
  dir: string
  name: string
  port: number
  /** What every node of the cluster is given (NATS, its credentials and CA, the installation's secret: `startClusterGround`'s env). */
  ground: Record<string, string>
  /** The admin key of the first start. */
  key: string
  leaseMs: number
  /** Serving threads (1 unless the test is about several). */
  threads?: number
  /** The address the other nodes reach it at (127.0.0.1; a network namespace's own in the fault tests). */
  address?: string
  /** PLINTH_CLUSTER_BACKUPS, when the node restores from a backup root. */
  backups?: string
}

/** The environment of one node of a test's cluster (the one place every cluster test builds it), then `extra`. */
export function clusterNodeEnv(node: ClusterNodeSettings, extra: Record<string, string> = {}): Record<string, string> {
  return {
    ...node.ground,
    PORT: String(node.port),
    PLINTH_DATA_DIR: join(node.dir, node.name),
    PLINTH_ADMIN_KEY: node.key,
    PLINTH_SERVE_THREADS: String(node.threads ?? 1),
    PLINTH_NODE_NAME: node.name,
    PLINTH_NODE_URL: `http://${node.address ?? '127.0.0.1'}:${node.port}`,
    PLINTH_CLUSTER_LEASE_MS: String(node.leaseMs),
    ...(node.backups === undefined ? {} : { PLINTH_CLUSTER_BACKUPS: node.backups }),
    ...extra,
  }
}
