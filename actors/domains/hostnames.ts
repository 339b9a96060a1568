import { ApiError } from '../../core/errors.js'
import { isPlatformLabel, labelOfHost, siteHostnames, versionOfHost } from '../../core/hostnames.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { DomainsStore } from './tables.js'
import { isServing, isSharing } from '../../core/website-state.js'
import { freeName } from '../names.js'
import { Channel } from '../website/snapshot.js'
import { WEBSITE_SERVING_TABLES, websitesOfChanges } from '../website/tables.js'
import type { DomainRecord } from '../../core/schemas/domains.js'

/** The channels of one website, as the hostname table routes them. */
export interface Routed {
  readonly draft: Channel
  readonly published: Channel
}

/** Told of every change to what a hostname serves (the serving threads' mirror, plinth/serve-threads.ts). */
export interface RoutingWatcher {
  /** The hostname now routes to another channel, or to none. */
  host(host: string): void
  /** What a website's channels serve changed in place: pointed at another version, its draft's waiting page, its password. */
  website(websiteId: string): void
}

/**
 * The one owner of hostnames: the platform-wide label index in the store (which website holds
 * `{label}.{siteDomain}`; custom domains will join it here) and the in-memory table from hostname to
 * the channel it serves. Actors claim and free labels only through it, inside their own commit (one
 * LMDB write transaction at a time, so a label checked free is still free when written).
 */
export class HostnameTable {
  /** Hostname (lowercase, no port) to the channel it serves: the hosting plane's one lookup. */
  readonly #hosts = new Map<string, Channel>()
  /** The custom hostnames routed for each website, so an unroute removes them whatever changed since. */
  readonly #customHosts = new Map<string, string[]>()
  /** Told of every change (null: nobody asks; a server with one serving thread). */
  watcher: RoutingWatcher | null = null

  constructor(
    private readonly store: DomainsStore,
    private readonly siteDomain: string,
    /** Labels no website may take (the API host's label when it sits under the site domain). */
    readonly reservedLabels: ReadonlySet<string>,
    /** The scheme of redirects to a primary domain (`https:` behind a TLS proxy). */
    private readonly redirectScheme = 'https:',
  ) {
    // A change made elsewhere (a cluster's log entry applied here), once the actors and passwords took it:
    // the watcher (the serving threads) is told what the touched websites serve now.
    store.changes.after(WEBSITE_SERVING_TABLES, (changes) => {
      for (const id of websitesOfChanges(changes)) this.serving(id)
    })
  }

  /** The scheme custom domains are served over (`https:` behind a TLS proxy): their addresses are given with it. */
  get siteScheme(): string {
    return this.redirectScheme
  }

  /** The channel routed for this exact hostname, if any (no folding; the hot path). */
  channel(host: string): Channel | undefined {
    return this.#hosts.get(host)
  }

  /** Every hostname routed now, with its channel (a new serving thread learns them all). */
  routed(): IterableIterator<[string, Channel]> {
    return this.#hosts.entries()
  }

  /** What a website's channels serve changed (after they were pointed, or its password changed): the watcher is told. */
  serving(websiteId: string): void {
    this.watcher?.website(websiteId)
  }

  /** The website id a site hostname names by its label, its vanity address, or an active custom domain (routed or not), or undefined. */
  websiteOfHost(host: string): string | undefined {
    const named = labelOfHost(host, this.siteDomain)
    if (named !== null) return this.store.labels.get(named.label)
    const vanity = this.vanityOfHost(host)
    if (vanity !== undefined) return vanity.websiteId
    const id = this.store.domainsByHost.get(host)
    const domain = id === undefined ? undefined : this.store.domains.get(id)
    return domain?.state === 'active' ? domain.websiteId : undefined
  }

  /** The website and version a version's own hostname (`v{N}--{label}`) names, or undefined. */
  versionOfHost(host: string): { websiteId: string; version: number } | undefined {
    const named = versionOfHost(host, this.siteDomain)
    const websiteId = named === null ? undefined : this.store.labels.get(named.label)
    return websiteId === undefined ? undefined : { websiteId, version: named!.version }
  }

  /**
   * The website a vanity address (`{label}.{namespace}.{siteDomain}`) names, and its workspace, when
   * that is the website's vanity address now; undefined for any other host.
   */
  vanityOfHost(host: string): { websiteId: string; orgId: string } | undefined {
    const suffix = `.${this.siteDomain}`
    if (!host.endsWith(suffix)) return undefined
    const parts = host.slice(0, -suffix.length).split('.')
    if (parts.length !== 2) return undefined
    const [label, name] = parts as [string, string]
    const orgId = this.store.namespaceNames.get(name)
    if (orgId === undefined) return undefined
    const chosen = this.store.vanityLabels.get([orgId, label])
    const websiteId = chosen ?? this.store.labels.get(label)
    const record = websiteId === undefined ? undefined : this.store.websites.get(websiteId)
    return record !== undefined && this.vanityLabel(record) === label ? { websiteId: record.id, orgId } : undefined
  }

