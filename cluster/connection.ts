// How a node reaches NATS: its credentials (from a file, never a value the process list shows) and TLS.
import { readFileSync } from 'node:fs'
import { checkServerIdentity, type PeerCertificate } from 'node:tls'
import { credentialsKind } from '../core/config-values.js'
import {
  connect,
  credsAuthenticator,
  nkeyAuthenticator,
  usernamePasswordAuthenticator,
  type ConnectionOptions,
  type NatsConnection,
} from '@nats-io/transport-node'
import type { Logger } from '../core/log.js'

/** What core/config.ts reads from PLINTH_CLUSTER_NATS_CREDS, _CA, _CERT and _KEY. */
export interface NatsAccess {
  /** A file holding the node's NATS credentials: a `.creds` file (JWT and seed), an nkey seed (`SU…`), or `user:password` on one line. */
  credentials: string | null
  /** TLS towards the servers, with the CA that signed their certificates (null: the system's). */
  tls: { ca: string | null } | null
}

/**
 * The certificate check of a connection to one of `servers`: the NATS client hands Node no server name
 * when it connects to an IP address (Node then checks the name "localhost"), so the certificate, which
 * must chain to PLINTH_CLUSTER_NATS_CA, must also name one of the servers' addresses as given.
 */
function namesAServer(servers: readonly string[]): (host: string, cert: PeerCertificate) => Error | undefined {
  const hosts = new Set(
    servers.map((server) =>
      server
        .slice(0, server.lastIndexOf(':'))
        .replace(/^\[|\]$/g, '')
        .toLowerCase(),
    ),
  )
  return (host, cert) => {
    const names = (cert.subjectaltname ?? '').split(',').map((entry) =>
      entry
        .trim()
        .replace(/^(DNS|IP Address):/i, '')
        .toLowerCase(),
    )
    if (names.some((name) => hosts.has(name))) return undefined
    // A name the client did give (a host name, not an address) is checked as Node checks it.
    if (host !== '' && host !== 'localhost') return checkServerIdentity(host, cert)
    return new Error(
      `the NATS server's certificate names ${cert.subjectaltname ?? 'nothing'}, none of PLINTH_CLUSTER_NATS's addresses (${[...hosts].join(', ')})`,
    )
  }
}

/** The connection options for a node's access: an authenticator read from its file, and TLS when asked for. */
export function natsOptions(access: NatsAccess & { servers: readonly string[] }): Pick<ConnectionOptions, 'authenticator' | 'tls'> {
  const options: Pick<ConnectionOptions, 'authenticator' | 'tls'> = {}
  if (access.credentials !== null) {
    const text = readFileSync(access.credentials, 'utf8')
    const kind = credentialsKind(text)
    if (kind === 'creds') options.authenticator = credsAuthenticator(new TextEncoder().encode(text))
    else if (kind === 'nkey') options.authenticator = nkeyAuthenticator(new TextEncoder().encode(text.trim()))
    else if (kind === 'password') {
      const line = text.trim()
      const colon = line.indexOf(':')
      options.authenticator = usernamePasswordAuthenticator(line.slice(0, colon), line.slice(colon + 1))
    }
  }
  if (access.tls !== null)
    options.tls = {
      // Passed through to Node's tls.connect by the client.
      ...({ checkServerIdentity: namesAServer(access.servers) } as object),
      ...(access.tls.ca === null ? {} : { caFile: access.tls.ca }),
    }
  return options
}

/** The oldest nats-server the cluster runs on (JetStream clustering, KV with compare-and-set). */
const MIN_SERVER = [2, 9, 0]

/**
 * Connects a node to NATS, retrying with a line naming the servers each time until one answers; refused
 * credentials or a certificate that does not verify stop it at once, naming what to check.
 */
export async function connectToNats(
  settings: NatsAccess & { servers: readonly string[]; node: string },
  logger: Logger,
): Promise<NatsConnection> {
  let nc: NatsConnection | undefined
  for (let attempt = 1; nc === undefined; attempt++) {
    try {
      nc = await connect({
        ...natsOptions(settings),
        servers: [...settings.servers],
        name: `plinth ${settings.node}`,
        maxReconnectAttempts: -1,
        timeout: 2000,
        // Only the servers given: one the cluster announces might be reached without TLS or credentials.
        ignoreClusterUpdates: true,
      })
    } catch (error) {
      // Refused credentials or a certificate that does not verify will not mend by waiting.
      if (/authorization|authentication|certificate|self.signed|unable to verify|tls/i.test(String(error)))
        throw new Error(
          `NATS (PLINTH_CLUSTER_NATS ${settings.servers.join(',')}) refused this node: ${String(error)}. Check PLINTH_CLUSTER_NATS_CREDS and PLINTH_CLUSTER_NATS_CA against the servers' configuration`,
        )
      logger.warn('cannot reach NATS (PLINTH_CLUSTER_NATS); trying again in 1 s', {
        servers: settings.servers.join(','),
        attempt,
        error: String(error),
      })
      await new Promise((resolve) => setTimeout(resolve, 1000))
    }
  }
  return nc
}

/** Refuses a server older than the cluster runs on, or one without JetStream, naming what to change. */
export function checkServer(nc: NatsConnection): void {
  const info = nc.info!
  const version = info.version.split('.').map(Number)
  const older = MIN_SERVER.findIndex((part, i) => (version[i] ?? 0) !== part)
  if (older !== -1 && (version[older] ?? 0) < MIN_SERVER[older]!)
    throw new Error(`nats-server ${info.version} at ${nc.getServer()} is older than ${MIN_SERVER.join('.')}, which Plinth's cluster needs`)
  if (info.jetstream !== true)
    throw new Error(
      `nats-server ${info.version} at ${nc.getServer()} runs without JetStream; start it with \`jetstream {}\` in its configuration (-js)`,
    )
}

/**
 * "JetStream is not enabled", "JetStream system temporarily unavailable" (10008), "no suitable peers for
 * placement" (10005: a stream's replicas asked for before enough servers joined the cluster) or a timeout
 * while the servers elect a leader: tried again for up to 30 s. (CI met the second, and the third on a
 * loaded machine, at a node's start beside three nats-servers just started, and the node exited 1.)
 */
export async function retryElection<T>(fn: () => Promise<T>, logger: Logger): Promise<T> {
  const deadline = Date.now() + 30_000
  for (;;) {
    try {
      return await fn()
    } catch (error) {
      if (
        Date.now() > deadline ||
        !/not enabled|temporarily unavailable|no suitable peers|timeout|no responders|leader/i.test(String(error))
      )
        throw error
      logger.warn('NATS JetStream is electing a leader; trying again', { error: String(error) })
      await new Promise((resolve) => setTimeout(resolve, 500))
    }
  }
}
