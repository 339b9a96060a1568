import type { Clock } from '../core/clock.js'
import { ApiError } from '../core/errors.js'
import type { Principal } from '../core/principal.js'
import type { WebsiteRecord } from '../core/schemas/records.js'
import type { UpdateWebsiteInput } from '../core/schemas/website.js'
import type { Store } from '../core/store/store.js'
import { appendAudit, auditActor } from './audit.js'
import { Mailbox } from './mailbox.js'
import { assertUsableLabel } from './names.js'

/** Callbacks the registry gives an actor so that hostname tables follow committed state. */
export interface WebsiteObserver {
  websiteChanged(previous: WebsiteRecord | null, next: WebsiteRecord): void
}

export interface WebsiteActorDeps {
  store: Store
  clock: Clock
  observer: WebsiteObserver
  reservedLabels: ReadonlySet<string>
}

/**
 * The only writer of one website. Commands run through the mailbox; each is one LMDB transaction,
 * and the in-memory record moves to the new state only after that transaction is durable.
 */
export class WebsiteActor {
  readonly #mailbox = new Mailbox()
  #record: WebsiteRecord

  constructor(
    record: WebsiteRecord,
    private readonly deps: WebsiteActorDeps,
  ) {
    this.#record = record
  }

  get id(): string {
    return this.#record.id
  }

  /** The committed state. */
  get record(): WebsiteRecord {
    return this.#record
  }

  drained(): Promise<void> {
    return this.#mailbox.drained()
  }

  /** Name, slug and description; hostnames are unaffected (spec: websites.update). */
  update(principal: Principal, input: UpdateWebsiteInput): Promise<WebsiteRecord> {
    return this.#command(principal, (current, now) => {
      const { store } = this.deps
      const next: WebsiteRecord = { ...current, updatedAt: now }
      const changed: string[] = []
      if (input.name !== undefined && input.name !== current.name) {
        next.name = input.name
        changed.push('name')
      }
      if (input.description !== undefined && input.description !== current.description) {
        next.description = input.description
        changed.push('description')
      }
      if (input.slug !== undefined && input.slug !== current.slug) {
        const owner = store.slugs.get([current.orgId, input.slug])
        if (owner !== undefined && owner !== current.id) {
          throw new ApiError('conflict', `slug "${input.slug}" is taken by another website of this organization; choose another`, { field: 'body.slug' })
        }
        store.slugs.remove([current.orgId, current.slug])
        store.slugs.put([current.orgId, input.slug], current.id)
        next.slug = input.slug
        changed.push('slug')
      }
      if (changed.length === 0) return { next: current }
      return { next, audit: { eventType: 'website.updated', metadata: { changed } } }
    })
  }

  /** Soft delete: off every hostname, listed with `scope=trash`, restorable. */
  delete(principal: Principal): Promise<WebsiteRecord> {
    return this.#command(principal, (current, now) => {
      if (current.deletedAt !== null) return { next: current }
      const { store } = this.deps
      store.websitesByOrg.remove([current.orgId, 'live', current.seq])
      store.websitesByOrg.put([current.orgId, 'trash', current.seq], current.id)
      return { next: { ...current, deletedAt: now, updatedAt: now }, audit: { eventType: 'website.deleted' } }
    }, { allowDeleted: true })
  }

  restore(principal: Principal): Promise<WebsiteRecord> {
    return this.#command(principal, (current, now) => {
      if (current.deletedAt === null) return { next: current }
      const { store } = this.deps
      store.websitesByOrg.remove([current.orgId, 'trash', current.seq])
      store.websitesByOrg.put([current.orgId, 'live', current.seq], current.id)
      return { next: { ...current, deletedAt: null, updatedAt: now }, audit: { eventType: 'website.restored' } }
    }, { allowDeleted: true })
  }

  /** Moves the site to a new label; the old label is free for anyone at once. */
  renameSubdomain(principal: Principal, label: string): Promise<WebsiteRecord> {
    return this.#command(principal, (current, now) => {
      if (label === current.subdomain) return { next: current }
      assertUsableLabel(label, this.deps.reservedLabels, 'body.label')
      const { store } = this.deps
      if (store.labels.get(label) !== undefined) {
        throw new ApiError('conflict', `subdomain "${label}" is taken; choose another label`, { field: 'body.label' })
      }
      store.labels.remove(current.subdomain)
      store.labels.put(label, current.id)
      return {
        next: { ...current, subdomain: label, updatedAt: now },
        audit: { eventType: 'website.subdomain_renamed', metadata: { from: current.subdomain, to: label } },
      }
    })
  }

  #command(
    principal: Principal,
    change: (
      current: WebsiteRecord,
      now: number,
    ) => { next: WebsiteRecord; audit?: { eventType: 'website.updated' | 'website.deleted' | 'website.restored' | 'website.subdomain_renamed'; metadata?: Record<string, unknown> } },
    options: { allowDeleted?: boolean } = {},
  ): Promise<WebsiteRecord> {
    return this.#mailbox.run(async () => {
      const current = this.#record
      if (current.deletedAt !== null && options.allowDeleted !== true) throw deletedError(current.id)
      const { store, clock } = this.deps
      const now = clock.now()
      const result = await store.commit(() => {
        const outcome = change(current, now)
        if (outcome.next === current) return outcome
        store.websites.put(current.id, outcome.next)
        if (outcome.audit) {
          appendAudit(store, current.orgId, auditActor(principal), now, {
            ...outcome.audit,
            resourceType: 'website',
            resourceId: current.id,
            websiteId: current.id,
          })
        }
        return outcome
      })
      if (result.next !== current) {
        this.#record = result.next
        this.deps.observer.websiteChanged(current, result.next)
      }
      return result.next
    })
  }
}

/** The error for a command on a website in the trash. */
export function deletedError(id: string): ApiError {
  return new ApiError('conflict', `website ${id} is in the trash; restore it with POST /v1/websites/${id}/restore first`, {
    reason: 'website_deleted',
  })
}
