// Purging a website for good: one transaction, then idempotent steps a crash can resume.
import { crashPoint } from '../../core/crash.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { WebsiteStore } from './tables.js'
import type { WebsiteActor } from './actor.js'
import { removePurgeRecord } from './record.js'

/** What a purge reaches beyond the website actor. */
export interface PurgeDeps {
  store: WebsiteStore
  /** The website's actor, or undefined when no such website exists. */
  website(id: string): WebsiteActor | undefined
  /** Inside the website's purge commit: the rows other concerns keep of it (forms, domains, passwords). */
  removeRows(websiteId: string): void
  /** After the commit: the actor leaves the hostname table and memory. */
  forget(website: WebsiteActor, record: WebsiteRecord): void
  /** The steps after the commit, each idempotent, in order: shared files, CMS, assets. */
  removeFiles(websiteId: string, orgId: string): Promise<void>
  removeCms(websiteId: string): Promise<void>
  removeAssets(websiteId: string): Promise<void>
}

/**
 * Removes a website for good (an anonymous site replaced or expired, trash expiry, a claim's move).
 * The website's own transaction removes its record, versions, builds, form submissions, custom
 * domains and passwords and writes a purge record; its shared files, CMS content and assets follow,
 * each step idempotent, and the record goes last. A crash anywhere leaves either the whole website
 * or a purge record that the next start finishes (`resume`) before the server listens.
 */
export class Purges {
  constructor(private readonly deps: PurgeDeps) {}

  async purge(id: string, actor: AuditActorValue): Promise<void> {
    const website = this.deps.website(id)
    if (website === undefined) return
    const record = website.record
    await website.purge(actor, () => this.deps.removeRows(id))
    this.deps.forget(website, record)
    await this.#finish(id, record.orgId)
  }

  /** Finishes the purges a crash interrupted (start-up, before the first request); returns how many. */
  async resume(): Promise<number> {
    let finished = 0
    for (const { value } of this.deps.store.purges.range({ start: '', end: '\uffff' })) {
      await this.#finish(value.websiteId, value.orgId)
      finished++
    }
    return finished
  }

  async #finish(id: string, orgId: string): Promise<void> {
    const { store } = this.deps
    crashPoint('purge:website-removed')
    await this.deps.removeFiles(id, orgId)
    crashPoint('purge:files-removed')
    await this.deps.removeCms(id)
    crashPoint('purge:cms-removed')
    await this.deps.removeAssets(id)
    crashPoint('purge:assets-removed')
    await store.commit(() => removePurgeRecord(store, id))
  }
}
