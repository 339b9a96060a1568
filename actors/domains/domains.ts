import { randomBytes } from 'node:crypto'
import { hostOfAddress } from '../../core/text.js'
import { discover, type DomainConnectTemplate, type Discovery } from './domain-connect.js'
import type { OutboundGuard } from '../outbound.js'
import { Resolver } from 'node:dns/promises'
import { isIP } from 'node:net'
import { domainToASCII } from 'node:url'
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { newId } from '../../core/ids.js'
import { DNS_TIMEOUT_MS } from '../../core/limits.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { DomainRecord } from '../../core/schemas/domains.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { DomainsStore } from './tables.js'
import { appendAudit } from '../organization/audit.js'
import type { Mailboxes } from '../mailboxes.js'

/** What the operator configures for custom domains. */
export interface DomainSettings {
  /** The name customers point a CNAME at; null: not checked (ownership alone activates). */
  cnameTarget: string | null
  /** The addresses an apex domain's A/AAAA records must point at (with or instead of the CNAME). */
  addresses: readonly string[]
  /** DNS servers (`ip` or `ip:port`) verification asks; empty: the system's. */
  dnsServers: readonly string[]
  /** The operator's Domain Connect template and signing key (connect_domain's apply link); null: none. */
  domainConnect?: DomainConnectTemplate | null
}

/** The TXT record that proves ownership of `hostname`. */
export function challengeName(hostname: string): string {
  return `_platform-challenge.${hostname}`
}

/**
 * Custom domains (spec: Domains): the single writer of domain records. A domain is added pending
 * with a TXT token; verification asks DNS (the operator's resolvers) for the token first, then for the
 * routing (a CNAME to the operator's target, or A/AAAA records to its addresses); an active domain
 * serves the published site at once, through the hostname table (`reroute`).
 */
export class Domains {
  readonly #resolver: Resolver

  constructor(
    private readonly store: DomainsStore,
    private readonly clock: Clock,
    private readonly siteDomain: string,
    /** Hosts that are the platform's own (the API's). */
    private readonly platformHosts: ReadonlySet<string>,
    readonly settings: DomainSettings,
    /** Puts the website's hostnames in the table again after a domain changed. */
    private readonly reroute: (websiteId: string) => void,
    /**
     * The websites' mailboxes: a website's domain commands run one at a time (a verify's DNS answer
     * is never committed over a later change, and the table is rerouted in commit order).
     */
    private readonly mailboxes: Mailboxes,
  ) {
    this.#resolver = new Resolver({ timeout: DNS_TIMEOUT_MS, tries: 2 })
    if (settings.dnsServers.length > 0) this.#resolver.setServers([...settings.dnsServers])
  }

  /** A website's domains, in hostname order. */
  list(websiteId: string): DomainRecord[] {
    const out: DomainRecord[] = []
    for (const { value } of this.store.domainsByWebsite.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) {
      const record = this.store.domains.get(value)
      if (record !== undefined) out.push(record)
    }
    return out
  }

  get(websiteId: string, id: string): DomainRecord {
    const record = this.store.domains.get(id)
    if (record === undefined || record.websiteId !== websiteId)
      throw new ApiError('not_found', `Domain ${id} not found on website ${websiteId}`)
    return record
  }

  /** The active domain serving `hostname`, if any. */
  activeByHost(hostname: string): DomainRecord | undefined {
    const id = this.store.domainsByHost.get(hostname)
    const record = id === undefined ? undefined : this.store.domains.get(id)
    return record?.state === 'active' ? record : undefined
  }

  /** A hostname as it is stored: IDNA to punycode, lowercase, no trailing dot; 400 saying what is wrong. */
  normalize(raw: string): string {
    const trimmed = raw.trim().replace(/\.$/, '')
    const field = 'body.hostname'
    const host = hostOfAddress(trimmed)
    if (host !== null)
      throw new ApiError('validation', `${raw} is an address, not a domain name: send its host name alone (${host})`, { field })
    if (isIP(trimmed.replace(/^\[|\]$/g, '')) !== 0)
      throw new ApiError('validation', `${raw} is an IP address; a custom domain is a name (www.example.com)`, { field })
    const ascii = domainToASCII(trimmed.toLowerCase())
    if (
      ascii === '' ||
      ascii.length > 253 ||
      !ascii.includes('.') ||
      ascii.split('.').some((label) => label === '' || label.length > 63 || !/^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/.test(label))
    ) {
      throw new ApiError(
        'validation',
        `${raw} is not a valid domain name (letters, digits and hyphens in dot-separated labels, such as www.example.com)`,
        { field },
      )
    }
    // After IDNA, `127.1` and `0x7f.0.0.1` have become addresses: a top-level label is never numeric.
    const top = ascii.split('.').pop()!
    if (isIP(ascii) !== 0 || /^(?:\d+|0x[0-9a-f]*)$/.test(top))
      throw new ApiError('validation', `${raw} is an IP address; a custom domain is a name (www.example.com)`, { field })
    if (ascii === this.siteDomain || ascii.endsWith(`.${this.siteDomain}`) || this.platformHosts.has(ascii)) {
      throw new ApiError('validation', `${ascii} is one of the platform's own names; a custom domain is one you own elsewhere`, { field })
    }
    return ascii
  }

