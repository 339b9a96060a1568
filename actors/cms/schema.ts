// The CMS's collection and field commands: collections made, renamed and deleted; fields added, changed (values converted) and deleted.
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { newId } from '../../core/ids.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { CollectionRecord, FieldDef, FieldType } from '../../core/schemas/cms.js'
import type { CmsStore } from './tables.js'
import { appendAudit } from '../organization/audit.js'
import type { ItemCache } from './item-cache.js'
import { SLUG, convertValue, fieldOf, slugify, type FieldInput, type ValueLookups } from './rules.js'

/** What the collection and field commands use of the CMS actor: its store, clock, item cache and value lookups. */
export interface SchemaContext {
  readonly store: CmsStore
  readonly clock: Clock
  readonly cache: ItemCache
  readonly lookups: ValueLookups
}

/** A new collection: its name, slug (default from the name) and fields. */
export interface CollectionInput {
  name: string
  slug?: string
  fields?: FieldInput[]
}

/** A collection's new name or slug. */
export interface CollectionChange {
  name?: string
  slug?: string
}

/** A field's new name, type, constraints or options. */
export interface FieldChange {
  name?: string
  type?: FieldType
  required?: boolean
  unique?: boolean
  options?: string[]
}

/** A website's collections, by slug. */
export function collectionsOf(store: CmsStore, websiteId: string): CollectionRecord[] {
  const out: CollectionRecord[] = []
  for (const { value } of store.collectionsBySlug.range({ start: [websiteId, ''], end: [websiteId, '\uffff'] })) {
    const record = store.collections.get(value)
    if (record !== undefined) out.push(record)
  }
  return out
}

/** A collection by id or slug, or 404. */
export function collectionOf(store: CmsStore, websiteId: string, idOrSlug: string): CollectionRecord {
  const id = idOrSlug.startsWith('col_') ? idOrSlug : store.collectionsBySlug.get([websiteId, idOrSlug])
  const record = id === undefined ? undefined : store.collections.get(id)
  if (record === undefined || record.websiteId !== websiteId)
    throw new ApiError('not_found', `No collection ${idOrSlug} on this website; GET /v1/websites/${websiteId}/schema lists them`)
  return record
}

/** The collection holding a field, or 404. */
function fieldHome(store: CmsStore, websiteId: string, fieldId: string): { collection: CollectionRecord; field: FieldDef } {
  for (const collection of collectionsOf(store, websiteId)) {
    const field = collection.fields.find((f) => f.id === fieldId)
    if (field !== undefined) return { collection, field }
  }
  throw new ApiError('not_found', `No field ${fieldId} on this website; GET /v1/websites/${websiteId}/schema lists them`)
}

/** Makes a collection with its fields (a field may refer to the collection itself); audited. */
export async function createCollection(
  ctx: SchemaContext,
  websiteId: string,
  orgId: string,
  actor: AuditActorValue,
  input: CollectionInput,
): Promise<CollectionRecord> {
  const slug = input.slug ?? slugify(input.name)
  if (!SLUG.test(slug))
    throw new ApiError('validation', `slug "${slug}" is lowercase letters and digits with single hyphens`, { field: 'body.slug' })
  if (ctx.store.collectionsBySlug.get([websiteId, slug]) !== undefined)
    throw new ApiError('conflict', `This website already has a collection with slug ${slug}`, { field: 'body.slug' })
  const now = ctx.clock.now()
  const id = newId('col')
  const existing = collectionsOf(ctx.store, websiteId)
  const taken = new Set<string>()
  // A field may refer to the collection being made (posts referring to posts).
  const self = { id, slug } as CollectionRecord
  const fields = (input.fields ?? []).map((f, i) => {
    const field = fieldOf(websiteId, [...existing, self], f, taken, `body.fields.${i}`)
    taken.add(field.key)
    return field
  })
  const record: CollectionRecord = { v: 1, id, websiteId, name: input.name, slug, fields, createdAt: now, updatedAt: now }
  await ctx.store.commit(() => {
    ctx.store.collections.put(id, record)
    ctx.store.collectionsBySlug.put([websiteId, slug], id)
    appendAudit(ctx.store, orgId, actor, now, {
      eventType: 'cms.collection_created',
      resourceType: 'collection',
      resourceId: id,
      websiteId,
      metadata: { slug, fields: fields.map((f) => f.key) },
    })
  })
  return record
}

/** Renames a collection (name, slug); audited. */
export async function updateCollection(
  ctx: SchemaContext,
  websiteId: string,
  orgId: string,
  actor: AuditActorValue,
  idOrSlug: string,
  change: CollectionChange,
): Promise<CollectionRecord> {
  const current = collectionOf(ctx.store, websiteId, idOrSlug)
  const slug = change.slug ?? current.slug
  if (!SLUG.test(slug))
    throw new ApiError('validation', `slug "${slug}" is lowercase letters and digits with single hyphens`, { field: 'body.slug' })
  const holder = ctx.store.collectionsBySlug.get([websiteId, slug])
  if (holder !== undefined && holder !== current.id)
    throw new ApiError('conflict', `This website already has a collection with slug ${slug}`, { field: 'body.slug' })
  const now = ctx.clock.now()
  const next = { ...current, name: change.name ?? current.name, slug, updatedAt: now }
  await ctx.store.commit(() => {
    if (slug !== current.slug) {
      ctx.store.collectionsBySlug.remove([websiteId, current.slug])
      ctx.store.collectionsBySlug.put([websiteId, slug], current.id)
    }
    ctx.store.collections.put(current.id, next)
    appendAudit(ctx.store, orgId, actor, now, {
      eventType: 'cms.collection_updated',
      resourceType: 'collection',
      resourceId: current.id,
      websiteId,
      metadata: { slug },
    })
  })
  return next
}

