// What the CMS operations share: the tag and deprecation note, the collection path parameters, the field, collection and item schemas and their views.
import { Type, type Static } from '@sinclair/typebox'
import { iso } from '../../core/clock.js'
import { actorOf as auditActor } from '../../core/principal.js'
import { FIELD_TYPES, type CollectionRecord, type FieldDef, type ItemRecord } from '../../core/schemas/cms.js'
import { StringEnum, Timestamp, named } from '../../core/schemas/common.js'
import { assetView } from './assets.js'
import type { OperationContext } from '../operation.js'

export const tag = 'CMS (deprecated)'
export const DEPRECATED =
  'Deprecated: the CMS keeps working for sites that use it; put new content in source files unless the owner asks for the CMS.'

export const CollectionParams = Type.Object(
  {
    websiteId: Type.String({ description: 'Website id (`ws_…`)' }),
    colId: Type.String({ description: 'Collection id (`col_…`) or slug' }),
  },
  { additionalProperties: false },
)

export const Field = named(
  'CmsField',
  Type.Object({
    id: Type.String(),
    key: Type.String({ description: 'Where items carry the value' }),
    name: Type.String(),
    type: StringEnum(FIELD_TYPES),
    required: Type.Boolean(),
    unique: Type.Boolean(),
    options: Type.Optional(Type.Array(Type.String())),
    collectionId: Type.Optional(Type.String({ description: 'reference and multi_reference: the collection referred to' })),
  }),
)

export const Collection = named(
  'CmsCollection',
  Type.Object({
    id: Type.String(),
    name: Type.String(),
    slug: Type.String(),
    fields: Type.Array(Field),
    itemCount: Type.Integer(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
)

/** The properties every item has (no field key may take one of these names: actors/cms/rules.ts). */
export const ItemProperties = {
  id: Type.String({ description: 'Item id (`itm_…`)' }),
  collectionId: Type.String(),
  slug: Type.String(),
  status: StringEnum(['published', 'scheduled', 'draft'] as const),
  publishedAt: Type.Union([Timestamp, Type.Null()]),
  publishAt: Type.Union([Timestamp, Type.Null()], { description: 'A scheduled item: when it goes live' }),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  position: Type.Number({ description: 'Its place in the collection’s manual order' }),
  deletedAt: Type.Union([Timestamp, Type.Null()], { description: 'In the trash since then (restore brings it back); null otherwise' }),
}

/** What an image, file or gallery field holds in an item read with depth above 0. */
export const ItemAsset = Type.Object({
  id: Type.String({ description: 'Asset id (`ast_…`)' }),
  url: Type.String(),
  filename: Type.String(),
  contentType: Type.String(),
  altText: Type.String(),
  kind: Type.String(),
  width: Type.Optional(Type.Integer()),
  height: Type.Optional(Type.Integer()),
})

/** An item as the API shows it: its properties, then its values by field key. */
export const Item = named(
  'CmsItem',
  Type.Object(ItemProperties, {
    additionalProperties: true,
    description:
      'An item: these properties, then its values by field key, each of its field’s type (with depth above 0, references as items and images and files as assets {id, url, filename, contentType, altText, kind, width?, height?}).',
  }),
)

/** A collection as the API shows it: its fields and how many items it holds. */
export function collectionView(ctx: OperationContext, record: CollectionRecord) {
  let itemCount = 0
  for (const _ of ctx.registry.reads.itemsByCollection.range({ start: [record.id, ''], end: [record.id, '\uffff'] })) itemCount++
  return {
    id: record.id,
    name: record.name,
    slug: record.slug,
    fields: record.fields.map(fieldView),
    itemCount,
    createdAt: iso(record.createdAt),
    updatedAt: iso(record.updatedAt),
  }
}

/** A field as the API shows it. */
export function fieldView(field: FieldDef) {
  return {
    id: field.id,
    key: field.key,
    name: field.name,
    type: field.type,
    required: field.required,
    unique: field.unique,
    ...(field.options === undefined ? {} : { options: field.options }),
    ...(field.collectionId === undefined ? {} : { collectionId: field.collectionId }),
  }
}

/** An item as the API shows it: its properties and its values by field key. */
export type ItemView = Static<typeof Item> & Record<string, unknown>

/** An item's view; with `depth` above 0 its references become items and its assets asset objects. */
export function itemView(ctx: OperationContext, item: ItemRecord, depth: number): ItemView {
  const cms = ctx.registry.cms
  const collection = ctx.registry.reads.collections.get(item.collectionId)
  const publishedAt = cms.publishedAt(item)
  const out: ItemView = {
    id: item.id,
    collectionId: item.collectionId,
    slug: item.slug,
    status: cms.status(item),
    publishedAt: publishedAt === null ? null : iso(publishedAt),
    publishAt: item.publishAt === null || publishedAt !== null ? null : iso(item.publishAt),
    createdAt: iso(item.createdAt),
    updatedAt: iso(item.updatedAt),
    position: item.position,
    deletedAt: item.deletedAt === null ? null : iso(item.deletedAt),
  }
  const asset = (id: unknown) => {
    const record = typeof id === 'string' ? ctx.registry.reads.assets.get(id) : undefined
    if (record === undefined || record.websiteId !== item.websiteId) return null
    const view = assetView(ctx, ctx.website!, record)
    return {
      id: view.id,
      url: view.url,
      filename: view.filename,
      contentType: view.contentType,
      altText: view.altText,
      kind: view.kind,
      ...(view.width === undefined ? {} : { width: view.width, height: view.height }),
    }
  }
  const reference = (id: unknown) => {
    const record = typeof id === 'string' ? ctx.registry.reads.items.get(id) : undefined
    return record === undefined || record.deletedAt !== null ? null : itemView(ctx, record, depth - 1)
  }
  for (const field of collection?.fields ?? []) {
    const value = item.values[field.key]
    if (value === undefined) continue
    if (depth > 0 && field.type === 'image') out[field.key] = asset(value)
    else if (depth > 0 && field.type === 'file') out[field.key] = asset(value)
    else if (depth > 0 && field.type === 'gallery') out[field.key] = (value as unknown[]).map(asset).filter((a) => a !== null)
    else if (depth > 0 && field.type === 'reference') out[field.key] = reference(value)
    else if (depth > 0 && field.type === 'multi_reference') out[field.key] = (value as unknown[]).map(reference).filter((r) => r !== null)
    else out[field.key] = value
  }
  return out
}

/** The audit actor of the caller. */
export function actorOf(ctx: OperationContext) {
  return auditActor(ctx.principal)
}