  add(actor: AuditActorValue, website: WebsiteRecord, raw: string): Promise<DomainRecord> {
    return this.mailboxes.run(website.id, async () => {
      const hostname = this.normalize(raw)
      const now = this.clock.now()
      return this.store.commit(() => {
        // Only a proven claim (verified or active) holds a name; an unproven one elsewhere blocks nobody,
        // and whoever proves the TXT record first takes it.
        if (this.store.domainsByWebsite.get([website.id, hostname]) !== undefined)
          throw new ApiError(
            'conflict',
            `${hostname} is already a domain of this website; verify it (POST …/domains/{id}/verify) or remove it`,
            { field: 'body.hostname' },
          )
        if (this.store.domainsByHost.get(hostname) !== undefined)
          throw new ApiError('conflict', `${hostname} is a verified domain of another website; its owner must remove it there first`, {
            field: 'body.hostname',
          })
        const record: DomainRecord = {
          v: 1,
          id: newId('dom'),
          websiteId: website.id,
          hostname,
          token: `platform-verify=${randomBytes(16).toString('hex')}`,
          state: 'pending',
          reason: null,
          primary: false,
          redirectPlatform: false,
          createdAt: now,
          checkedAt: null,
          activatedAt: null,
        }
        this.store.domains.put(record.id, record)
        this.store.domainsByWebsite.put([website.id, hostname], record.id)
        appendAudit(this.store, website.orgId, actor, now, {
          eventType: 'domain.added',
          resourceType: 'domain',
          resourceId: record.id,
          websiteId: website.id,
          metadata: { hostname },
        })
        return record
      })
    })
  }

  remove(actor: AuditActorValue, website: WebsiteRecord, id: string): Promise<void> {
    return this.mailboxes.run(website.id, async () => {
      const now = this.clock.now()
      await this.store.commit(() => {
        const record = this.get(website.id, id)
        this.store.domains.remove(id)
        if (this.store.domainsByHost.get(record.hostname) === id) this.store.domainsByHost.remove(record.hostname)
        this.store.domainsByWebsite.remove([website.id, record.hostname])
        appendAudit(this.store, website.orgId, actor, now, {
          eventType: 'domain.removed',
          resourceType: 'domain',
          resourceId: id,
          websiteId: website.id,
          metadata: { hostname: record.hostname },
        })
      })
      this.reroute(website.id)
    })
  }

  /** Removes every domain of a website being purged (inside the purge's commit): the names are free. */
  removeWebsite(websiteId: string): void {
    for (const record of this.list(websiteId)) {
      this.store.domains.remove(record.id)
      this.store.domainsByWebsite.remove([websiteId, record.hostname])
      if (this.store.domainsByHost.get(record.hostname) === record.id) this.store.domainsByHost.remove(record.hostname)
    }
  }

  /** Asks DNS: the TXT token first, then the routing. An active domain serves at once. */
  verify(actor: AuditActorValue, website: WebsiteRecord, id: string): Promise<DomainRecord> {
    return this.mailboxes.run(website.id, async () => {
      const record = this.get(website.id, id)
      const found = await this.#check(record)
      const now = this.clock.now()
      const next = await this.store.commit(() => {
        const current = this.get(website.id, id)
        let state = found.state
        let reason = found.reason
        const holder = this.store.domainsByHost.get(current.hostname)
        if ((state === 'verified' || state === 'active') && holder !== undefined && holder !== id) {
          state = 'failed'
          reason = `Another website proved ownership of ${current.hostname} first; its owner must remove it there`
        } else if (current.state === 'active' && state === 'pending') {
          // A live domain whose TXT record went away keeps serving; the reason says to put it back.
          state = 'active'
          reason = `The TXT record at ${challengeName(current.hostname)} is gone; put it back (it proves you own the name)`
        }
        if (state === 'verified' || state === 'active') this.store.domainsByHost.put(current.hostname, id)
        else if (holder === id) this.store.domainsByHost.remove(current.hostname)
        const updated: DomainRecord = {
          ...current,
          state,
          reason,
          checkedAt: now,
          activatedAt: state === 'active' ? (current.activatedAt ?? now) : current.activatedAt,
        }
        this.store.domains.put(id, updated)
        if (state === 'active' && current.state !== 'active') {
          appendAudit(this.store, website.orgId, actor, now, {
            eventType: 'domain.activated',
            resourceType: 'domain',
            resourceId: id,
            websiteId: website.id,
            metadata: { hostname: current.hostname },
          })
        }
        return updated
      })
      this.reroute(website.id)
      return next
    })
  }

