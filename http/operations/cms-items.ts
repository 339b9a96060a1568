// The CMS operations on items: create, list (filter, search, sort), find, get, update, delete and restore, publication, backreferences.
import { Type } from '@sinclair/typebox'
import { FILTER_OPERATORS, type Filter } from '../../actors/cms/item-query.js'
import { ApiError } from '../../core/errors.js'
import { checkDepth } from '../../core/json-text.js'
import { ListQuery, Page, StringEnum } from '../../core/schemas/common.js'
import { pageByKey, pageByOffset } from '../../core/cursor.js'
import { LIST_LIMIT_DEFAULT } from '../../core/limits.js'
import { defineOperation, WebsitePathParams } from '../operation.js'
import { CollectionParams, DEPRECATED, Item, actorOf, itemView, tag } from './cms-views.js'

const ItemParams = Type.Object(
  { websiteId: Type.String({ description: 'Website id (`ws_…`)' }), itemId: Type.String({ description: 'Item id (`itm_…`)' }) },
  { additionalProperties: false },
)

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

/** The CMS's item operations, in the order the API lists them. */
export const cmsItemOperations = [
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
