import type { Clock } from '../core/clock.js'
import { ApiError } from '../core/errors.js'
import { newId } from '../core/ids.js'
import type { AuditActorValue } from '../core/schemas/audit.js'
import { FIELD_TYPES, type CollectionRecord, type FieldDef, type FieldType, type ItemRecord } from '../core/schemas/cms.js'
import type { Store } from '../core/store/store.js'
import { appendAudit } from './audit.js'
import { Mailbox } from './mailbox.js'

/** Item properties that are not fields: no field key may take one of these names. */
const RESERVED_KEYS = new Set([
  'id',
  'slug',
  'publishedAt',
  'publishAt',
  'createdAt',
  'updatedAt',
  'position',
  'collectionId',
  'status',
  'deletedAt',
])
const KEY = /^[a-zA-Z][a-zA-Z0-9_]{0,63}$/
const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/
const TEXT_MAX = 10_000
const RICH_TEXT_MAX = 200_000
const JSON_MAX = 100_000
const MULTI_MAX = 200

export const FILTER_OPERATORS = [
  'eq',
  'neq',
  'contains',
  'startsWith',
  'endsWith',
  'gt',
  'gte',
  'lt',
  'lte',
  'in',
  'nin',
  'exists',
] as const
export type FilterOperator = (typeof FILTER_OPERATORS)[number]
export type Filter = Record<string, Partial<Record<FilterOperator, unknown>>>

export interface FieldInput {
  key?: string
  name: string
  type: FieldType
  required?: boolean
  unique?: boolean
  options?: string[]
  /** reference and multi_reference: the target collection's id or slug. */
  collection?: string
}

/** A collection's name in page code (`cms.<key>` of @platform): its slug camelCased, `blog-posts` as `blogPosts`. */
export function collectionKey(slug: string): string {
  return slug.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase())
}

/** An identifier for a type name: `blog-posts` to `BlogPosts`. */
function typeName(slug: string): string {
  const key = collectionKey(slug)
  return key[0].toUpperCase() + key.slice(1)
}

/**
 * The declaration of `cms` of @platform generated from a site's schema: an item type a collection,
 * fields optional unless required, select values as their options, assets as AssetRef. A reference
 * resolves one level deep: it is the referenced collection's shallow type, whose own references are
 * ids, so reading through two references is a type error, as the data is.
 */
export function typesOf(collections: CollectionRecord[]): string {
  const lines: string[] = [
    'export interface AssetRef { id: string; url: string; filename: string; contentType: string; altText: string; kind: string; width?: number; height?: number }',
  ]
  const base = 'id: string; slug: string; publishedAt: string | null; createdAt: string; updatedAt: string; position: number'
  const fieldType = (field: FieldDef, shallow: boolean): string => {
    const target = collections.find((c) => c.id === field.collectionId)
    const options = (field.options ?? []).map((o) => JSON.stringify(o)).join(' | ') || 'string'
    switch (field.type) {
      case 'number':
        return 'number'
      case 'boolean':
        return 'boolean'
      case 'select':
        return options
      case 'multi_select':
        return `Array<${options}>`
      case 'image':
      case 'file':
        return 'AssetRef | null'
      case 'gallery':
        return 'AssetRef[]'
      case 'reference':
        return shallow || target === undefined ? 'string' : `${typeName(target.slug)}Shallow | null`
      case 'multi_reference':
        return shallow || target === undefined ? 'string[]' : `${typeName(target.slug)}Shallow[]`
      case 'json':
        return 'unknown'
      default:
        return 'string'
    }
  }
  for (const collection of collections) {
    for (const shallow of [false, true]) {
      const fields = collection.fields.map((f) => `${f.key}${f.required ? '' : '?'}: ${fieldType(f, shallow)}`)
      lines.push(`export interface ${typeName(collection.slug)}${shallow ? 'Shallow' : 'Item'} { ${[base, ...fields].join('; ')} }`)
    }
  }
  lines.push(
    `export declare const cms: { ${collections.map((c) => `${JSON.stringify(collectionKey(c.slug))}: Collection<${typeName(c.slug)}Item>`).join('; ')} }`,
  )
  return lines.join('\n')
}

/** A slug from free text: lowercase letters, digits and single hyphens. */
export function slugify(text: string): string {
  return text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 80)
}

/** A field key from a name: `Cover image` to `coverImage`. */
function keyOf(name: string): string {
  const words = name
    .normalize('NFKD')
    .replace(/[^A-Za-z0-9]+/g, ' ')
    .trim()
    .split(' ')
    .filter(Boolean)
  const key = words.map((w, i) => (i === 0 ? w.toLowerCase() : w[0].toUpperCase() + w.slice(1).toLowerCase())).join('')
  return /^[a-zA-Z]/.test(key) ? key.slice(0, 64) : `f${key}`.slice(0, 64)
}

