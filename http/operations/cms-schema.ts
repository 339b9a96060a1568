// The CMS operations on the schema: the website's schema, collections (create, list, get, rename, delete) and their fields (add, change, delete).
import { Type } from '@sinclair/typebox'
import type { FieldInput } from '../../actors/cms/rules.js'
import { FIELD_TYPES } from '../../core/schemas/cms.js'
import { ListQuery, Page, StringEnum } from '../../core/schemas/common.js'
import { pageByKey } from '../../core/cursor.js'
import { LIST_LIMIT_DEFAULT } from '../../core/limits.js'
import { defineOperation, WebsitePathParams } from '../operation.js'
import { Collection, CollectionParams, DEPRECATED, Field, actorOf, collectionView, fieldView, tag } from './cms-views.js'

const FieldParams = Type.Object(
  { websiteId: Type.String({ description: 'Website id (`ws_…`)' }), fieldId: Type.String({ description: 'Field id (`fld_…`)' }) },
  { additionalProperties: false },
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

/** The CMS's schema operations, in the order the API lists them. */
export const cmsSchemaOperations = [
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
]
