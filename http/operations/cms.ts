import { Type } from '@sinclair/typebox'
import { FILTER_OPERATORS, type FieldInput, type Filter } from '../../actors/cms.js'
import { iso } from '../../core/clock.js'
import { actorOf as auditActor } from '../../core/principal.js'
import { ApiError } from '../../core/errors.js'
import { checkDepth } from '../../core/json-text.js'
import { FIELD_TYPES, type CollectionRecord, type FieldDef, type ItemRecord } from '../../core/schemas/cms.js'
import { ListQuery, Page, StringEnum, Timestamp, named } from '../../core/schemas/common.js'
import { pageByKey, pageByOffset } from '../../core/cursor.js'
import { LIST_LIMIT_DEFAULT } from '../../core/limits.js'
import { assetView } from './assets.js'
import { defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'

const tag = 'CMS (deprecated)'
const DEPRECATED =
  'Deprecated: the CMS keeps working for sites that use it; put new content in source files unless the owner asks for the CMS.'

const CollectionParams = Type.Object(
  {
    websiteId: Type.String({ description: 'Website id (`ws_…`)' }),
    colId: Type.String({ description: 'Collection id (`col_…`) or slug' }),
  },
  { additionalProperties: false },
)
const FieldParams = Type.Object(
  { websiteId: Type.String({ description: 'Website id (`ws_…`)' }), fieldId: Type.String({ description: 'Field id (`fld_…`)' }) },
  { additionalProperties: false },
)
const ItemParams = Type.Object(
  { websiteId: Type.String({ description: 'Website id (`ws_…`)' }), itemId: Type.String({ description: 'Item id (`itm_…`)' }) },
  { additionalProperties: false },
)

const Field = named(
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

const Collection = named(
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

const FieldBody = {
  key: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Default: from the name (`Cover image` to `coverImage`)' })),
  name: Type.String({ minLength: 1, maxLength: 100 }),
  type: StringEnum(FIELD_TYPES),
  required: Type.Optional(Type.Boolean()),
  unique: Type.Optional(Type.Boolean()),
  options: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 100 }), { maxItems: 200 })),
  collection: Type.Optional(
    Type.String({ minLength: 1, maxLength: 100, description: 'reference and multi_reference: the target collection (id or slug)' }),
  ),
}

/** An item as the API shows it: its properties, then its values by field key. */
const Item = named(
  'CmsItem',
  Type.Record(Type.String(), Type.Unknown(), {
    description: '{id, collectionId, slug, status, publishedAt, publishAt, createdAt, updatedAt, position, deletedAt, ...fields}',
  }),
)

