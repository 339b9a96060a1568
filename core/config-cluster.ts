// A cluster node's settings (PLINTH_CLUSTER_*, PLINTH_NODE_*) and the installation's secret file, read from the environment.
import { existsSync, readFileSync, statSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { SECRET_FILE_NAME } from './installation-secret.js'
import { ConfigError, credentialsKind, isLoopbackHost, read, type Env } from './config-values.js'

/**
 * PLINTH_SECRET_FILE: where the installation's secret is. The embedded server makes it in the data
 * directory on its first start; a cluster's node must be given it (the same file on every node, never
 * made by one node alone: the others could not check what it signs).
 */
export function parseSecretFile(env: Env, dataDir: string, clustered: boolean): string {
  const given = read(env, 'PLINTH_SECRET_FILE')
  if (given === undefined) {
    if (clustered)
      throw new ConfigError(
        'PLINTH_SECRET_FILE',
        `must name the installation's secret file on every node of a cluster (the same file on each: it signs the log, the lease and what nodes hand each other, and never travels over NATS). Make one once (openssl rand -hex 32 > /etc/plinth/${SECRET_FILE_NAME}; chmod 600 /etc/plinth/${SECRET_FILE_NAME}), copy it to every node, and keep a copy apart from the backups: a restore needs it`,
      )
    return join(dataDir, SECRET_FILE_NAME)
  }
  const path = resolve(given)
  if (clustered && !existsSync(path))
    throw new ConfigError(
      'PLINTH_SECRET_FILE',
      `names ${path}, which does not exist: a cluster's node reads the installation's secret from it (the same file on every node; make one once with openssl rand -hex 32)`,
    )
  return path
}

export interface ClusterConfig {
  /** The NATS servers, `host:port` (a `tls://` prefix is taken off and asks for TLS). */
  readonly servers: readonly string[]
  readonly node: string
  readonly url: string
  readonly leaseMs: number
  /** A backup root this node restores from when it is new, behind the log, or off it (PLINTH_CLUSTER_BACKUPS); null: none. */
  readonly backups: string | null
  /** The file of this node's NATS credentials (PLINTH_CLUSTER_NATS_CREDS); null: none (loopback only). */
  readonly credentials: string | null
  /** TLS towards NATS (a `tls://` server, or PLINTH_CLUSTER_NATS_CA set): the CA to check the servers with (null: the system's); null: plain (loopback only). */
  readonly tls: { readonly ca: string | null } | null
}

/** A file a variable names: it must exist (a path, never the secret itself, which `ps` and logs would show). */
function existingFile(env: Env, name: string, what: string): string | null {
  const value = read(env, name)
  if (value === undefined) return null
  const path = resolve(value)
  if (!existsSync(path) || !statSync(path).isFile())
    throw new ConfigError(name, `must name ${what}, and ${JSON.stringify(value)} is not a file`)
  return path
}

export function parseCluster(env: Env): ClusterConfig | null {
  const raw = read(env, 'PLINTH_CLUSTER_NATS')
  if (raw === undefined) return null
  const given = raw
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '')
  let tlsAsked = false
  const servers: string[] = []
  for (const server of given) {
    if (/^[a-z]+:\/\/[^/]*@/i.test(server) || /^[^/]*@/.test(server))
      throw new ConfigError(
        'PLINTH_CLUSTER_NATS',
        'must not carry credentials (user:password@ shows in the process list and in logs): put them in a file and name it with PLINTH_CLUSTER_NATS_CREDS',
      )
    const match = /^(?:(nats|tls):\/\/)?([A-Za-z0-9.-]+|\[[0-9A-Fa-f:.]+\]):(\d{1,5})$/.exec(server)
    if (match === null)
      throw new ConfigError(
        'PLINTH_CLUSTER_NATS',
        `must be comma-separated NATS server addresses (host:port, nats://host:port or tls://host:port), got ${JSON.stringify(server)}`,
      )
    if (match[1] === 'tls') tlsAsked = true
    servers.push(`${match[2]}:${match[3]}`)
  }
  if (servers.length === 0) throw new ConfigError('PLINTH_CLUSTER_NATS', 'names no server; unset it for the embedded single server')
  const node = read(env, 'PLINTH_NODE_NAME')
  if (node === undefined || !/^[a-z0-9][a-z0-9-]{0,62}$/.test(node))
    throw new ConfigError(
      'PLINTH_NODE_NAME',
      `must name this node in a cluster (lowercase letters, digits and -, up to 63), got ${JSON.stringify(node ?? '')}`,
    )
  const url = read(env, 'PLINTH_NODE_URL')
  if (url === undefined || !/^https?:\/\/[^/?#\s]+$/.test(url))
    throw new ConfigError(
      'PLINTH_NODE_URL',
      `must be the origin other nodes reach this node's port at (http://10.0.0.2:8080), got ${JSON.stringify(url ?? '')}`,
    )
  const lease = read(env, 'PLINTH_CLUSTER_LEASE_MS') ?? '5000'
  if (!/^\d{3,6}$/.test(lease) || Number(lease) < 500)
    throw new ConfigError('PLINTH_CLUSTER_LEASE_MS', `must be a number of milliseconds, at least 500, got ${JSON.stringify(lease)}`)
  const backups = read(env, 'PLINTH_CLUSTER_BACKUPS')
  if (backups !== undefined && (!existsSync(backups) || !statSync(backups).isDirectory()))
    throw new ConfigError(
      'PLINTH_CLUSTER_BACKUPS',
      `must be a backup root this node can read (the directory \`plinth backup ROOT\` writes to), and ${JSON.stringify(backups)} ${existsSync(backups) ? 'is a file' : 'does not exist'}`,
    )
  const credentials = existingFile(
    env,
    'PLINTH_CLUSTER_NATS_CREDS',
    "this node's NATS credentials (a .creds file, an nkey seed, or user:password on one line)",
  )
  if (credentials !== null && credentialsKind(readFileSync(credentials, 'utf8')) === null)
    throw new ConfigError(
      'PLINTH_CLUSTER_NATS_CREDS',
      `names ${credentials}, which holds none of what NATS takes: a .creds file (a user JWT and its seed), an nkey seed (SU…, one line), or user:password on one line`,
    )
  const ca = existingFile(env, 'PLINTH_CLUSTER_NATS_CA', "the CA certificate (PEM) that signed the NATS servers' certificates")
  const tls = tlsAsked || ca !== null ? Object.freeze({ ca }) : null
  // Off this machine, NATS is the cluster's trust boundary: who reaches it reads every record.
  const remote = servers.filter((server) => !isLoopbackHost(server.slice(0, server.lastIndexOf(':'))))
  if (remote.length > 0 && (tls === null || credentials === null))
    throw new ConfigError(
      tls === null ? 'PLINTH_CLUSTER_NATS' : 'PLINTH_CLUSTER_NATS_CREDS',
      `names ${remote.join(', ')}, which ${remote.length === 1 ? 'is' : 'are'} not on this machine, and the connection has ${tls === null && credentials === null ? 'neither credentials nor TLS' : tls === null ? 'no TLS' : 'no credentials'}: anyone on the network could read every record and write to the cluster. Run NATS with TLS and users (deploy/cluster/nats-server.conf), give the servers as tls://host:port with PLINTH_CLUSTER_NATS_CA (the CA that signed their certificates), and this node's credentials with PLINTH_CLUSTER_NATS_CREDS (a file: plinth nats-key makes one); see the README, "Several nodes"`,
    )
  return Object.freeze({
    servers: Object.freeze(servers),
    node,
    url,
    leaseMs: Number(lease),
    backups: backups === undefined ? null : resolve(backups),
    credentials,
    tls,
  })
}