  /**
   * A website's vanity address now (`{label}.{namespace}.{siteDomain}`), or null: its workspace has no
   * namespace, or it shares files (a storage site's one address is its own). The label is the one chosen
   * with rename_vanity, else its subdomain (made from its name, and unique on the platform); a label
   * another website of the namespace chose is that website's.
   */
  vanityHost(record: WebsiteRecord): string | null {
    const label = this.vanityLabel(record)
    const namespace = label === null ? undefined : this.store.namespaces.get(record.orgId)
    return namespace === undefined ? null : `${label}.${namespace.name}.${this.siteDomain}`
  }

  /** The label of a website's vanity address, or null (no namespace, a storage site, or a label another website chose). */
  vanityLabel(record: WebsiteRecord): string | null {
    if (record.kind === 'storage' || this.store.namespaces.get(record.orgId) === undefined) return null
    const chosen = this.store.vanityOf.get(record.id)
    const label = chosen ?? record.subdomain
    const holder = this.store.vanityLabels.get([record.orgId, label])
    // A chosen label follows the website within its workspace; moved to another, it falls back to its subdomain.
    if (chosen !== undefined && holder !== record.id) return holder === undefined ? record.subdomain : null
    return holder === undefined || holder === record.id ? label : null
  }

  /** The website holding a label (`{label}.{siteDomain}`), if any: for namespaces, which share the name space. */
  holderOfLabel(label: string): string | undefined {
    return this.store.labels.get(label)
  }

  /** Whether a website may take this label now (inside a commit): no website's, no namespace's, not reserved. */
  isFree(label: string): boolean {
    return (
      this.store.labels.get(label) === undefined &&
      this.store.namespaceNames.get(label) === undefined &&
      !this.reservedLabels.has(label) &&
      !isPlatformLabel(label)
    )
  }

  /** A free label from `base` (a random suffix when taken); inside a commit. */
  freeLabel(base: string, maxChars: number): string {
    return freeName(base, maxChars, (label) => this.isFree(label))
  }

  /** Gives `label` to a website; 409 when another holds it. Inside the commit that records it. */
  claim(label: string, websiteId: string, field: string, hint: string): void {
    const holder = this.store.labels.get(label)
    if (holder !== undefined && holder !== websiteId) throw new ApiError('conflict', `subdomain "${label}" is taken; ${hint}`, { field })
    if (this.store.namespaceNames.get(label) !== undefined)
      throw new ApiError(
        'conflict',
        `subdomain "${label}" is a workspace's namespace (sites and namespaces share one name space); ${hint}`,
        {
          field,
        },
      )
    this.store.labels.put(label, websiteId)
  }

  /** Frees a website's label (inside the commit that moves it elsewhere); the next claim may take it. */
  free(label: string, websiteId: string): void {
    if (this.store.labels.get(label) === websiteId) this.store.labels.remove(label)
  }

  /**
   * Keeps the in-memory table in step with a website's label, active custom domains and liveness
   * (after its commit, or after a domain changed). With a primary domain, the website's other active
   * domains (and its platform host, when asked) get a channel that only redirects there.
   */
  route(routed: Routed, previous: WebsiteRecord | null, next: WebsiteRecord): void {
    if (previous !== null) this.unroute(routed, previous)
    if (isSharing(next)) {
      // A storage website's one host serves its shared files.
      this.#set(
        siteHostnames(next.subdomain, this.siteDomain).published,
        Object.assign(new Channel('published', next.id), { sharing: true }),
      )
      return
    }
    if (!isServing(next)) return
    const hosts = siteHostnames(next.subdomain, this.siteDomain)
    const domains = this.#activeDomains(next.id)
    const primary = domains.find((d) => d.primary)
    const redirect =
      primary === undefined
        ? null
        : Object.assign(new Channel('published', next.id), { redirectOrigin: `${this.redirectScheme}//${primary.hostname}` })
    this.#set(hosts.published, redirect !== null && primary!.redirectPlatform ? redirect : routed.published)
    this.#set(hosts.draft, routed.draft)
    const custom: string[] = []
    // The vanity address serves what the platform host serves (a primary domain's redirect included).
    const vanity = this.vanityHost(next)
    if (vanity !== null) {
      this.#set(vanity, redirect !== null && primary!.redirectPlatform ? redirect : routed.published)
      custom.push(vanity)
    }
    for (const domain of domains) {
      this.#set(domain.hostname, redirect !== null && domain !== primary ? redirect : routed.published)
      custom.push(domain.hostname)
    }
    if (custom.length > 0) this.#customHosts.set(next.id, custom)
  }

  /** Takes a website's channels out of the in-memory table, as `record` routed them (its custom hosts too). */
  unroute(_routed: Routed, record: WebsiteRecord): void {
    const hosts = siteHostnames(record.subdomain, this.siteDomain)
    for (const host of [hosts.published, hosts.draft, ...(this.#customHosts.get(record.id) ?? [])]) {
      if (this.#hosts.get(host)?.websiteId === record.id) {
        this.#hosts.delete(host)
        this.watcher?.host(host)
      }
    }
    this.#customHosts.delete(record.id)
  }

  #set(host: string, channel: Channel): void {
    this.#hosts.set(host, channel)
    this.watcher?.host(host)
  }

  #activeDomains(websiteId: string): DomainRecord[] {
    const out: DomainRecord[] = []
    for (const { value } of this.store.domainsByWebsite.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) {
      const domain = this.store.domains.get(value)
      if (domain?.state === 'active') out.push(domain)
    }
    return out
  }
}
