// How a node reaches NATS: its credentials (from a file, never a value the process list shows) and TLS.
import { readFileSync } from 'node:fs'
import { checkServerIdentity, type PeerCertificate } from 'node:tls'
import { credentialsKind } from '../core/config-values.js'
import { credsAuthenticator, nkeyAuthenticator, usernamePasswordAuthenticator, type ConnectionOptions } from '@nats-io/transport-node'

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
