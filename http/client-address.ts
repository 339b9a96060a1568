import { BlockList, isIP } from 'node:net'
import type { Exchange } from './uws.js'

/** `::ffff:1.2.3.4` (an IPv4 client on a dual-stack socket, in any spelling) as `1.2.3.4`; other text as given. */
function unmapped(address: string): string {
  if (isIP(address) !== 6) return address
  const g = ipv6Groups(address)
  const mapped = g.slice(0, 5).every((group) => group === 0) && g[5] === 0xffff
  return mapped ? `${g[6] >> 8}.${g[6] & 255}.${g[7] >> 8}.${g[7] & 255}` : address
}

/** A hop as proxies may write it: `[2001:db8::1]:443` or `192.0.2.1:8080` without the port. */
function withoutPort(hop: string): string {
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(hop)
  if (bracketed !== null) return bracketed[1]
  const v4 = /^(\d{1,3}(?:\.\d{1,3}){3}):\d+$/.exec(hop)
  return v4 === null ? hop : v4[1]
}

function family(address: string): 'ipv4' | 'ipv6' | null {
  const kind = isIP(address)
  return kind === 4 ? 'ipv4' : kind === 6 ? 'ipv6' : null
}

/** The eight 16-bit groups of an IPv6 address (`::` expanded, an embedded IPv4 tail converted). */
function ipv6Groups(address: string): number[] {
  let text = address.toLowerCase().replace(/%.*$/, '')
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text)
  if (v4 !== null) {
    const [a, b, c, d] = v4.slice(1).map(Number)
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const middle = tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0')
  return [...left, ...middle, ...right].map((group) => parseInt(group, 16))
}

/**
 * The network an address counts against (spec: Anonymous limits): an IPv4 address itself, or the
 * /64 of an IPv6 address, written as `2001:db8:1:2::/64`.
 */
export function networkOf(address: string): string {
  const plain = unmapped(address)
  if (family(plain) !== 'ipv6') return plain
  return `${ipv6Groups(plain)
    .slice(0, 4)
    .map((g) => g.toString(16))
    .join(':')}::/64`
}

/**
 * Who the client is: the socket's peer, unless the peer is a trusted proxy (`PLINTH_TRUSTED_PROXIES`);
 * then the first `X-Forwarded-For` hop from the right that is not a trusted proxy. A client cannot
 * choose its address by sending the header: hops left of an untrusted one are never read.
 */
export class ClientAddress {
  readonly #trusted: BlockList | null

  constructor(proxies: readonly string[]) {
    if (proxies.length === 0) {
      this.#trusted = null
      return
    }
    const list = new BlockList()
    for (const entry of proxies) {
      const [address, bits] = entry.split('/')
      const type = family(address)!
      if (bits === undefined) list.addAddress(address, type)
      else list.addSubnet(address, Number(bits), type)
    }
    this.#trusted = list
  }

  #isTrusted(address: string): boolean {
    const type = family(address)
    return type !== null && this.#trusted !== null && this.#trusted.check(address, type)
  }

  /** The client's address; read during the synchronous part of the handler (it reads a header). */
  of(exchange: Exchange): string {
    const peer = unmapped(exchange.remoteAddress())
    if (this.#trusted === null || !this.#isTrusted(peer)) return peer
    // Every X-Forwarded-For line, joined (a proxy may add its own line rather than append to the client's).
    const hops = (exchange.captureHeaders()['x-forwarded-for'] ?? '')
      .split(',')
      .map((hop) => unmapped(withoutPort(hop.trim())))
      .filter((hop) => hop !== '')
    for (let i = hops.length - 1; i >= 0; i--) {
      const hop = hops[i]
      if (family(hop) === null) return peer
      if (!this.#isTrusted(hop)) return hop
    }
    return hops[0] ?? peer
  }
}
