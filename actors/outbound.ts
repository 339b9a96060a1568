import { blockListOf } from '../core/config-values.js'
import { counters } from '../core/metrics.js'
import { Resolver } from 'node:dns/promises'
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { BlockList, isIP } from 'node:net'
import { OUTBOUND_DNS_TIMEOUT_MS, OUTBOUND_RESPONSE_MAX_BYTES, OUTBOUND_TIMEOUT_MS } from '../core/limits.js'

/** Why an outbound request was not made, or failed: said in the delivery log, never thrown at a visitor. */
export class OutboundError extends Error {
  constructor(
    message: string,
    /** The guard refused the target (as opposed to a network failure). */
    readonly refused: boolean,
  ) {
    super(message)
    this.name = 'OutboundError'
  }
}

export interface OutboundResponse {
  status: number
  /** Response headers (lowercase names): a redirect's location, the type. */
  headers: Record<string, string | string[] | undefined>
  /** At most the request's `maxBytes` (OUTBOUND_RESPONSE_MAX_BYTES by default); the rest is cut. */
  body: Buffer
  truncated: boolean
}

/**
 * A name's addresses from DNS, with a deadline: not `dns.lookup`, which holds one of libuv's four pool
 * threads for as long as a silent name server takes, stalling file and crypto work meanwhile.
 */
async function resolveWithDeadline(host: string, servers: readonly string[] = []): Promise<{ address: string; family: number }[]> {
  const resolver = new Resolver({ timeout: OUTBOUND_DNS_TIMEOUT_MS, tries: 1 })
  if (servers.length > 0) resolver.setServers([...servers])
  const [v4, v6] = await Promise.allSettled([resolver.resolve4(host), resolver.resolve6(host)])
  const out = [
    ...(v4.status === 'fulfilled' ? v4.value.map((address) => ({ address, family: 4 })) : []),
    ...(v6.status === 'fulfilled' ? v6.value.map((address) => ({ address, family: 6 })) : []),
  ]
  if (out.length === 0)
    throw Object.assign(new Error(`${host} has no address`), {
      code: v4.status === 'rejected' ? ((v4.reason as NodeJS.ErrnoException).code ?? 'ENOTFOUND') : 'ENODATA',
    })
  return out
}

/** Resolves names with the given DNS servers (PLINTH_DNS_SERVERS), or the system's when none. */
export function dnsResolver(servers: readonly string[]): (host: string) => Promise<{ address: string; family: number }[]> {
  return (host) => resolveWithDeadline(host, servers)
}

/** Addresses no request made for a user may reach unless the operator allows them. */
function blockedRanges(): BlockList {
  const list = new BlockList()
  const v4: [string, number][] = [
    ['0.0.0.0', 8], // "this" network
    ['10.0.0.0', 8], // private
    ['100.64.0.0', 10], // carrier-grade NAT
    ['127.0.0.0', 8], // loopback
    ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
    ['172.16.0.0', 12], // private
    ['192.0.0.0', 24], // IETF protocol assignments
    ['192.168.0.0', 16], // private
    ['198.18.0.0', 15], // benchmarking
    ['224.0.0.0', 4], // multicast
    ['240.0.0.0', 4], // reserved, broadcast
  ]
  for (const [address, bits] of v4) list.addSubnet(address, bits, 'ipv4')
  const v6: [string, number][] = [
    ['::', 96], // unspecified, loopback and the deprecated IPv4-compatible ::a.b.c.d
    ['64:ff9b:1::', 48], // local-use NAT64
    ['64:ff9b::', 96], // NAT64 to IPv4
    ['100::', 64], // discard
    ['fc00::', 7], // unique local (cloud metadata fd00:ec2::254 among them)
    ['fe80::', 10], // link-local
    ['ff00::', 8], // multicast
  ]
  for (const [address, bits] of v6) list.addSubnet(address, bits, 'ipv6')
  return list
}

/**
 * The one SSRF guard every outbound request made for a user goes through (form webhooks now, URL
 * imports later): http(s) only; the host resolved once and the connection made to that address (no
 * second lookup an attacker's DNS could answer differently); loopback, private, link-local, CGNAT,
 * multicast and metadata addresses refused unless the operator allows them
 * (`PLINTH_OUTBOUND_ALLOW`); no redirect followed; a short timeout; the answer cut at 64 KiB.
 */
export class OutboundGuard {
  readonly #blocked = blockedRanges()
  readonly #allowed: BlockList

