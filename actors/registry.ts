import type { Clock } from '../core/clock.js'
import type { Logger } from '../core/log.js'
import type { WebsiteRecord } from '../core/schemas/records.js'
import type { Store } from '../core/store/store.js'
import { OrganizationActor } from './organization.js'
import { WebsiteActor } from './website.js'

export interface RegistryOptions {
  store: Store
  clock: Clock
  log: Logger
  /** Labels no website may take (the API host's label when it sits under the site domain). */
  reservedLabels: ReadonlySet<string>
}

/**
 * Maps ids to actors, activating each lazily from LMDB on first use, and keeps the in-memory
 * table of hostnames (subdomain label to website) that the hosting plane reads.
 */
export class Registry {
  readonly store: Store
  readonly clock: Clock
  readonly log: Logger
  readonly #websites = new Map<string, WebsiteActor>()
  readonly #organizations = new Map<string, OrganizationActor>()
  /** Subdomain label to website id, for websites that are not deleted. */
  readonly #labels = new Map<string, string>()
  readonly #reservedLabels: ReadonlySet<string>

  constructor(options: RegistryOptions) {
    this.store = options.store
    this.clock = options.clock
    this.log = options.log
    this.#reservedLabels = options.reservedLabels
    for (const { value } of this.store.websites.range({ start: '', end: '\uffff' })) this.#track(null, value)
  }

  /** The website's actor, or undefined when no such website exists. */
  website(id: string): WebsiteActor | undefined {
    let actor = this.#websites.get(id)
    if (actor === undefined) {
      const record = this.store.websites.get(id)
      if (record === undefined) return undefined
      actor = this.#activateWebsite(record)
    }
    return actor
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
        websiteCreated: (created) => {
          this.#activateWebsite(created)
          this.#track(null, created)
        },
      })
      this.#organizations.set(id, actor)
    }
    return actor
  }

  /** The website id serving `label`, if a live (not deleted) website holds it. */
  websiteIdForLabel(label: string): string | undefined {
    return this.#labels.get(label)
  }

  /** Resolves when every command queued on any actor so far has finished. */
  async drained(): Promise<void> {
    await Promise.all([...this.#websites.values(), ...this.#organizations.values()].map((a) => a.drained()))
  }

  #activateWebsite(record: WebsiteRecord): WebsiteActor {
    const actor = new WebsiteActor(record, {
      store: this.store,
      clock: this.clock,
      reservedLabels: this.#reservedLabels,
      observer: { websiteChanged: (previous, next) => this.#track(previous, next) },
    })
    this.#websites.set(record.id, actor)
    return actor
  }

  #track(previous: WebsiteRecord | null, next: WebsiteRecord): void {
    if (previous !== null && this.#labels.get(previous.subdomain) === previous.id) this.#labels.delete(previous.subdomain)
    if (next.deletedAt === null) this.#labels.set(next.subdomain, next.id)
  }
}
