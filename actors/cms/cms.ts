// The CMS actor: commands in each website's mailbox, the item commands and reads; collection and field commands (schema.ts) run through it.
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { newId } from '../../core/ids.js'
import { CMS_RERENDER_DELAY_MS } from '../../core/limits.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { CollectionRecord, FieldDef, ItemRecord } from '../../core/schemas/cms.js'
import { CMS_CACHED, type CmsStore } from './tables.js'
import type { Mailboxes } from '../mailboxes.js'
import { appendAudit } from '../organization/audit.js'
import { pageContent } from './content.js'
import { ItemCache } from './item-cache.js'
import { queryItems, type ItemQuery } from './item-query.js'
import { SLUG, itemPublishedAt, itemStatus, slugify, valueProblem, type FieldInput, type ValueLookups } from './rules.js'
import {
  addField,
  collectionOf,
  collectionsOf,
  createCollection,
  deleteCollection,
  deleteField,
  updateCollection,
  updateField,
  type CollectionChange,
  type CollectionInput,
  type FieldChange,
  type SchemaContext,
} from './schema.js'

/**
 * The CMS of websites (spec: CMS, deprecated; kept working for sites that use it): collections with
 * typed fields, and items validated against them, soft-deleted and restored, published, scheduled or
 * unpublished. Schema changes and publications are audited. Commands that check and then write run one
 * at a time per website, in the website's mailbox (uniqueness of slugs and unique fields holds; a
 * website's collections, items and references never leave it), so websites never wait on each other.
 */
export class Cms {
  /** Each collection's items, decoded once and kept in step by the writes below (the one writer). */
  readonly #cache: ItemCache
  /** What value checks look up: the website's assets and items. */
  readonly #lookups: ValueLookups
  /** What the collection and field commands (schema.ts) use. */
  readonly #schema: SchemaContext
  /**
   * Told after changes sites can see (items written, published, due, fields changed): the website
   * re-renders. Coalesced per website: a burst of item writes is one call, CMS_RERENDER_DELAY_MS after the last.
   */
  onChange: ((websiteId: string) => void) | null = null
  readonly #pending = new Map<string, NodeJS.Timeout>()

  constructor(
    private readonly store: CmsStore,
    private readonly clock: Clock,
    /** The websites' mailboxes (the registry's), shared with the website's other concerns outside its actor. */
    private readonly mailboxes: Mailboxes,
    /** An asset of the website, for image/file/gallery values (kind and existence). */
    private readonly asset: (websiteId: string, assetId: string) => { kind: string; status: string } | undefined,
  ) {
    this.#cache = new ItemCache(store)
    // An item written elsewhere (a cluster's log entry applied here): its collection is read again on next use.
    store.changes.listen(CMS_CACHED, (changes) => {
      for (const { value } of changes) {
        if (value === null) this.#cache.clear()
        else this.#cache.delete((value as ItemRecord).collectionId)
      }
    })
    this.#lookups = { asset: (websiteId, assetId) => this.asset(websiteId, assetId), item: (itemId) => this.store.items.get(itemId) }
    this.#schema = { store, clock, cache: this.#cache, lookups: this.#lookups }
  }