const isDate = (v: unknown) =>
  typeof v === 'string' &&
  /^\d{4}-\d{2}-\d{2}$/.test(v) &&
  !Number.isNaN(Date.parse(`${v}T00:00:00Z`)) &&
  new Date(`${v}T00:00:00Z`).toISOString().startsWith(v)
const isDateTime = (v: unknown) =>
  typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/.test(v) && !Number.isNaN(Date.parse(v))

/**
 * The CMS of websites (spec: CMS, deprecated; kept working for sites that use it): collections with
 * typed fields, and items validated against them, soft-deleted and restored, published, scheduled or
 * unpublished. Schema changes and publications are audited. Commands that check and then write run one
 * at a time through one mailbox (uniqueness of slugs and unique fields holds).
 */
export class Cms {
  readonly mailbox = new Mailbox()
  /** Each collection's items, decoded once and kept in step by the writes below (the one writer). */
  readonly #cache = new Map<string, Map<string, ItemRecord>>()
  /** Told after every change sites can see (items written, published, due, fields changed): the website re-renders. */
  onChange: ((websiteId: string) => void) | null = null
  readonly #timer: NodeJS.Timeout | undefined

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    /** An asset of the website, for image/file/gallery values (kind and existence). */
    private readonly asset: (websiteId: string, assetId: string) => { kind: string; status: string } | undefined,
    /** How often scheduled publications are looked for (0: never; tests and the offline CLI). */
    tickMs = 1000,
  ) {
    if (tickMs > 0) this.#timer = setInterval(() => void this.publishDue().catch(() => undefined), tickMs).unref()
  }

  close(): void {
    clearInterval(this.#timer)
  }

  #changed(websiteId: string): void {
    this.onChange?.(websiteId)
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
    const out: CollectionRecord[] = []
    for (const { value } of this.store.collectionsBySlug.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) {
      const record = this.store.collections.get(value)
      if (record !== undefined) out.push(record)
    }
    return out
  }

  /** A collection by id or slug, or 404. */
  collection(websiteId: string, idOrSlug: string): CollectionRecord {
    const id = idOrSlug.startsWith('col_') ? idOrSlug : this.store.collectionsBySlug.get([websiteId, idOrSlug])
    const record = id === undefined ? undefined : this.store.collections.get(id)
    if (record === undefined || record.websiteId !== websiteId)
      throw new ApiError('not_found', `No collection ${idOrSlug} on this website; GET /v1/websites/${websiteId}/schema lists them`)
    return record
  }

  #field(websiteId: string, collections: CollectionRecord[], input: FieldInput, taken: Set<string>, at: string): FieldDef {
    const key = input.key ?? keyOf(input.name)
    if (!KEY.test(key))
      throw new ApiError('validation', `${at}.key "${key}" is not a field key: a letter, then letters, digits or _ (at most 64)`, {
        field: `${at}.key`,
      })
    if (RESERVED_KEYS.has(key))
      throw new ApiError('validation', `${at}.key "${key}" is an item property; pick another key`, { field: `${at}.key` })
    if (taken.has(key)) throw new ApiError('conflict', `The collection already has a field with key "${key}"`, { field: `${at}.key` })
    if (!(FIELD_TYPES as readonly string[]).includes(input.type))
      throw new ApiError('validation', `${at}.type is one of ${FIELD_TYPES.join(', ')}`, { field: `${at}.type` })
    const field: FieldDef = {
      id: newId('fld'),
      key,
      name: input.name,
      type: input.type,
      required: input.required ?? false,
      unique: input.unique ?? false,
    }
    if (input.type === 'select' || input.type === 'multi_select') {
      if (input.options === undefined || input.options.length === 0)
        throw new ApiError('validation', `${at}.options lists the values a ${input.type} field allows`, { field: `${at}.options` })
      field.options = [...new Set(input.options)]
    }
    if (input.type === 'reference' || input.type === 'multi_reference') {
      if (input.collection === undefined)
        throw new ApiError('validation', `${at}.collection names the collection a ${input.type} field points at (id or slug)`, {
          field: `${at}.collection`,
        })
      const target = collections.find((c) => c.id === input.collection || c.slug === input.collection)
      if (target === undefined)
        throw new ApiError('validation', `${at}.collection: no collection ${input.collection} on this website`, {
          field: `${at}.collection`,
        })
      field.collectionId = target.id
    }
    void websiteId
    return field
  }

  createCollection(
    websiteId: string,
    orgId: string,
    actor: AuditActorValue,
    input: { name: string; slug?: string; fields?: FieldInput[] },
  ): Promise<CollectionRecord> {
    return this.mailbox.run(async () => {
      const slug = input.slug ?? slugify(input.name)
      if (!SLUG.test(slug))
        throw new ApiError('validation', `slug "${slug}" is lowercase letters and digits with single hyphens`, { field: 'body.slug' })
      if (this.store.collectionsBySlug.get([websiteId, slug]) !== undefined)
        throw new ApiError('conflict', `This website already has a collection with slug ${slug}`, { field: 'body.slug' })
      const now = this.clock.now()
      const id = newId('col')
      const existing = this.collections(websiteId)
      const taken = new Set<string>()
      // A field may refer to the collection being made (posts referring to posts).
      const self = { id, slug } as CollectionRecord
      const fields = (input.fields ?? []).map((f, i) => {
        const field = this.#field(websiteId, [...existing, self], f, taken, `body.fields.${i}`)
        taken.add(field.key)
        return field
      })
      const record: CollectionRecord = { v: 1, id, websiteId, name: input.name, slug, fields, createdAt: now, updatedAt: now }
      await this.store.commit(() => {
        this.store.collections.put(id, record)
        this.store.collectionsBySlug.put([websiteId, slug], id)
        appendAudit(this.store, orgId, actor, now, {
          eventType: 'cms.collection_created',
          resourceType: 'collection',
          resourceId: id,
          websiteId,
          metadata: { slug, fields: fields.map((f) => f.key) },
        })
      })
      return record
    })
  }

  updateCollection(
    websiteId: string,
    orgId: string,
    actor: AuditActorValue,
    idOrSlug: string,
    change: { name?: string; slug?: string },
  ): Promise<CollectionRecord> {
    return this.mailbox.run(async () => {
      const current = this.collection(websiteId, idOrSlug)
      const slug = change.slug ?? current.slug
      if (!SLUG.test(slug))
        throw new ApiError('validation', `slug "${slug}" is lowercase letters and digits with single hyphens`, { field: 'body.slug' })
      const holder = this.store.collectionsBySlug.get([websiteId, slug])
      if (holder !== undefined && holder !== current.id)
        throw new ApiError('conflict', `This website already has a collection with slug ${slug}`, { field: 'body.slug' })
      const now = this.clock.now()
      const next = { ...current, name: change.name ?? current.name, slug, updatedAt: now }
      await this.store.commit(() => {
        if (slug !== current.slug) {
          this.store.collectionsBySlug.remove([websiteId, current.slug])
          this.store.collectionsBySlug.put([websiteId, slug], current.id)
        }
        this.store.collections.put(current.id, next)
        appendAudit(this.store, orgId, actor, now, {
          eventType: 'cms.collection_updated',
          resourceType: 'collection',
          resourceId: current.id,
          websiteId,
          metadata: { slug },
        })
      })
      return next
    })
  }

  /** Deletes a collection with its items; 409 naming the fields of other collections that refer to it. */
  deleteCollection(websiteId: string, orgId: string, actor: AuditActorValue, idOrSlug: string): Promise<void> {
    return this.mailbox.run(async () => {
      const current = this.collection(websiteId, idOrSlug)
      const referring = this.collections(websiteId)
        .filter((c) => c.id !== current.id)
        .flatMap((c) => c.fields.filter((f) => f.collectionId === current.id).map((f) => `${c.slug}.${f.key}`))
      if (referring.length > 0)
        throw new ApiError('conflict', `Fields refer to ${current.slug}: ${referring.join(', ')}. Delete or change them first`, {
          fields: referring,
        })
      const items = [...this.store.itemsByCollection.range({ start: [current.id, ''], end: [current.id, '\uffff'] })].map((r) => r.value)
      const now = this.clock.now()
      await this.store.commit(() => {
        for (const id of items) {
          const item = this.store.items.get(id)
          if (item !== undefined) this.store.itemsBySlug.remove([current.id, item.slug])
          this.store.items.remove(id)
          this.store.itemsByCollection.remove([current.id, id])
        }
        this.store.collections.remove(current.id)
        this.store.collectionsBySlug.remove([websiteId, current.slug])
        this.#cache.delete(current.id)
        appendAudit(this.store, orgId, actor, now, {
          eventType: 'cms.collection_deleted',
          resourceType: 'collection',
          resourceId: current.id,
          websiteId,
          metadata: { slug: current.slug, items: items.length },
        })
      })
    })
  }

  /** Everything of a website's CMS and its legacy page records (the website's purge). */
  removeWebsite(websiteId: string): Promise<void> {
    return this.mailbox.run(async () => {
      const collections = this.collections(websiteId)
      const pages = [...this.store.legacyPagesBySlug.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })]
      if (collections.length === 0 && pages.length === 0) return
      await this.store.commit(() => {
        for (const collection of collections) {
          for (const { key, value } of this.store.itemsByCollection.range({ start: [collection.id, ''], end: [collection.id, '\uffff'] })) {
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
    })
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
    if (collections.length === 0) return { data: '{}', types: '' }
    const out: Record<string, Record<string, unknown>[]> = {}
    const asset = (id: unknown) => {
      const record = typeof id === 'string' ? this.store.assets.get(id) : undefined
      if (record === undefined || record.websiteId !== websiteId || record.status !== 'ready') return null
      return {
        id: record.id,
        url: `${origin}/_platform/media/${record.id}`,
        filename: record.filename,
        contentType: record.contentType,
        altText: record.altText,
        kind: record.kind,
        ...(record.width === null ? {} : { width: record.width, height: record.height }),
      }
    }
    const published = (id: unknown): ItemRecord | null => {
      const item = typeof id === 'string' ? this.store.items.get(id) : undefined
      return item !== undefined && item.websiteId === websiteId && item.deletedAt === null && this.status(item, now) === 'published'
        ? item
        : null
    }
    const view = (item: ItemRecord, depth: number): Record<string, unknown> => {
      const collection = collections.find((c) => c.id === item.collectionId)
      const at = this.publishedAt(item, now)
      const out: Record<string, unknown> = {
        id: item.id,
        slug: item.slug,
        publishedAt: at === null ? null : new Date(at).toISOString(),
        createdAt: new Date(item.createdAt).toISOString(),
        updatedAt: new Date(item.updatedAt).toISOString(),
        position: item.position,
      }
      for (const field of collection?.fields ?? []) {
        const value = item.values[field.key]
        if (value === undefined) continue
        if (field.type === 'image' || field.type === 'file') out[field.key] = asset(value)
        else if (field.type === 'gallery') out[field.key] = (value as unknown[]).map(asset).filter((a) => a !== null)
        else if (field.type === 'reference')
          out[field.key] = depth > 0 ? (published(value) === null ? null : view(published(value)!, depth - 1)) : value
        else if (field.type === 'multi_reference')
          out[field.key] =
            depth > 0
              ? (value as unknown[])
                  .map(published)
                  .filter((i): i is ItemRecord => i !== null)
                  .map((i) => view(i, depth - 1))
              : value
        else out[field.key] = value
      }
      return out
    }
    const placeholders = (collection: CollectionRecord, depth: number): Record<string, unknown>[] =>
      [1, 2].map((n) => {
        const out: Record<string, unknown> = {
          id: `itm_placeholder_${collection.slug}_${n}`,
          slug: `example-${n}`,
          publishedAt: '2026-01-01T00:00:00.000Z',
          createdAt: '2026-01-01T00:00:00.000Z',
          updatedAt: '2026-01-01T00:00:00.000Z',
          position: n,
        }
        const image = {
          id: 'ast_placeholder',
          url: `${origin}/_platform/media/ast_placeholder`,
          filename: 'placeholder.png',
          contentType: 'image/png',
          altText: 'Placeholder',
          kind: 'image',
          width: 800,
          height: 600,
        }
        for (const field of collection.fields) {
          const target = collections.find((c) => c.id === field.collectionId)
          out[field.key] = {
            text: `Example ${field.name} ${n}`,
            rich_text: `# Example ${field.name} ${n}\n\nSome text.`,
            number: n,
            boolean: n === 1,
            date: `2026-01-0${n}`,
            datetime: `2026-01-0${n}T09:00:00.000Z`,
            select: field.options?.[0] ?? '',
            multi_select: field.options?.slice(0, 1) ?? [],
            url: `https://example.com/${n}`,
            email: `someone${n}@example.com`,
            color: '#336699',
            image,
            file: { ...image, filename: 'placeholder.pdf', contentType: 'application/pdf', kind: 'document' },
            gallery: [image],
            reference:
              depth > 0 && target !== undefined ? placeholders(target, depth - 1)[0] : `itm_placeholder_${target?.slug ?? 'item'}_1`,
            multi_reference: depth > 0 && target !== undefined ? placeholders(target, depth - 1) : [],
            json: {},
          }[field.type]
        }
        return out
      })
    for (const collection of collections) {
      const key = collectionKey(collection.slug)
      out[key] =
        phase === 'check'
          ? placeholders(collection, 1)
          : this.#items(collection.id)
              .filter((i) => i.deletedAt === null && this.status(i, now) === 'published')
              .map((i) => view(i, 1))
    }
    return { data: JSON.stringify(out), types: typesOf(collections) }
  }

  // Fields

  #items(collectionId: string): ItemRecord[] {
    return [...this.#all(collectionId)].sort((a, b) => a.position - b.position)
  }

  /** A collection's items in no order (cheaper when order does not matter). */
  #all(collectionId: string): IterableIterator<ItemRecord> {
    let cached = this.#cache.get(collectionId)
    if (cached === undefined) {
      cached = new Map()
      for (const { value } of this.store.itemsByCollection.range({ start: [collectionId, ''], end: [collectionId, '\uffff'] })) {
        const item = this.store.items.get(value)
        if (item !== undefined) cached.set(item.id, item)
      }
      this.#cache.set(collectionId, cached)
    }
    return cached.values()
  }

  /** After a commit wrote `item`: the cache holds it as written. */
  #written(item: ItemRecord): void {
    this.#cache.get(item.collectionId)?.set(item.id, item)
  }

  /** The collection holding a field, or 404. */
  #fieldHome(websiteId: string, fieldId: string): { collection: CollectionRecord; field: FieldDef } {
    for (const collection of this.collections(websiteId)) {
      const field = collection.fields.find((f) => f.id === fieldId)
      if (field !== undefined) return { collection, field }
    }
    throw new ApiError('not_found', `No field ${fieldId} on this website; GET /v1/websites/${websiteId}/schema lists them`)
  }

  addField(
    websiteId: string,
    orgId: string,
    actor: AuditActorValue,
    idOrSlug: string,
    input: FieldInput,
  ): Promise<{ collection: CollectionRecord; field: FieldDef }> {
    return this.mailbox.run(async () => {
      const collection = this.collection(websiteId, idOrSlug)
      const field = this.#field(websiteId, this.collections(websiteId), input, new Set(collection.fields.map((f) => f.key)), 'body')
      const items = this.#items(collection.id).filter((i) => i.deletedAt === null)
      if (field.required && items.length > 0)
        throw new ApiError(
          'conflict',
          `${items.length} items would have no ${field.key}: add the field as optional, fill it in, then make it required`,
          { field: 'body.required' },
        )
      const now = this.clock.now()
      const next = { ...collection, fields: [...collection.fields, field], updatedAt: now }
      await this.store.commit(() => {
        this.store.collections.put(collection.id, next)
        appendAudit(this.store, orgId, actor, now, {
          eventType: 'cms.field_added',
          resourceType: 'field',
          resourceId: field.id,
          websiteId,
          metadata: { collection: collection.slug, key: field.key, type: field.type },
        })
      })
      return { collection: next, field }
    })
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
    change: { name?: string; type?: FieldType; required?: boolean; unique?: boolean; options?: string[] },
  ): Promise<{ collection: CollectionRecord; field: FieldDef }> {
    return this.mailbox.run(async () => {
      const { collection, field } = this.#fieldHome(websiteId, fieldId)
      const next: FieldDef = {
        ...field,
        ...(change.name === undefined ? {} : { name: change.name }),
        ...(change.type === undefined ? {} : { type: change.type }),
        ...(change.required === undefined ? {} : { required: change.required }),
        ...(change.unique === undefined ? {} : { unique: change.unique }),
      }
      if ((next.type === 'select' || next.type === 'multi_select') && (change.options !== undefined || next.options === undefined)) {
        if (change.options === undefined || change.options.length === 0)
          throw new ApiError('validation', `A ${next.type} field lists its options`, { field: 'body.options' })
        next.options = [...new Set(change.options)]
      }
      if ((next.type === 'reference' || next.type === 'multi_reference') && next.collectionId === undefined)
        throw new ApiError('validation', `A field cannot become a ${next.type}: add a new reference field with its collection instead`, {
          field: 'body.type',
        })
      if (next.type !== 'select' && next.type !== 'multi_select') delete next.options
      if (next.type !== 'reference' && next.type !== 'multi_reference') delete next.collectionId
      const items = this.#items(collection.id).filter((i) => i.deletedAt === null)
      const converted = new Map<string, unknown>()
      const failing: string[] = []
      const seen = new Map<string, string>()
      for (const item of items) {
        const value = item.values[field.key]
        if (value === undefined || value === null) {
          if (next.required) failing.push(`${item.slug} (no value)`)
          continue
        }
        const result = this.#convert(websiteId, value, field.type, next)
        if (result.ok) {
          converted.set(item.id, result.value)
          if (next.unique) {
            const text = JSON.stringify(result.value)
            if (seen.has(text)) failing.push(`${item.slug} (same value as ${seen.get(text)})`)
            seen.set(text, item.slug)
          }
        } else failing.push(`${item.slug} (${result.reason})`)
      }
      if (failing.length > 0) {
        throw new ApiError(
          'conflict',
          `${failing.length} item${failing.length === 1 ? '' : 's'} would not fit the changed field ${field.key}: ${failing.slice(0, 10).join(', ')}${failing.length > 10 ? ', …' : ''}. Change those items first`,
          { field: `body`, items: failing.slice(0, 100) },
        )
      }
      const now = this.clock.now()
      const nextCollection = { ...collection, fields: collection.fields.map((f) => (f.id === field.id ? next : f)), updatedAt: now }
      await this.store.commit(() => {
        this.store.collections.put(collection.id, nextCollection)
        if (next.type !== field.type) {
          for (const item of items)
            if (converted.has(item.id))
              this.store.items.put(item.id, { ...item, values: { ...item.values, [field.key]: converted.get(item.id) } })
        }
        this.#cache.delete(collection.id)
        appendAudit(this.store, orgId, actor, now, {
          eventType: 'cms.field_updated',
          resourceType: 'field',
          resourceId: field.id,
          websiteId,
          metadata: {
            collection: collection.slug,
            key: field.key,
            ...(change.type === undefined ? {} : { from: field.type, to: next.type }),
          },
        })
      })
      return { collection: nextCollection, field: next }
    })
  }

  /** Deletes a field and its values. */
  deleteField(websiteId: string, orgId: string, actor: AuditActorValue, fieldId: string): Promise<CollectionRecord> {
    return this.mailbox.run(async () => {
      const { collection, field } = this.#fieldHome(websiteId, fieldId)
      const now = this.clock.now()
      const next = { ...collection, fields: collection.fields.filter((f) => f.id !== field.id), updatedAt: now }
      const items = this.#items(collection.id)
      await this.store.commit(() => {
        this.store.collections.put(collection.id, next)
        for (const item of items) {
          if (!(field.key in item.values)) continue
          const values = { ...item.values }
          delete values[field.key]
          this.store.items.put(item.id, { ...item, values })
        }
        this.#cache.delete(collection.id)
        appendAudit(this.store, orgId, actor, now, {
          eventType: 'cms.field_deleted',
          resourceType: 'field',
          resourceId: field.id,
          websiteId,
          metadata: { collection: collection.slug, key: field.key },
        })
      })
      return next
    })
  }

  /** A value of type `from` as the field `to` wants it, or why not. */
  #convert(websiteId: string, value: unknown, from: FieldType, to: FieldDef): { ok: true; value: unknown } | { ok: false; reason: string } {
    let candidate = value
    if (from !== to.type) {
      if (to.type === 'text' || to.type === 'rich_text')
        candidate = typeof value === 'string' ? value : Array.isArray(value) ? value.join(', ') : JSON.stringify(value)
      else if (to.type === 'number' && typeof value === 'string' && value.trim() !== '' && Number.isFinite(Number(value)))
        candidate = Number(value)
      else if (to.type === 'boolean' && (value === 'true' || value === 'false')) candidate = value === 'true'
      else if (to.type === 'multi_select' && typeof value === 'string') candidate = [value]
      else if (to.type === 'multi_reference' && typeof value === 'string') candidate = [value]
      else if (to.type === 'gallery' && typeof value === 'string') candidate = [value]
      else if (to.type === 'date' && isDateTime(value)) candidate = new Date(Date.parse(value as string)).toISOString().slice(0, 10)
      else if (to.type === 'datetime' && isDate(value)) candidate = `${value}T00:00:00.000Z`
      else if (to.type === 'json') candidate = value
    }
    const problem = this.#problem(websiteId, to, candidate)
    return problem === null ? { ok: true, value: candidate } : { ok: false, reason: problem }
  }

  /** Why `value` does not fit `field` (null: it fits). Values are present here (missing is checked by the caller). */
  #problem(websiteId: string, field: FieldDef, value: unknown): string | null {
    const asset = (id: unknown, image: boolean) => {
      if (typeof id !== 'string') return 'an asset id'
      const found = this.asset(websiteId, id)
      if (found === undefined || found.status !== 'ready') return `an asset of this website (no ready asset ${id})`
      if (image && found.kind !== 'image') return `an image asset (${id} is ${found.kind})`
      return null
    }
    const item = (id: unknown) => {
      if (typeof id !== 'string') return 'an item id'
      const found = this.store.items.get(id)
      return found === undefined || found.collectionId !== field.collectionId || found.websiteId !== websiteId
        ? `an item of the referenced collection (no item ${id} there)`
        : null
    }
    switch (field.type) {
      case 'text':
        return typeof value === 'string' && value.length <= TEXT_MAX ? null : `text of at most ${TEXT_MAX} characters`
      case 'rich_text':
        return typeof value === 'string' && value.length <= RICH_TEXT_MAX ? null : `Markdown text of at most ${RICH_TEXT_MAX} characters`
      case 'number':
        return typeof value === 'number' && Number.isFinite(value) ? null : 'a number'
      case 'boolean':
        return typeof value === 'boolean' ? null : 'true or false'
      case 'date':
        return isDate(value) ? null : 'a date as YYYY-MM-DD'
      case 'datetime':
        return isDateTime(value) ? null : 'an ISO 8601 date and time with a zone (2026-05-01T09:30:00Z)'
      case 'select':
        return typeof value === 'string' && field.options!.includes(value) ? null : `one of ${field.options!.join(', ')}`
      case 'multi_select':
        return Array.isArray(value) &&
          value.length <= MULTI_MAX &&
          value.every((v) => typeof v === 'string' && field.options!.includes(v)) &&
          new Set(value).size === value.length
          ? null
          : `a list of distinct values among ${field.options!.join(', ')}`
      case 'url':
        return typeof value === 'string' && value.length <= 2000 && /^https?:\/\/[^\s]+$/.test(value) && URL.canParse(value)
          ? null
          : 'an http(s) URL'
      case 'email':
        return typeof value === 'string' && value.length <= 254 && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value) ? null : 'an email address'
      case 'color':
        return typeof value === 'string' && /^#([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(value) ? null : 'a color as #rgb or #rrggbb'
      case 'image':
        return asset(value, true)
      case 'file':
        return asset(value, false)
      case 'gallery':
        if (!Array.isArray(value) || value.length > MULTI_MAX) return 'a list of image asset ids'
        for (const id of value) {
          const problem = asset(id, true)
          if (problem !== null) return `a list of image asset ids: ${problem}`
        }
        return null
      case 'reference':
        return item(value)
      case 'multi_reference':
        if (!Array.isArray(value) || value.length > MULTI_MAX) return 'a list of item ids'
        for (const id of value) {
          const problem = item(id)
          if (problem !== null) return `a list of item ids: ${problem}`
        }
        return null
      case 'json': {
        if (value === undefined) return 'JSON'
        const text = JSON.stringify(value)
        return text.length <= JSON_MAX ? null : `JSON of at most ${JSON_MAX} characters`
      }
    }
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
      const problem = this.#problem(collection.websiteId, field, value)
      if (problem !== null)
        throw new ApiError('validation', `${field.key} (${field.type}) must be ${problem}`, { field: `body.values.${field.key}` })
      if (field.unique) {
        const text = JSON.stringify(value)
        const clash = [...this.#all(collection.id)].find(
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
    if (item.publishedAt !== null && item.publishedAt <= now) return 'published'
    if (item.publishAt !== null) return item.publishAt <= now ? 'published' : 'scheduled'
    return 'draft'
  }

  /** When the item became published (a due schedule's time), or null. */
  publishedAt(item: ItemRecord, now = this.clock.now()): number | null {
    if (item.publishedAt !== null && item.publishedAt <= now) return item.publishedAt
    return item.publishAt !== null && item.publishAt <= now ? item.publishAt : null
  }

  createItem(
    websiteId: string,
    idOrSlug: string,
    input: { slug?: string; values: Record<string, unknown>; publish?: boolean; publishAt?: number },
  ): Promise<ItemRecord> {
    return this.mailbox.run(async () => {
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
      for (const existing of this.#all(collection.id)) position = Math.max(position, existing.position)
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
      this.#written(item)
      if (item.publishedAt !== null) this.#changed(websiteId)
      return item
    })
  }

  updateItem(
    websiteId: string,
    itemId: string,
    change: { slug?: string; values?: Record<string, unknown>; position?: number },
  ): Promise<ItemRecord> {
    return this.mailbox.run(async () => {
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
      this.#written(next)
      if (this.status(next) === 'published') this.#changed(websiteId)
      return next
    })
  }

  /** Soft delete (restore brings it back; its slug stays taken meanwhile). */
  setDeleted(websiteId: string, itemId: string, deleted: boolean): Promise<ItemRecord> {
    return this.mailbox.run(async () => {
      const item = this.item(websiteId, itemId)
      const next = { ...item, deletedAt: deleted ? (item.deletedAt ?? this.clock.now()) : null, updatedAt: this.clock.now() }
      await this.store.commit(() => this.store.items.put(item.id, next))
      this.#written(next)
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
    return this.mailbox.run(async () => {
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
      this.#written(next)
      if (action.action !== 'schedule') this.#changed(websiteId)
      return next
    })
  }

  /**
   * Items of a collection: not deleted (unless asked), filtered (every operator, `and` or `or`),
   * searched in text fields and the slug, sorted (position by default), a page at a time.
   */
  listItems(
    websiteId: string,
    idOrSlug: string,
    options: {
      filter?: Filter
      filterLogic?: 'and' | 'or'
      sort?: { field: string; direction: 'asc' | 'desc' }
      search?: string
      limit: number
      offset: number
      status?: 'published' | 'draft' | 'scheduled' | 'all'
      deleted?: boolean
    },
  ): { items: ItemRecord[]; total: number } {
    const collection = this.collection(websiteId, idOrSlug)
    const now = this.clock.now()
    const known = new Map(collection.fields.map((f) => [f.key, f]))
    const property = (name: string, at: string) => {
      if (!known.has(name) && !['slug', 'publishedAt', 'createdAt', 'updatedAt', 'position', 'id'].includes(name)) {
        throw new ApiError(
          'validation',
          `${at}: ${collection.slug} has no field ${name}; its fields are ${[...known.keys()].join(', ') || 'none'} (and slug, createdAt, updatedAt, publishedAt, position)`,
          { field: at },
        )
      }
    }
    const filters = Object.entries(options.filter ?? {})
    for (const [name, ops] of filters) {
      property(name, `query.filter.${name}`)
      for (const op of Object.keys(ops))
        if (!(FILTER_OPERATORS as readonly string[]).includes(op))
          throw new ApiError('validation', `query.filter.${name}: ${op} is not an operator; use ${FILTER_OPERATORS.join(', ')}`, {
            field: `query.filter.${name}`,
          })
    }
    if (options.sort !== undefined) property(options.sort.field, 'query.sort')
    const read = (item: ItemRecord, name: string): unknown => {
      switch (name) {
        case 'id':
          return item.id
        case 'slug':
          return item.slug
        case 'publishedAt': {
          const at = this.publishedAt(item, now)
          return at === null ? null : new Date(at).toISOString()
        }
        case 'createdAt':
          return new Date(item.createdAt).toISOString()
        case 'updatedAt':
          return new Date(item.updatedAt).toISOString()
        case 'position':
          return item.position
        default:
          return item.values[name]
      }
    }
    const compare = (a: unknown, b: unknown): number =>
      typeof a === 'number' && typeof b === 'number' ? a - b : String(a).localeCompare(String(b))
    const test = (value: unknown, op: FilterOperator, operand: unknown): boolean => {
      const present = value !== undefined && value !== null && value !== ''
      switch (op) {
        case 'exists':
          return present === (operand !== false)
        case 'eq':
          return JSON.stringify(value) === JSON.stringify(operand)
        case 'neq':
          return JSON.stringify(value) !== JSON.stringify(operand)
        case 'contains':
          return Array.isArray(value)
            ? value.includes(operand)
            : typeof value === 'string' && typeof operand === 'string' && value.toLowerCase().includes(operand.toLowerCase())
        case 'startsWith':
          return typeof value === 'string' && typeof operand === 'string' && value.toLowerCase().startsWith(operand.toLowerCase())
        case 'endsWith':
          return typeof value === 'string' && typeof operand === 'string' && value.toLowerCase().endsWith(operand.toLowerCase())
        case 'gt':
          return present && compare(value, operand) > 0
        case 'gte':
          return present && compare(value, operand) >= 0
        case 'lt':
          return present && compare(value, operand) < 0
        case 'lte':
          return present && compare(value, operand) <= 0
        case 'in':
          return Array.isArray(operand) && (Array.isArray(value) ? value.some((v) => operand.includes(v)) : operand.includes(value))
        case 'nin':
          return Array.isArray(operand) && !(Array.isArray(value) ? value.some((v) => operand.includes(v)) : operand.includes(value))
      }
    }
    const textKeys = collection.fields.filter((f) => f.type === 'text' || f.type === 'rich_text').map((f) => f.key)
    const needle = options.search?.toLowerCase()
    const matched: ItemRecord[] = []
    for (const item of this.#all(collection.id)) {
      if ((item.deletedAt !== null) !== (options.deleted === true)) continue
      const status = this.status(item, now)
      if (options.status !== undefined && options.status !== 'all' && status !== options.status) continue
      if (
        needle !== undefined &&
        needle !== '' &&
        !item.slug.includes(needle) &&
        !textKeys.some((k) => typeof item.values[k] === 'string' && (item.values[k] as string).toLowerCase().includes(needle))
      )
        continue
      if (filters.length > 0) {
        const results = filters.map(([name, ops]) =>
          Object.entries(ops).every(([op, operand]) => test(read(item, name), op as FilterOperator, operand)),
        )
        if (options.filterLogic === 'or' ? !results.some(Boolean) : !results.every(Boolean)) continue
      }
      matched.push(item)
    }
    const sort = options.sort ?? { field: 'position', direction: 'asc' as const }
    matched.sort((a, b) => {
      const x = read(a, sort.field)
      const y = read(b, sort.field)
      // Items without the value go last, whichever the direction.
      if (x === undefined || x === null) return y === undefined || y === null ? a.position - b.position : 1
      if (y === undefined || y === null) return -1
      const order = compare(x, y) || a.position - b.position
      return sort.direction === 'desc' ? -order : order
    })
    return { items: matched.slice(options.offset, options.offset + options.limit), total: matched.length }
  }

  /** Items of this website whose reference fields point at `itemId`. */
  backreferences(websiteId: string, itemId: string): { item: ItemRecord; collection: CollectionRecord; field: string }[] {
    const target = this.item(websiteId, itemId)
    const out: { item: ItemRecord; collection: CollectionRecord; field: string }[] = []
    for (const collection of this.collections(websiteId)) {
      const fields = collection.fields.filter((f) => f.collectionId === target.collectionId)
      if (fields.length === 0) continue
      for (const item of this.#items(collection.id)) {
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
