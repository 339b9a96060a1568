import type { Clock } from '../core/clock.js'
import type { Logger } from '../core/log.js'
import type { WebsiteRecord } from '../core/schemas/records.js'
import type { Store } from '../core/store/store.js'
import { ContentCache } from './content-cache.js'
import { OrganizationActor } from './organization.js'
import type { Gate } from '../render/gate.js'
import type { ToolPool } from '../render/tool-pool.js'
import type { Channel } from './website/snapshot.js'
import { WebsiteActor } from './website/actor.js'
import { labelOfHost, siteHostnames } from '../core/hostnames.js'
import { isServing } from '../core/website-state.js'

export interface RegistryOptions {
  store: Store
  clock: Clock
  log: Logger
  /** Sites live at `{label}.{siteDomain}` and `draft--{label}.{siteDomain}`. */
  siteDomain: string
  /** Labels no website may take (the API host's label when it sits under the site domain). */
  reservedLabels: ReadonlySet<string>
  /** Worker pools for formatting, AST edits and search of framework files. */
  tools: ToolPool
  /** The quality gate (lint, bundle, render in isolates); absent in the offline operator CLI. */
  gate?: Gate
  /** The published origin of a label, for canonical URLs in built documents. */
  siteOrigin(label: string): string
}

/**
 * Maps ids to actors and hostnames to channels. Nothing is activated at start: an actor is made on
 * its website's first command, or on the first request to one of its hosts (synchronously, from
 * LMDB's memory map: the label names the website, the actor prepares its snapshots), so start-up
 * costs the same for ten sites or a hundred thousand, and after a restart each site serves exactly
 * what it served before without a warm-up request. Organizations activate lazily too.
 */
export class Registry {
  readonly store: Store
  readonly clock: Clock
  readonly log: Logger
  readonly cache: ContentCache
  readonly #websites = new Map<string, WebsiteActor>()
  readonly #organizations = new Map<string, OrganizationActor>()
  /** Hostname (lowercase, no port) to the channel it serves. */
  readonly #hosts = new Map<string, Channel>()
  readonly #siteDomain: string
  readonly #reservedLabels: ReadonlySet<string>
  readonly #tools: ToolPool
  readonly #gate: Gate | undefined
  readonly #siteOrigin: (label: string) => string

  constructor(options: RegistryOptions) {
    this.#tools = options.tools
    this.#gate = options.gate
    this.#siteOrigin = options.siteOrigin
    this.store = options.store
    this.clock = options.clock
    this.log = options.log
    this.cache = new ContentCache(options.store)
    this.#siteDomain = options.siteDomain
    this.#reservedLabels = options.reservedLabels
  }

  /** The website's actor, or undefined when no such website exists. */
  website(id: string): WebsiteActor | undefined {
    const actor = this.#websites.get(id)
    if (actor !== undefined) return actor
    const record = this.store.websites.get(id)
    return record === undefined ? undefined : this.#activateWebsite(record)
  }

  /** The organization's actor, or undefined when no such organization exists. */
  organization(id: string): OrganizationActor | undefined {
    let actor = this.#organizations.get(id)
    if (actor === undefined) {
      const record = this.store.organizations.get(id)
      if (record === undefined) return undefined
      actor = new OrganizationActor(record, {
        store: this.store,
        clock: this.clock,
        reservedLabels: this.#reservedLabels,
        websiteCreated: (created) => void this.#activateWebsite(created),
      })
      this.#organizations.set(id, actor)
    }
    return actor
  }

  /**
   * The channel a hostname serves, if any: the hosting plane's one lookup per request for a site in
   * use. A site not active yet is activated here, on its first request, without awaiting anything.
   */
  channelForHost(host: string): Channel | undefined {
    const channel = this.#hosts.get(host)
    if (channel !== undefined) return channel
    const named = labelOfHost(host, this.#siteDomain)
    if (named === null) return undefined
    const id = this.store.labels.get(named.label)
    if (id === undefined || this.#websites.has(id)) return undefined
    this.website(id)
    return this.#hosts.get(host)
  }

  /** How many website actors are in memory. */
  get activeWebsites(): number {
    return this.#websites.size
  }

  /** Stops every build and waits for those in flight to wind down (shutdown); an unfinished build runs again when its site is next used after a restart. */
  async stopBuilds(): Promise<void> {
    await Promise.all([...this.#websites.values()].map((website) => website.builds?.stop()))
  }

  /** Resolves when every command queued on any actor so far has finished. */
  async drained(): Promise<void> {
    await Promise.all([...this.#websites.values(), ...this.#organizations.values()].map((a) => a.drained()))
  }

  #activateWebsite(record: WebsiteRecord): WebsiteActor {
    const actor: WebsiteActor = new WebsiteActor(record, {
      tools: this.#tools,
      gate: this.#gate,
      siteOrigin: this.#siteOrigin,
      log: this.log,
      store: this.store,
      clock: this.clock,
      reservedLabels: this.#reservedLabels,
      cache: this.cache,
      observer: { websiteChanged: (previous, next): void => this.#route(actor, previous, next) },
    })
    this.#websites.set(record.id, actor)
    this.#route(actor, null, record)
    return actor
  }

  /** Keeps the hostname table in step with a website's label and liveness. */
  #route(actor: WebsiteActor, previous: WebsiteRecord | null, next: WebsiteRecord): void {
    if (previous !== null) {
      const hosts = siteHostnames(previous.subdomain, this.#siteDomain)
      for (const host of [hosts.published, hosts.draft]) {
        const channel = this.#hosts.get(host)
        if (channel === actor.draft || channel === actor.published) this.#hosts.delete(host)
      }
    }
    if (isServing(next)) {
      const hosts = siteHostnames(next.subdomain, this.#siteDomain)
      this.#hosts.set(hosts.published, actor.published)
      this.#hosts.set(hosts.draft, actor.draft)
    }
  }
}