  constructor(
    allow: readonly string[],
    private readonly resolve: (host: string) => Promise<{ address: string; family: number }[]> = resolveWithDeadline,
  ) {
    this.#allowed = blockListOf(allow)
  }

  /** Whether a resolved address may be reached. */
  permits(address: string): boolean {
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4'
    if (this.#allowed.check(address, family)) return true
    if (this.#blocked.check(address, family)) return false
    // An IPv4-mapped IPv6 address is the IPv4 address it maps.
    const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address)
    return mapped === null || this.permits(mapped[1])
  }

  /** One request made for a user, through the guard; counted (and its failures) for /metrics. */
  async request(
    target: string,
    init: { method: string; headers: Record<string, string>; body: string | Buffer; maxBytes?: number },
  ): Promise<OutboundResponse> {
    counters.outboundRequests++
    try {
      return await this.#request(target, init)
    } catch (error) {
      counters.outboundFailures++
      throw error
    }
  }

  async #request(
    target: string,
    init: { method: string; headers: Record<string, string>; body: string | Buffer; maxBytes?: number },
  ): Promise<OutboundResponse> {
    const maxBytes = init.maxBytes ?? OUTBOUND_RESPONSE_MAX_BYTES
    let url: URL
    try {
      url = new URL(target)
    } catch {
      throw new OutboundError(`${target} is not a URL`, true)
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:')
      throw new OutboundError(`only http and https are allowed, not ${url.protocol}`, true)
    if (url.username !== '' || url.password !== '') throw new OutboundError('credentials in the URL are not allowed', true)
    const host = url.hostname.replace(/^\[|\]$/g, '')
    let addresses: string[]
    if (isIP(host) !== 0) addresses = [host]
    else {
      try {
        addresses = (await this.resolve(host)).map((a) => a.address)
      } catch (error) {
        throw new OutboundError(`${host} did not resolve (${(error as NodeJS.ErrnoException).code ?? 'DNS error'})`, false)
      }
    }
    // Every address the name has must be public: a name with one private address is refused whole.
    const refused = addresses.find((a) => !this.permits(a))
    if (addresses.length === 0 || refused !== undefined) {
      // Never the address a name resolved to: that would map the private network for whoever asks.
      const what = isIP(host) !== 0 ? `${host} is not a public internet address` : `${host} is not reachable from here`
      throw new OutboundError(`${what}: requests made for users go only to public internet addresses`, true)
    }
    const address = addresses[0]
    // Errors of the connection name the host asked for, never the address it resolved to.
    const named = (message: string) => (isIP(host) !== 0 ? message : message.split(address).join(host))
    const secure = url.protocol === 'https:'
    const port = url.port === '' ? (secure ? 443 : 80) : Number(url.port)
    return new Promise<OutboundResponse>((resolve, reject) => {
      const options = {
        host: address,
        port,
        path: `${url.pathname}${url.search}`,
        method: init.method,
        headers: { ...init.headers, host: url.host, 'content-length': String(Buffer.byteLength(init.body)) },
        // The certificate is checked against the name, though the connection goes to the address.
        servername: isIP(host) === 0 ? host : undefined,
        timeout: OUTBOUND_TIMEOUT_MS,
      }
      const onResponse = (res: IncomingMessage) => {
        const chunks: Buffer[] = []
        let size = 0
        let truncated = false
        res.on('data', (chunk: Buffer) => {
          if (truncated) return
          size += chunk.length
          if (size > maxBytes) {
            chunks.push(chunk.subarray(0, chunk.length - (size - maxBytes)))
            truncated = true
            res.destroy()
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), truncated })
          } else chunks.push(chunk)
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks), truncated }))
        res.on('error', (error) => (truncated ? undefined : reject(new OutboundError(named(error.message), false))))
      }
      const req = secure ? httpsRequest(options, onResponse) : httpRequest(options, onResponse)
      const deadline = setTimeout(() => req.destroy(new Error(`no answer within ${OUTBOUND_TIMEOUT_MS / 1000} s`)), OUTBOUND_TIMEOUT_MS)
      req.on('timeout', () => req.destroy(new Error(`no answer within ${OUTBOUND_TIMEOUT_MS / 1000} s`)))
      req.on('error', (error) => reject(new OutboundError(named(error.message), false)))
      req.on('close', () => clearTimeout(deadline))
      req.end(init.body)
    })
  }
}
