// The routing table as the serving threads know it: which channel each host serves, sent as batches of changes.
import type { HostnameTable } from '../actors/domains/hostnames.js'
import type { SitePasswords } from '../actors/website/passwords.js'
import type { Channel } from '../actors/website/snapshot.js'
import type { RouteOp } from '../http/serve-thread-protocol.js'

/**
 * What the threads were last told, per channel (a number, so several hosts of one channel share one copy
 * on a thread; its fingerprint; how many hosts route to it) and per host (its channel), and what changed
 * since: hosts the hostname table re-routed, and websites whose channels changed in place (their hosts
 * are looked at again). `changes` turns those into route operations: a channel described when new or
 * changed, a host pointed at its channel or at none, a channel dropped when no host routes to it.
 */
export class ThreadRoutes {
  readonly #ids = new WeakMap<Channel, number>()
  #nextId = 1
  readonly #sentChannels = new Map<number, { fingerprint: string; hosts: number }>()
  readonly #sentHosts = new Map<string, number>()
  /** Hosts the threads were told of, by website (a website's change in place re-sends them). */
  readonly #hostsOf = new Map<string, Set<string>>()
  readonly #websiteOfHost = new Map<string, string>()
  readonly #dirtyHosts = new Set<string>()
  readonly #dirtyWebsites = new Set<string>()

  constructor(
    private readonly hostnames: Pick<HostnameTable, 'channel'>,
    private readonly passwords: Pick<SitePasswords, 'locked'>,
  ) {}

  hostChanged(host: string): void {
    this.#dirtyHosts.add(host)
  }

  websiteChanged(websiteId: string): void {
    this.#dirtyWebsites.add(websiteId)
  }

  /** The whole table as sent so far, for a thread started again. */
  all(): RouteOp[] {
    const ops: RouteOp[] = []
    const described = new Set<number>()
    for (const [host, id] of this.#sentHosts) {
      const channel = this.hostnames.channel(host)
      if (channel === undefined) continue
      if (!described.has(id)) {
        described.add(id)
        ops.push(this.#describe(id, channel, this.passwords.locked(channel.websiteId)))
      }
      ops.push({ op: 'host', host, id })
    }
    return ops
  }

  /** What changed since the last call: per dirty host, its channel (when new or changed) and its route. */
  changes(): RouteOp[] {
    for (const websiteId of this.#dirtyWebsites) for (const host of this.#hostsOf.get(websiteId) ?? []) this.#dirtyHosts.add(host)
    this.#dirtyWebsites.clear()
    if (this.#dirtyHosts.size === 0) return []
    const ops: RouteOp[] = []
    const released: number[] = []
    for (const host of this.#dirtyHosts) {
      const channel = this.hostnames.channel(host)
      const before = this.#sentHosts.get(host)
      if (channel === undefined) {
        if (before === undefined) continue
        ops.push({ op: 'host', host, id: null })
        this.#sentHosts.delete(host)
        this.#forgetHost(host)
        released.push(before)
        continue
      }
      const id = this.#idOf(channel)
      const locked = this.passwords.locked(channel.websiteId)
      const fingerprint = `${channel.key}\n${channel.waiting}\n${channel.redirectOrigin}\n${channel.sharing}\n${locked}`
      const sent = this.#sentChannels.get(id)
      if (sent === undefined || sent.fingerprint !== fingerprint) {
        ops.push(this.#describe(id, channel, locked))
        if (sent === undefined) this.#sentChannels.set(id, { fingerprint, hosts: 0 })
        else sent.fingerprint = fingerprint
      }
      if (before !== id) {
        ops.push({ op: 'host', host, id })
        this.#sentChannels.get(id)!.hosts++
        this.#sentHosts.set(host, id)
        if (before !== undefined) released.push(before)
        this.#forgetHost(host)
        let hosts = this.#hostsOf.get(channel.websiteId)
        if (hosts === undefined) this.#hostsOf.set(channel.websiteId, (hosts = new Set()))
        hosts.add(host)
        this.#websiteOfHost.set(host, channel.websiteId)
      }
    }
    this.#dirtyHosts.clear()
    for (const id of released) {
      const sent = this.#sentChannels.get(id)
      if (sent !== undefined && --sent.hosts === 0) {
        this.#sentChannels.delete(id)
        ops.push({ op: 'drop', id })
      }
    }
    return ops
  }

  #describe(id: number, channel: Channel, locked: boolean): RouteOp {
    return {
      op: 'channel',
      id,
      kind: channel.kind,
      websiteId: channel.websiteId,
      redirectOrigin: channel.redirectOrigin,
      sharing: channel.sharing,
      waiting: channel.waiting,
      locked,
      served: channel.served,
    }
  }

  #idOf(channel: Channel): number {
    let id = this.#ids.get(channel)
    if (id === undefined) this.#ids.set(channel, (id = this.#nextId++))
    return id
  }

  #forgetHost(host: string): void {
    const websiteId = this.#websiteOfHost.get(host)
    if (websiteId === undefined) return
    this.#websiteOfHost.delete(host)
    const hosts = this.#hostsOf.get(websiteId)
    if (hosts !== undefined && hosts.delete(host) && hosts.size === 0) this.#hostsOf.delete(websiteId)
  }
}