  /** Makes an active domain the website's primary: its other active hostnames redirect to it (301). */
  setPrimary(actor: AuditActorValue, website: WebsiteRecord, id: string, redirectPlatform: boolean): Promise<DomainRecord> {
    return this.mailboxes.run(website.id, async () => {
      const now = this.clock.now()
      const next = await this.store.commit(() => {
        const record = this.get(website.id, id)
        if (record.state !== 'active')
          throw new ApiError(
            'conflict',
            `${record.hostname} is ${record.state}, not active: verify it first (POST …/domains/${id}/verify), then make it primary`,
          )
        for (const other of this.list(website.id)) {
          if (other.id !== id && other.primary) this.store.domains.put(other.id, { ...other, primary: false, redirectPlatform: false })
        }
        const updated = { ...record, primary: true, redirectPlatform }
        this.store.domains.put(id, updated)
        appendAudit(this.store, website.orgId, actor, now, {
          eventType: 'domain.primary_set',
          resourceType: 'domain',
          resourceId: id,
          websiteId: website.id,
          metadata: { hostname: record.hostname, redirectPlatform },
        })
        return updated
      })
      this.reroute(website.id)
      return next
    })
  }

  async #check(record: DomainRecord): Promise<Pick<DomainRecord, 'state' | 'reason'>> {
    const { settings } = this
    let txt: string[]
    try {
      txt = (await this.#resolver.resolveTxt(challengeName(record.hostname))).map((chunks) => chunks.join(''))
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code
      if (code === 'ENOTFOUND' || code === 'ENODATA')
        return { state: 'pending', reason: `No TXT record at ${challengeName(record.hostname)} yet` }
      return { state: record.state === 'active' ? 'active' : 'pending', reason: `DNS did not answer (${code ?? 'error'}); try again` }
    }
    if (!txt.includes(record.token)) {
      return txt.length === 0
        ? { state: 'pending', reason: `No TXT record at ${challengeName(record.hostname)} yet` }
        : {
            state: 'failed',
            reason: `The TXT record at ${challengeName(record.hostname)} holds ${JSON.stringify(txt.join(' '))}, not ${record.token}`,
          }
    }
    if (settings.cnameTarget === null && settings.addresses.length === 0) return { state: 'active', reason: null }
    const routed = await this.#routed(record.hostname)
    return routed === null ? { state: 'active', reason: null } : { state: 'verified', reason: routed }
  }

  /** null when the name points at the platform; otherwise what DNS shows instead. */
  async #routed(hostname: string): Promise<string | null> {
    const { cnameTarget, addresses } = this.settings
    const plain = (name: string) => name.toLowerCase().replace(/\.$/, '')
    if (cnameTarget !== null) {
      const cname = await this.#resolver.resolveCname(hostname).catch(() => [] as string[])
      if (cname.some((name) => plain(name) === plain(cnameTarget))) return null
    }
    if (addresses.length > 0) {
      const found = [
        ...(await this.#resolver.resolve4(hostname).catch(() => [] as string[])),
        ...(await this.#resolver.resolve6(hostname).catch(() => [] as string[])),
      ]
      if (found.length > 0 && found.every((address) => addresses.includes(address))) return null
      if (found.length > 0) return `${hostname} points at ${found.join(', ')}, not at ${addresses.join(', ')}`
    }
    return `${hostname} does not point at the platform yet`
  }

  /** What to put in DNS for a domain. */
  /**
   * Domain Connect for a website's domain: its DNS provider and control panel, and with the operator's
   * template a signed link that applies the records at the provider (the `target` of the CNAME, or the
   * first address).
   */
  async connect(websiteId: string, id: string, outbound: OutboundGuard): Promise<{ record: DomainRecord; discovery: Discovery }> {
    const record = this.get(websiteId, id)
    const target = this.settings.cnameTarget ?? this.settings.addresses[0] ?? ''
    const discovery = await discover(record.hostname, this.#resolver, outbound, this.settings.domainConnect ?? null, {
      target,
      token: record.token,
    })
    return { record, discovery }
  }

  records(record: DomainRecord): { type: string; name: string; value: string }[] {
    const { cnameTarget, addresses } = this.settings
    const out = [{ type: 'TXT', name: challengeName(record.hostname), value: record.token }]
    if (cnameTarget !== null) out.push({ type: 'CNAME', name: record.hostname, value: cnameTarget })
    for (const address of addresses) out.push({ type: isIP(address) === 6 ? 'AAAA' : 'A', name: record.hostname, value: address })
    return out
  }
}