function collectionView(ctx: OperationContext, record: CollectionRecord) {
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

function fieldView(field: FieldDef) {
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

/** An item's view; with `depth` above 0 its references become items and its assets asset objects. */
export function itemView(ctx: OperationContext, item: ItemRecord, depth: number): Record<string, unknown> {
  const cms = ctx.registry.cms
  const collection = ctx.registry.reads.collections.get(item.collectionId)
  const publishedAt = cms.publishedAt(item)
  const out: Record<string, unknown> = {
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

function actorOf(ctx: OperationContext) {
  return auditActor(ctx.principal)
}

/** JSON in a query parameter, or a 400 naming it. */
function jsonQuery<T>(text: string | undefined, field: string, shape: string): T | undefined {
  if (text === undefined) return undefined
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    throw new ApiError('validation', `${field} is JSON: ${shape}`, { field })
  }
  checkDepth(value, field)
  return value as T
}

function sortOf(text: string | undefined): { field: string; direction: 'asc' | 'desc' } | undefined {
  if (text === undefined) return undefined
  if (text.trim().startsWith('{')) {
    const sort = jsonQuery<{ field?: unknown; direction?: unknown }>(text, 'query.sort', '{"field": "price", "direction": "desc"}')!
    if (typeof sort.field !== 'string' || (sort.direction !== undefined && sort.direction !== 'asc' && sort.direction !== 'desc'))
      throw new ApiError('validation', 'query.sort is {"field": "<key>", "direction": "asc" | "desc"} or <key>:asc|desc', {
        field: 'query.sort',
      })
    return { field: sort.field, direction: (sort.direction as 'asc' | 'desc' | undefined) ?? 'asc' }
  }
  const [field, direction = 'asc'] = text.split(':')
  if (direction !== 'asc' && direction !== 'desc')
    throw new ApiError('validation', 'query.sort is <key>:asc or <key>:desc', { field: 'query.sort' })
  return { field, direction }
}

const ItemBody = {
  slug: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  values: Type.Record(Type.String(), Type.Unknown(), { description: 'Field key to value' }),
}

export const cmsOperations = [
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/schema',
    operationId: 'cms.schema',
    capability: 'cms.schema.read',
    rateClass: 'standard',
    tool: 'get_cms_schema',
    tag,
    deprecated: true,
    summary: 'Every collection with its fields',
    description: `${DEPRECATED} The website's CMS schema: collections, their fields (key, type, required, unique, options, referenced collection).`,
    params: WebsitePathParams,
    response: Type.Object({ collections: Type.Array(Collection) }),
    handle(ctx) {
      return { collections: ctx.registry.cms.collections(ctx.website!.id).map((c) => collectionView(ctx, c)) }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/collections',
    operationId: 'cms.collections.create',
    capability: 'cms.schema.write',
    rateClass: 'standard',
    tool: 'create_collection',
    tag,
    deprecated: true,
    summary: 'Create a collection',
    description: `${DEPRECATED} name, slug (default from the name) and fields ({name, type, key?, required?, unique?, options?, collection?}).`,
    params: WebsitePathParams,
    body: Type.Object(
      {
        name: Type.String({ minLength: 1, maxLength: 100 }),
        slug: Type.Optional(Type.String({ minLength: 1, maxLength: 80 })),
        fields: Type.Optional(Type.Array(Type.Object(FieldBody, { additionalProperties: false }), { maxItems: 100 })),
      },
      { additionalProperties: false },
    ),
    status: 201,
    response: Collection,
    async handle(ctx, { body }) {
      return collectionView(
        ctx,
        await ctx.registry.cms.createCollection(ctx.website!.id, ctx.website!.record.orgId, actorOf(ctx), {
          name: body.name,
          slug: body.slug,
          fields: body.fields as FieldInput[] | undefined,
        }),
      )
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/collections',
    operationId: 'cms.collections.list',
    capability: 'cms.schema.read',
    rateClass: 'standard',
    tool: 'list_collections',
    tag,
    deprecated: true,
    summary: 'List collections',
    description: `${DEPRECATED} The website's collections by slug, with their fields and item counts.`,
    params: WebsitePathParams,
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Page(Collection),
    handle(ctx, { query }) {
      const page = pageByKey(
        [...ctx.registry.cms.collections(ctx.website!.id)].sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0)),
        (c) => c.slug,
        query.limit ?? LIST_LIMIT_DEFAULT,
        query.cursor,
      )
      return { items: page.items.map((c) => collectionView(ctx, c)), nextCursor: page.nextCursor }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/collections/{colId}',
    operationId: 'cms.collections.get',
    capability: 'cms.schema.read',
    rateClass: 'standard',
    tool: 'get_collection',
    tag,
    deprecated: true,
    summary: 'Get a collection',
    description: `${DEPRECATED} A collection by id or slug, with its fields.`,
    params: CollectionParams,
    response: Collection,
    handle(ctx, { params }) {
      return collectionView(ctx, ctx.registry.cms.collection(ctx.website!.id, params.colId))
    },
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/websites/{websiteId}/collections/{colId}',
    operationId: 'cms.collections.update',
    capability: 'cms.schema.write',
    rateClass: 'standard',
    tool: 'update_collection',
    tag,
    deprecated: true,
    summary: 'Rename a collection',
    description: `${DEPRECATED} name and slug; page code names collections by slug, so a new slug needs its queries changed.`,
    params: CollectionParams,
    body: Type.Object(
      {
        name: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
        slug: Type.Optional(Type.String({ minLength: 1, maxLength: 80 })),
      },
      { additionalProperties: false },
    ),
    response: Collection,
    async handle(ctx, { params, body }) {
      return collectionView(
        ctx,
        await ctx.registry.cms.updateCollection(ctx.website!.id, ctx.website!.record.orgId, actorOf(ctx), params.colId, body),
      )
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/collections/{colId}',
    operationId: 'cms.collections.delete',
    capability: 'cms.schema.write',
    rateClass: 'standard',
    tool: 'delete_collection',
    tag,
    deprecated: true,
    summary: 'Delete a collection and its items',
    description: `${DEPRECATED} 409 naming the fields of other collections that refer to it.`,
    params: CollectionParams,
    response: Type.Object({ deleted: Type.Boolean() }),
    async handle(ctx, { params }) {
      await ctx.registry.cms.deleteCollection(ctx.website!.id, ctx.website!.record.orgId, actorOf(ctx), params.colId)
      return { deleted: true }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/collections/{colId}/fields',
    operationId: 'cms.fields.add',
    capability: 'cms.schema.write',
    rateClass: 'standard',
    tool: 'add_field',
    tag,
    deprecated: true,
    summary: 'Add a field',
    description: `${DEPRECATED} A field of type ${FIELD_TYPES.join(', ')}; a required field cannot be added to a collection with items (add it optional, fill it, then require it).`,
    params: CollectionParams,
    body: Type.Object(FieldBody, { additionalProperties: false }),
    status: 201,
    response: Field,
    async handle(ctx, { params, body }) {
      return fieldView(
        (await ctx.registry.cms.addField(ctx.website!.id, ctx.website!.record.orgId, actorOf(ctx), params.colId, body as FieldInput)).field,
      )
    },
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/websites/{websiteId}/fields/{fieldId}',
    operationId: 'cms.fields.update',
    capability: 'cms.schema.write',
    rateClass: 'standard',
    tool: 'update_field',
    tag,
    deprecated: true,
    summary: 'Change a field',
    description: `${DEPRECATED} name, type, required, unique, options. A new type converts existing values (409 naming the items that would not convert).`,
    params: FieldParams,
    body: Type.Object(
      {
        name: Type.Optional(FieldBody.name),
        type: Type.Optional(FieldBody.type),
        required: FieldBody.required,
        unique: FieldBody.unique,
        options: FieldBody.options,
      },
      { additionalProperties: false },
    ),
    response: Field,
    async handle(ctx, { params, body }) {
      return fieldView(
        (await ctx.registry.cms.updateField(ctx.website!.id, ctx.website!.record.orgId, actorOf(ctx), params.fieldId, body)).field,
      )
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/fields/{fieldId}',
    operationId: 'cms.fields.delete',
    capability: 'cms.schema.write',
    rateClass: 'standard',
    tool: 'delete_field',
    tag,
    deprecated: true,
    summary: 'Delete a field',
    description: `${DEPRECATED} The field and every item's value of it.`,
    params: FieldParams,
    response: Type.Object({ deleted: Type.Boolean() }),
    async handle(ctx, { params }) {
      await ctx.registry.cms.deleteField(ctx.website!.id, ctx.website!.record.orgId, actorOf(ctx), params.fieldId)
      return { deleted: true }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/collections/{colId}/items',
    operationId: 'cms.items.create',
    capability: 'cms.items.write',
    rateClass: 'standard',
    tool: 'create_item',
    tag,
    deprecated: true,
    summary: 'Create an item',
    description: `${DEPRECATED} values by field key (validated; messages name the field), slug (default from the first text value), publish (default false) or publishAt.`,
    params: CollectionParams,
    body: Type.Object(
      { ...ItemBody, publish: Type.Optional(Type.Boolean()), publishAt: Type.Optional(Type.String({ format: 'date-time' })) },
      { additionalProperties: false },
    ),
    status: 201,
    response: Item,
    async handle(ctx, { params, body }) {
      const item = await ctx.registry.cms.createItem(ctx.website!.id, params.colId, {
        slug: body.slug,
        values: body.values,
        publish: body.publish,
        publishAt: body.publishAt === undefined ? undefined : Date.parse(body.publishAt),
      })
      return itemView(ctx, item, 0)
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/collections/{colId}/items',
    operationId: 'cms.items.list',
    capability: 'cms.items.read',
    rateClass: 'standard',
    tool: 'list_items',
    tag,
    deprecated: true,
    summary: 'List, search and filter items',
    description: `${DEPRECATED} filter is JSON {"<key>": {"<op>": value}} with ops ${FILTER_OPERATORS.join(', ')}; filterLogic and|or; sort <key>:asc|desc (or JSON); search in text fields and slugs; depth 0-2 resolves references and assets; status published|draft|scheduled|all (default all); deleted=true lists the soft-deleted.`,
    params: CollectionParams,
    query: Type.Object(
      {
        filter: Type.Optional(Type.String({ maxLength: 4000 })),
        filterLogic: Type.Optional(StringEnum(['and', 'or'] as const)),
        sort: Type.Optional(Type.String({ maxLength: 200 })),
        search: Type.Optional(Type.String({ maxLength: 200 })),
        depth: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 })),
        status: Type.Optional(StringEnum(['published', 'draft', 'scheduled', 'all'] as const)),
        deleted: Type.Optional(Type.Boolean()),
        ...ListQuery,
        offset: Type.Optional(Type.Integer({ minimum: 0, description: 'Start at this position instead of a cursor' })),
      },
      { additionalProperties: false },
    ),
    response: Type.Object({ ...Page(Item).properties, total: Type.Integer() }),
    handle(ctx, { params, query }) {
      const filter = jsonQuery<Filter>(query.filter, 'query.filter', '{"price": {"gt": 10}, "tags": {"contains": "news"}}')
      if (
        filter !== undefined &&
        (filter === null ||
          typeof filter !== 'object' ||
          Array.isArray(filter) ||
          Object.values(filter).some((ops) => ops === null || typeof ops !== 'object' || Array.isArray(ops)))
      ) {
        throw new ApiError('validation', 'query.filter is an object of field key to {operator: value}', { field: 'query.filter' })
      }
      const page = pageByOffset(
        (offset, limit) =>
          ctx.registry.cms.listItems(ctx.website!.id, params.colId, {
            filter,
            filterLogic: query.filterLogic,
            sort: sortOf(query.sort),
            search: query.search,
            limit,
            offset,
            status: query.status,
            deleted: query.deleted,
          }),
        query.limit ?? LIST_LIMIT_DEFAULT,
        query.cursor,
        query.offset ?? 0,
      )
      return { items: page.items.map((i) => itemView(ctx, i, query.depth ?? 0)), total: page.total, nextCursor: page.nextCursor }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/items/find',
    operationId: 'cms.items.find',
    capability: 'cms.items.read',
    rateClass: 'standard',
    tool: 'find_item',
    tag,
    deprecated: true,
    summary: 'Find an item by id, or by collection and slug',
    description: `${DEPRECATED} id, or collection (id or slug) with slug; depth 0-2.`,
    params: WebsitePathParams,
    query: Type.Object(
      {
        id: Type.Optional(Type.String({ maxLength: 40 })),
        collection: Type.Optional(Type.String({ maxLength: 100 })),
        slug: Type.Optional(Type.String({ maxLength: 100 })),
        depth: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 })),
      },
      { additionalProperties: false },
    ),
    response: Item,
    handle(ctx, { query }) {
      if (query.id !== undefined) return itemView(ctx, ctx.registry.cms.item(ctx.website!.id, query.id), query.depth ?? 0)
      if (query.collection === undefined || query.slug === undefined)
        throw new ApiError('validation', 'Give id, or collection and slug', { field: 'query.id' })
      const collection = ctx.registry.cms.collection(ctx.website!.id, query.collection)
      const id = ctx.registry.reads.itemsBySlug.get([collection.id, query.slug])
      if (id === undefined) throw new ApiError('not_found', `${collection.slug} has no item with slug ${query.slug}`)
      return itemView(ctx, ctx.registry.cms.item(ctx.website!.id, id), query.depth ?? 0)
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/items/{itemId}',
    operationId: 'cms.items.get',
    capability: 'cms.items.read',
    rateClass: 'standard',
    tool: 'get_item',
    tag,
    deprecated: true,
    summary: 'Get an item',
    description: `${DEPRECATED} Its properties and values; depth 0-2 resolves references and assets.`,
    params: ItemParams,
    query: Type.Object({ depth: Type.Optional(Type.Integer({ minimum: 0, maximum: 2 })) }, { additionalProperties: false }),
    response: Item,
    handle(ctx, { params, query }) {
      return itemView(ctx, ctx.registry.cms.item(ctx.website!.id, params.itemId), query.depth ?? 0)
    },
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/websites/{websiteId}/items/{itemId}',
    operationId: 'cms.items.update',
    capability: 'cms.items.write',
    rateClass: 'standard',
    tool: 'update_item',
    tag,
    deprecated: true,
    summary: 'Update an item',
    description: `${DEPRECATED} values are merged (null removes one), slug renames, position reorders.`,
    params: ItemParams,
    body: Type.Object(
      { slug: ItemBody.slug, values: Type.Optional(ItemBody.values), position: Type.Optional(Type.Number()) },
      { additionalProperties: false },
    ),
    response: Item,
    async handle(ctx, { params, body }) {
      return itemView(ctx, await ctx.registry.cms.updateItem(ctx.website!.id, params.itemId, body), 0)
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/items/{itemId}',
    operationId: 'cms.items.delete',
    capability: 'cms.items.write',
    rateClass: 'standard',
    tool: 'delete_item',
    tag,
    deprecated: true,
    summary: 'Delete an item (soft)',
    description: `${DEPRECATED} It leaves sites and lists; POST …/restore brings it back.`,
    params: ItemParams,
    response: Item,
    async handle(ctx, { params }) {
      return itemView(ctx, await ctx.registry.cms.setDeleted(ctx.website!.id, params.itemId, true), 0)
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/items/{itemId}/restore',
    operationId: 'cms.items.restore',
    capability: 'cms.items.write',
    rateClass: 'standard',
    tool: 'restore_item',
    tag,
    deprecated: true,
    summary: 'Restore a deleted item',
    description: `${DEPRECATED} Back as it was, published or not.`,
    params: ItemParams,
    response: Item,
    async handle(ctx, { params }) {
      return itemView(ctx, await ctx.registry.cms.setDeleted(ctx.website!.id, params.itemId, false), 0)
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/items/{itemId}/set-published',
    operationId: 'cms.items.setPublished',
    capability: 'cms.items.write',
    rateClass: 'standard',
    tool: 'set_item_published',
    tag,
    deprecated: true,
    summary: 'Publish, schedule or unpublish an item',
    description: `${DEPRECATED} action publish (now), unpublish, or schedule with publishAt (ISO time in the future). Only published items reach sites.`,
    params: ItemParams,
    body: Type.Object(
      { action: StringEnum(['publish', 'unpublish', 'schedule'] as const), publishAt: Type.Optional(Type.String({ format: 'date-time' })) },
      { additionalProperties: false },
    ),
    response: Item,
    async handle(ctx, { params, body }) {
      const item = await ctx.registry.cms.setPublished(ctx.website!.id, ctx.website!.record.orgId, actorOf(ctx), params.itemId, {
        action: body.action,
        publishAt: body.publishAt === undefined ? undefined : Date.parse(body.publishAt),
      })
      return itemView(ctx, item, 0)
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/items/{itemId}/backreferences',
    operationId: 'cms.items.backreferences',
    capability: 'cms.items.read',
    rateClass: 'standard',
    tool: 'item_backreferences',
    tag,
    deprecated: true,
    summary: 'Items that refer to this one',
    description: `${DEPRECATED} Every item of the website whose reference or multi_reference field points at this item, with the collection and field.`,
    params: ItemParams,
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Page(Type.Object({ collection: Type.String(), field: Type.String(), item: Item })),
    handle(ctx, { params, query }) {
      // By collection, field and item slug (unique in its collection): a key each reference has once.
      const refs = ctx.registry.cms
        .backreferences(ctx.website!.id, params.itemId)
        .map((r) => ({ key: `${r.collection.slug}\u0000${r.field}\u0000${r.item.slug}`, r }))
      const page = pageByKey(
        refs.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)),
        (e) => e.key,
        query.limit ?? LIST_LIMIT_DEFAULT,
        query.cursor,
      )
      return {
        items: page.items.map(({ r }) => ({ collection: r.collection.slug, field: r.field, item: itemView(ctx, r.item, 0) })),
        nextCursor: page.nextCursor,
      }
    },
  }),
]