  #changed(websiteId: string): void {
    clearTimeout(this.#pending.get(websiteId))
    this.#pending.set(
      websiteId,
      setTimeout(() => {
        this.#pending.delete(websiteId)
        this.onChange?.(websiteId)
      }, CMS_RERENDER_DELAY_MS).unref(),
    )
  }

  /** Drops the re-renders not told yet (shutdown). */
  close(): void {
    for (const timer of this.#pending.values()) clearTimeout(timer)
  }

  /** Scheduled items whose time came: their websites re-render (the item reads as published from then on). */
  async publishDue(): Promise<number> {
    const now = this.clock.now()
    const due: { key: unknown; id: string }[] = []
    for (const { key, value } of this.store.itemsScheduled.range({ start: [0, ''], end: [now + 1, ''] })) {
      due.push({ key, id: value })
      if (due.length >= 1000) break
    }
    if (due.length === 0) return 0
    await this.store.commit(() => {
      for (const { key } of due) this.store.itemsScheduled.remove(key as [number, string])
    })
    const websites = new Set<string>()
    for (const { id } of due) {
      const item = this.store.items.get(id)
      if (item !== undefined) websites.add(item.websiteId)
    }
    for (const websiteId of websites) this.#changed(websiteId)
    return due.length
  }

  // Collections

  collections(websiteId: string): CollectionRecord[] {
    return collectionsOf(this.store, websiteId)
  }

  /** A collection by id or slug, or 404. */
  collection(websiteId: string, idOrSlug: string): CollectionRecord {
    return collectionOf(this.store, websiteId, idOrSlug)
  }

  createCollection(websiteId: string, orgId: string, actor: AuditActorValue, input: CollectionInput): Promise<CollectionRecord> {
    return this.mailboxes.run(websiteId, () => createCollection(this.#schema, websiteId, orgId, actor, input))
  }

  updateCollection(
    websiteId: string,
    orgId: string,
    actor: AuditActorValue,
    idOrSlug: string,
    change: CollectionChange,
  ): Promise<CollectionRecord> {
    return this.mailboxes.run(websiteId, () => updateCollection(this.#schema, websiteId, orgId, actor, idOrSlug, change))
  }

  /** Deletes a collection with its items; 409 naming the fields of other collections that refer to it. */
  deleteCollection(websiteId: string, orgId: string, actor: AuditActorValue, idOrSlug: string): Promise<void> {
    return this.mailboxes.run(websiteId, () => deleteCollection(this.#schema, websiteId, orgId, actor, idOrSlug))
  }

  /** Everything of a website's CMS and its legacy page records (the website's purge). */
  removeWebsite(websiteId: string): Promise<void> {
    return this.mailboxes.run(
      websiteId,
      async () => {
        const collections = this.collections(websiteId)
        const pages = [...this.store.legacyPagesBySlug.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })]
        if (collections.length === 0 && pages.length === 0) return
        await this.store.commit(() => {
          for (const collection of collections) {
            for (const { key, value } of this.store.itemsByCollection.range({
              start: [collection.id, ''],
              end: [collection.id, '\uffff'],
            })) {
              const item = this.store.items.get(value)
              if (item !== undefined) this.store.itemsBySlug.remove([collection.id, item.slug])
              this.store.items.remove(value)
              this.store.itemsByCollection.remove(key)
            }
            this.store.collections.remove(collection.id)
            this.store.collectionsBySlug.remove([websiteId, collection.slug])
            this.#cache.delete(collection.id)
          }
          for (const { key, value } of pages) {
            this.store.legacyPages.remove(value)
            this.store.legacyPagesBySlug.remove(key)
          }
        })
      },
      { evenIfGone: true },
    )
  }

  // What page code reads (`cms` of @platform)

  /**
   * The website's CMS content for a build, as JSON: collection key (the slug camelCased,
   * `blog-posts` as `blogPosts`) to its published items, references resolved one level (the published
   * item or null), assets to `{id, url, filename, contentType, altText, kind, width?, height?}`. At check
   * time (`phase: 'check'`) two placeholder items a collection that satisfy the schema stand in.
   */
  contentFor(websiteId: string, origin: string, phase: 'check' | 'build'): { data: string; types: string } {
    const now = this.clock.now()
    const collections = this.collections(websiteId)
    return pageContent(this.store, this.#cache, collections, websiteId, origin, phase, now)
  }

  // Fields

  addField(
    websiteId: string,
    orgId: string,
    actor: AuditActorValue,
    idOrSlug: string,
    input: FieldInput,
  ): Promise<{ collection: CollectionRecord; field: FieldDef }> {
    return this.mailboxes.run(websiteId, () => addField(this.#schema, websiteId, orgId, actor, idOrSlug, input))
  }

  /**
   * Changes a field. A new type converts every existing value (409 naming the items whose values
   * would not convert); `required` and `unique` are checked against the items; options must keep every
   * value in use.
   */
  updateField(
    websiteId: string,
    orgId: string,
    actor: AuditActorValue,
    fieldId: string,
    change: FieldChange,
  ): Promise<{ collection: CollectionRecord; field: FieldDef }> {
    return this.mailboxes.run(websiteId, () => updateField(this.#schema, websiteId, orgId, actor, fieldId, change))
  }

  /** Deletes a field and its values. */
  deleteField(websiteId: string, orgId: string, actor: AuditActorValue, fieldId: string): Promise<CollectionRecord> {
    return this.mailboxes.run(websiteId, () => deleteField(this.#schema, websiteId, orgId, actor, fieldId))
  }

  /** Checks an item's values against its collection: every message names the field. */
  #validate(collection: CollectionRecord, values: Record<string, unknown>, self: string | null): void {
    for (const key of Object.keys(values)) {
      if (!collection.fields.some((f) => f.key === key)) {
        throw new ApiError(
          'validation',
          `${collection.slug} has no field ${key}; its fields are ${collection.fields.map((f) => f.key).join(', ') || 'none'}`,
          { field: `body.values.${key}` },
        )
      }
    }
    for (const field of collection.fields) {
      const value = values[field.key]
      if (value === undefined || value === null || value === '') {
        if (field.required)
          throw new ApiError('validation', `${field.key} (${field.name}) is required`, { field: `body.values.${field.key}` })
        continue
      }
      const problem = valueProblem(this.#lookups, collection.websiteId, field, value)
      if (problem !== null)
        throw new ApiError('validation', `${field.key} (${field.type}) must be ${problem}`, { field: `body.values.${field.key}` })
      if (field.unique) {
        const text = JSON.stringify(value)
        const clash = [...this.#cache.all(collection.id)].find(
          (i) => i.id !== self && i.deletedAt === null && JSON.stringify(i.values[field.key]) === text,
        )
        if (clash !== undefined)
          throw new ApiError('conflict', `${field.key} must be unique; item ${clash.slug} already has ${text}`, {
            field: `body.values.${field.key}`,
          })
      }
    }
  }

  // Items

  /** An item of this website (deleted ones too), or 404. */
  item(websiteId: string, itemId: string): ItemRecord {
    const item = this.store.items.get(itemId)
    if (item === undefined || item.websiteId !== websiteId) throw new ApiError('not_found', `No item ${itemId} on this website`)
    return item
  }

  /** published, scheduled or draft, at `now` (a schedule that came due is published). */
  status(item: ItemRecord, now = this.clock.now()): 'published' | 'scheduled' | 'draft' {
    return itemStatus(item, now)
  }

  /** When the item became published (a due schedule's time), or null. */
  publishedAt(item: ItemRecord, now = this.clock.now()): number | null {
    return itemPublishedAt(item, now)
  }

  createItem(
    websiteId: string,
    idOrSlug: string,
    input: { slug?: string; values: Record<string, unknown>; publish?: boolean; publishAt?: number },
  ): Promise<ItemRecord> {
    return this.mailboxes.run(websiteId, async () => {
      const collection = this.collection(websiteId, idOrSlug)
      this.#validate(collection, input.values, null)
      const titleish = collection.fields.find((f) => f.type === 'text' && typeof input.values[f.key] === 'string')
      const slug =
        input.slug ?? (slugify(titleish === undefined ? '' : (input.values[titleish.key] as string)) || `item-${Date.now().toString(36)}`)
      if (!SLUG.test(slug))
        throw new ApiError('validation', `slug "${slug}" is lowercase letters and digits with single hyphens`, { field: 'body.slug' })
      if (this.store.itemsBySlug.get([collection.id, slug]) !== undefined)
        throw new ApiError('conflict', `${collection.slug} already has an item with slug ${slug}`, { field: 'body.slug' })
      const now = this.clock.now()
      if (input.publishAt !== undefined && input.publishAt <= now)
        throw new ApiError('validation', 'publishAt is in the past; publish now with publish: true', { field: 'body.publishAt' })
      let position = 0
      for (const existing of this.#cache.all(collection.id)) position = Math.max(position, existing.position)
      const item: ItemRecord = {
        v: 1,
        id: newId('itm'),
        websiteId,
        collectionId: collection.id,
        slug,
        values: { ...input.values },
        publishedAt: input.publish === true ? now : null,
        publishAt: input.publishAt ?? null,
        deletedAt: null,
        position: position + 1,
        createdAt: now,
        updatedAt: now,
      }
      await this.store.commit(() => {
        this.store.items.put(item.id, item)
        this.store.itemsByCollection.put([collection.id, item.id], item.id)
        this.store.itemsBySlug.put([collection.id, slug], item.id)
        if (item.publishAt !== null) this.store.itemsScheduled.put([item.publishAt, item.id], item.id)
      })
      this.#cache.written(item)
      if (item.publishedAt !== null) this.#changed(websiteId)
      return item
    })
  }

  updateItem(
    websiteId: string,
    itemId: string,
    change: { slug?: string; values?: Record<string, unknown>; position?: number },
  ): Promise<ItemRecord> {
    return this.mailboxes.run(websiteId, async () => {
      const item = this.item(websiteId, itemId)
      if (item.deletedAt !== null)
        throw new ApiError('conflict', `Item ${itemId} is deleted; restore it first (POST …/items/${itemId}/restore)`)
      const collection = this.collection(websiteId, item.collectionId)
      const values = { ...item.values, ...(change.values ?? {}) }
      for (const [key, value] of Object.entries(change.values ?? {})) if (value === null) delete values[key]
      this.#validate(collection, values, item.id)
      const slug = change.slug ?? item.slug
      if (!SLUG.test(slug))
        throw new ApiError('validation', `slug "${slug}" is lowercase letters and digits with single hyphens`, { field: 'body.slug' })
      const holder = this.store.itemsBySlug.get([collection.id, slug])
      if (holder !== undefined && holder !== item.id)
        throw new ApiError('conflict', `${collection.slug} already has an item with slug ${slug}`, { field: 'body.slug' })
      const next = { ...item, slug, values, position: change.position ?? item.position, updatedAt: this.clock.now() }
      await this.store.commit(() => {
        if (slug !== item.slug) {
          this.store.itemsBySlug.remove([collection.id, item.slug])
          this.store.itemsBySlug.put([collection.id, slug], item.id)
        }
        this.store.items.put(item.id, next)
      })
      this.#cache.written(next)
      if (this.status(next) === 'published') this.#changed(websiteId)
      return next
    })
  }

  /** Soft delete (restore brings it back; its slug stays taken meanwhile). */
  setDeleted(websiteId: string, itemId: string, deleted: boolean): Promise<ItemRecord> {
    return this.mailboxes.run(websiteId, async () => {
      const item = this.item(websiteId, itemId)
      const next = { ...item, deletedAt: deleted ? (item.deletedAt ?? this.clock.now()) : null, updatedAt: this.clock.now() }
      await this.store.commit(() => this.store.items.put(item.id, next))
      this.#cache.written(next)
      if (this.status(next) === 'published') this.#changed(websiteId)
      return next
    })
  }

  /** publish now, unpublish, or schedule at `publishAt`; audited. */
  setPublished(
    websiteId: string,
    orgId: string,
    actor: AuditActorValue,
    itemId: string,
    action: { action: 'publish' | 'unpublish' | 'schedule'; publishAt?: number },
  ): Promise<ItemRecord> {
    return this.mailboxes.run(websiteId, async () => {
      const item = this.item(websiteId, itemId)
      if (item.deletedAt !== null) throw new ApiError('conflict', `Item ${itemId} is deleted; restore it first`)
      const now = this.clock.now()
      let next: ItemRecord
      if (action.action === 'publish') next = { ...item, publishedAt: this.publishedAt(item, now) ?? now, publishAt: null }
      else if (action.action === 'unpublish') next = { ...item, publishedAt: null, publishAt: null }
      else {
        if (action.publishAt === undefined || action.publishAt <= now)
          throw new ApiError('validation', 'schedule needs publishAt in the future', { field: 'body.publishAt' })
        next = { ...item, publishedAt: null, publishAt: action.publishAt }
      }
      next.updatedAt = now
      const eventType =
        action.action === 'publish' ? 'cms.item_published' : action.action === 'unpublish' ? 'cms.item_unpublished' : 'cms.item_scheduled'
      await this.store.commit(() => {
        this.store.items.put(item.id, next)
        if (item.publishAt !== null) this.store.itemsScheduled.remove([item.publishAt, item.id])
        if (next.publishAt !== null) this.store.itemsScheduled.put([next.publishAt, item.id], item.id)
        appendAudit(this.store, orgId, actor, now, {
          eventType,
          resourceType: 'item',
          resourceId: item.id,
          websiteId,
          metadata: { slug: item.slug, ...(action.publishAt === undefined ? {} : { publishAt: new Date(action.publishAt).toISOString() }) },
        })
      })
      this.#cache.written(next)
      if (action.action !== 'schedule') this.#changed(websiteId)
      return next
    })
  }

  /**
   * Items of a collection: not deleted (unless asked), filtered (every operator, `and` or `or`),
   * searched in text fields and the slug, sorted (position by default), a page at a time.
   */
  listItems(websiteId: string, idOrSlug: string, options: ItemQuery): { items: ItemRecord[]; total: number } {
    const collection = this.collection(websiteId, idOrSlug)
    return queryItems(collection, this.#cache.all(collection.id), this.clock.now(), options)
  }

  /** Items of this website whose reference fields point at `itemId`. */
  backreferences(websiteId: string, itemId: string): { item: ItemRecord; collection: CollectionRecord; field: string }[] {
    const target = this.item(websiteId, itemId)
    const out: { item: ItemRecord; collection: CollectionRecord; field: string }[] = []
    for (const collection of this.collections(websiteId)) {
      const fields = collection.fields.filter((f) => f.collectionId === target.collectionId)
      if (fields.length === 0) continue
      for (const item of this.#cache.sorted(collection.id)) {
        if (item.deletedAt !== null) continue
        for (const field of fields) {
          const value = item.values[field.key]
          if (value === itemId || (Array.isArray(value) && value.includes(itemId))) out.push({ item, collection, field: field.key })
        }
      }
    }
    return out
  }
}