/** Deletes a collection with its items; 409 naming the fields of other collections that refer to it. */
export async function deleteCollection(
  ctx: SchemaContext,
  websiteId: string,
  orgId: string,
  actor: AuditActorValue,
  idOrSlug: string,
): Promise<void> {
  const current = collectionOf(ctx.store, websiteId, idOrSlug)
  const referring = collectionsOf(ctx.store, websiteId)
    .filter((c) => c.id !== current.id)
    .flatMap((c) => c.fields.filter((f) => f.collectionId === current.id).map((f) => `${c.slug}.${f.key}`))
  if (referring.length > 0)
    throw new ApiError('conflict', `Fields refer to ${current.slug}: ${referring.join(', ')}. Delete or change them first`, {
      fields: referring,
    })
  const items = [...ctx.store.itemsByCollection.range({ start: [current.id, ''], end: [current.id, '\uffff'] })].map((r) => r.value)
  const now = ctx.clock.now()
  await ctx.store.commit(() => {
    for (const id of items) {
      const item = ctx.store.items.get(id)
      if (item !== undefined) ctx.store.itemsBySlug.remove([current.id, item.slug])
      ctx.store.items.remove(id)
      ctx.store.itemsByCollection.remove([current.id, id])
    }
    ctx.store.collections.remove(current.id)
    ctx.store.collectionsBySlug.remove([websiteId, current.slug])
    ctx.cache.delete(current.id)
    appendAudit(ctx.store, orgId, actor, now, {
      eventType: 'cms.collection_deleted',
      resourceType: 'collection',
      resourceId: current.id,
      websiteId,
      metadata: { slug: current.slug, items: items.length },
    })
  })
}

/** Adds a field (a required one only to a collection without items); audited. */
export async function addField(
  ctx: SchemaContext,
  websiteId: string,
  orgId: string,
  actor: AuditActorValue,
  idOrSlug: string,
  input: FieldInput,
): Promise<{ collection: CollectionRecord; field: FieldDef }> {
  const collection = collectionOf(ctx.store, websiteId, idOrSlug)
  const field = fieldOf(websiteId, collectionsOf(ctx.store, websiteId), input, new Set(collection.fields.map((f) => f.key)), 'body')
  const items = ctx.cache.sorted(collection.id).filter((i) => i.deletedAt === null)
  if (field.required && items.length > 0)
    throw new ApiError(
      'conflict',
      `${items.length} items would have no ${field.key}: add the field as optional, fill it in, then make it required`,
      { field: 'body.required' },
    )
  const now = ctx.clock.now()
  const next = { ...collection, fields: [...collection.fields, field], updatedAt: now }
  await ctx.store.commit(() => {
    ctx.store.collections.put(collection.id, next)
    appendAudit(ctx.store, orgId, actor, now, {
      eventType: 'cms.field_added',
      resourceType: 'field',
      resourceId: field.id,
      websiteId,
      metadata: { collection: collection.slug, key: field.key, type: field.type },
    })
  })
  return { collection: next, field }
}

/**
 * Changes a field. A new type converts every existing value (409 naming the items whose values
 * would not convert); `required` and `unique` are checked against the items; options must keep every
 * value in use.
 */
export async function updateField(
  ctx: SchemaContext,
  websiteId: string,
  orgId: string,
  actor: AuditActorValue,
  fieldId: string,
  change: FieldChange,
): Promise<{ collection: CollectionRecord; field: FieldDef }> {
  const { collection, field } = fieldHome(ctx.store, websiteId, fieldId)
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
  const items = ctx.cache.sorted(collection.id).filter((i) => i.deletedAt === null)
  const converted = new Map<string, unknown>()
  const failing: string[] = []
  const seen = new Map<string, string>()
  for (const item of items) {
    const value = item.values[field.key]
    if (value === undefined || value === null) {
      if (next.required) failing.push(`${item.slug} (no value)`)
      continue
    }
    const result = convertValue(ctx.lookups, websiteId, value, field.type, next)
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
  const now = ctx.clock.now()
  const nextCollection = { ...collection, fields: collection.fields.map((f) => (f.id === field.id ? next : f)), updatedAt: now }
  await ctx.store.commit(() => {
    ctx.store.collections.put(collection.id, nextCollection)
    if (next.type !== field.type) {
      for (const item of items)
        if (converted.has(item.id))
          ctx.store.items.put(item.id, { ...item, values: { ...item.values, [field.key]: converted.get(item.id) } })
    }
    ctx.cache.delete(collection.id)
    appendAudit(ctx.store, orgId, actor, now, {
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
}

/** Deletes a field and its values. */
export async function deleteField(
  ctx: SchemaContext,
  websiteId: string,
  orgId: string,
  actor: AuditActorValue,
  fieldId: string,
): Promise<CollectionRecord> {
  const { collection, field } = fieldHome(ctx.store, websiteId, fieldId)
  const now = ctx.clock.now()
  const next = { ...collection, fields: collection.fields.filter((f) => f.id !== field.id), updatedAt: now }
  const items = ctx.cache.sorted(collection.id)
  await ctx.store.commit(() => {
    ctx.store.collections.put(collection.id, next)
    for (const item of items) {
      if (!(field.key in item.values)) continue
      const values = { ...item.values }
      delete values[field.key]
      ctx.store.items.put(item.id, { ...item, values })
    }
    ctx.cache.delete(collection.id)
    appendAudit(ctx.store, orgId, actor, now, {
      eventType: 'cms.field_deleted',
      resourceType: 'field',
      resourceId: field.id,
      websiteId,
      metadata: { collection: collection.slug, key: field.key },
    })
  })
  return next
}
