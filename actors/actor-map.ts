// The website and organization actors in memory: each made on first use from the store, evicted when idle.
import type { OrganizationRecord, WebsiteRecord } from '../core/schemas/records.js'
import type { StoreReader } from '../core/store/reader.js'
import type { HostnameTable } from './domains/hostnames.js'
import type { OrganizationActor } from './organization/organization.js'
import type { WebsiteActor } from './website/actor.js'
import { WEBSITE_SERVING_TABLES, websitesOfChanges } from './website/tables.js'

/**
 * Maps ids to actors. An actor is made on its first use, synchronously from the store (the registry's
 * factories wire in its services); a website's hostnames are routed while its actor is in memory.
 */
export class ActorMap {
  readonly #websites = new Map<string, WebsiteActor>()
  readonly #organizations = new Map<string, OrganizationActor>()
  readonly #store: StoreReader
  readonly #hostnames: HostnameTable
  readonly #newWebsite: (record: WebsiteRecord) => WebsiteActor
  readonly #newOrganization: (record: OrganizationRecord) => OrganizationActor

  constructor(
    store: StoreReader,
    hostnames: HostnameTable,
    factories: {
      website: (record: WebsiteRecord) => WebsiteActor
      organization: (record: OrganizationRecord) => OrganizationActor
    },
  ) {
    this.#store = store
    this.#hostnames = hostnames
    this.#newWebsite = factories.website
    this.#newOrganization = factories.organization
    // A change made elsewhere (a cluster's log entry applied here): what it touched is made again from the store.
    store.changes.listen(WEBSITE_SERVING_TABLES, (changes) => {
      for (const id of websitesOfChanges(changes)) this.#reload(id)
    })
    store.changes.listen(['organizations'], (changes) => {
      for (const { key } of changes) this.#organizations.delete(key as string)
    })
  }

  /** The website's actor, or undefined when no such website exists. */
  website(id: string): WebsiteActor | undefined {
    const actor = this.#websites.get(id)
    if (actor !== undefined) {
      actor.mailbox.touched = true
      return actor
    }
    const record = this.#store.websites.get(id)
    return record === undefined ? undefined : this.activateWebsite(record)
  }

  /** The organization's actor, or undefined when no such organization exists. */
  organization(id: string): OrganizationActor | undefined {
    let actor = this.#organizations.get(id)
    if (actor !== undefined) actor.mailbox.touched = true
    else {
      const record = this.#store.organizations.get(id)
      if (record === undefined) return undefined
      actor = this.#newOrganization(record)
      this.#organizations.set(id, actor)
    }
    return actor
  }

  /** Makes a website's actor from its record (a first use, or a website just created) and routes its hostnames. */
  activateWebsite(record: WebsiteRecord): WebsiteActor {
    const actor = this.#newWebsite(record)
    this.#websites.set(record.id, actor)
    this.#hostnames.route(actor, null, record)
    return actor
  }

  /**
   * Makes a website's actor again from the store if one is in memory (after a change made elsewhere to
   * what it serves): its hostnames are routed afresh, and a website gone from the store leaves them.
   */
  #reload(id: string): void {
    const actor = this.#websites.get(id)
    if (actor === undefined) return
    this.#hostnames.unroute(actor, actor.record)
    this.#websites.delete(id)
    actor.retire()
    const record = this.#store.websites.get(id)
    if (record !== undefined) this.activateWebsite(record)
  }

  /** The website's actor if it is in memory; never makes one, and does not count as a use. */
  loaded(id: string): WebsiteActor | undefined {
    return this.#websites.get(id)
  }

  /** Drops a purged website's actor, unless another has taken its place meanwhile. */
  forget(id: string, website: WebsiteActor): void {
    if (this.#websites.get(id) === website) this.#websites.delete(id)
  }

  /**
   * One sweep: evicts every actor that nothing holds (no request between authorization and answer, no
   * queued command, no build) and that nobody asked for, by API or on its hosts, since the previous
   * sweep. A website's hostnames leave the table and its snapshots let go of their content; the next
   * request or command makes a new actor from the store. Returns how many actors were evicted.
   */
  evictIdle(): number {
    let evicted = 0
    for (const [id, actor] of this.#websites) {
      if (!actor.idle) continue
      if (actor.mailbox.touched || actor.draft.used || actor.published.used) {
        actor.mailbox.touched = actor.draft.used = actor.published.used = false
        continue
      }
      this.#hostnames.unroute(actor, actor.record)
      this.#websites.delete(id)
      actor.retire()
      evicted++
    }
    for (const [id, actor] of this.#organizations) {
      if (!actor.mailbox.idle) continue
      if (actor.mailbox.touched) {
        actor.mailbox.touched = false
        continue
      }
      this.#organizations.delete(id)
      actor.retire()
      evicted++
    }
    return evicted
  }

  /** The website actors in memory. */
  websites(): IterableIterator<WebsiteActor> {
    return this.#websites.values()
  }

  /** The organization actors in memory. */
  organizations(): IterableIterator<OrganizationActor> {
    return this.#organizations.values()
  }

  /** How many website actors are in memory. */
  get websiteCount(): number {
    return this.#websites.size
  }

  /** How many organization actors are in memory. */
  get organizationCount(): number {
    return this.#organizations.size
  }
}
