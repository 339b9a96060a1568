import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { newId } from '../../core/ids.js'
import type { LegacyPageRecord } from '../../core/schemas/cms.js'
import type { CmsStore } from './tables.js'
import type { Mailboxes } from '../mailboxes.js'

export interface LegacyPageFields {
  title: string
  slug: string
  content: string
  format: 'markdown' | 'html'
  description: string
}

/**
 * Legacy page records (deprecated: stored and returned, never rendered). The single writer of
 * `legacyPages` and `legacyPagesBySlug`; each command runs in its website's mailbox, so a slug check
 * and the write it guards never interleave with another command on that website.
 */
export class LegacyPages {
  constructor(
    private readonly store: CmsStore,
    private readonly clock: Clock,
    private readonly mailboxes: Mailboxes,
  ) {}

  /** A page by id (`pg_…`) or slug, or undefined when the website has none such. */
  find(websiteId: string, idOrSlug: string): LegacyPageRecord | undefined {
    const id = idOrSlug.startsWith('pg_') ? idOrSlug : this.store.legacyPagesBySlug.get([websiteId, idOrSlug])
    const record = id === undefined ? undefined : this.store.legacyPages.get(id)
    return record?.websiteId === websiteId ? record : undefined
  }

  create(websiteId: string, fields: LegacyPageFields): Promise<LegacyPageRecord> {
    return this.mailboxes.run(websiteId, async () => {
      const now = this.clock.now()
      const record: LegacyPageRecord = { v: 1, id: newId('pg'), websiteId, ...fields, createdAt: now, updatedAt: now }
      await this.store.commit(() => {
        if (this.store.legacyPagesBySlug.get([websiteId, fields.slug]) !== undefined) throw slugTaken(fields.slug)
        this.store.legacyPages.put(record.id, record)
        this.store.legacyPagesBySlug.put([websiteId, fields.slug], record.id)
      })
      return record
    })
  }

  update(websiteId: string, idOrSlug: string, change: (current: LegacyPageRecord) => LegacyPageFields): Promise<LegacyPageRecord> {
    return this.mailboxes.run(websiteId, async () => {
      const current = this.#existing(websiteId, idOrSlug)
      const next: LegacyPageRecord = { ...current, ...change(current), updatedAt: this.clock.now() }
      await this.store.commit(() => {
        const holder = this.store.legacyPagesBySlug.get([websiteId, next.slug])
        if (holder !== undefined && holder !== current.id) throw slugTaken(next.slug)
        if (next.slug !== current.slug) {
          this.store.legacyPagesBySlug.remove([websiteId, current.slug])
          this.store.legacyPagesBySlug.put([websiteId, next.slug], current.id)
        }
        this.store.legacyPages.put(current.id, next)
      })
      return next
    })
  }

  delete(websiteId: string, idOrSlug: string): Promise<void> {
    return this.mailboxes.run(websiteId, async () => {
      const current = this.#existing(websiteId, idOrSlug)
      await this.store.commit(() => {
        this.store.legacyPages.remove(current.id)
        this.store.legacyPagesBySlug.remove([websiteId, current.slug])
      })
    })
  }

  #existing(websiteId: string, idOrSlug: string): LegacyPageRecord {
    const record = this.find(websiteId, idOrSlug)
    if (record === undefined) throw new ApiError('not_found', `No legacy page ${idOrSlug} on this website`)
    return record
  }
}

function slugTaken(slug: string): ApiError {
  return new ApiError('conflict', `A legacy page with slug ${slug} exists`, { field: 'body.slug' })
}
