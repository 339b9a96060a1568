import { Type } from '@sinclair/typebox'
import { slugify } from '../../actors/cms/rules.js'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import type { LegacyPageRecord } from '../../core/schemas/cms.js'
import { ListQuery, Page, StringEnum, Timestamp, named } from '../../core/schemas/common.js'
import { decodeCursor, encodeCursor } from '../../core/cursor.js'
import { LIST_LIMIT_DEFAULT } from '../../core/limits.js'
import { defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'

const tag = 'Legacy pages (deprecated)'
const DEPRECATED =
  'Deprecated: legacy page records are stored and returned but never rendered by the site; pages of a site are source files (put_source_file).'
const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*(?:\/[a-z0-9]+(?:-[a-z0-9]+)*)*$/
const CONTENT_MAX = 200_000

const PageParams = Type.Object(
  { websiteId: Type.String({ description: 'Website id (`ws_…`)' }), pageId: Type.String({ description: 'Page id (`pg_…`) or slug' }) },
  { additionalProperties: false },
)

const LegacyPage = named(
  'LegacyPage',
  Type.Object({
    id: Type.String(),
    title: Type.String(),
    slug: Type.String(),
    content: Type.String({ description: 'As written; never served by the site' }),
    format: StringEnum(['markdown', 'html'] as const),
    description: Type.String(),
    rendered: Type.Literal(false, { description: 'Legacy page records are never rendered' }),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
)

function view(record: LegacyPageRecord) {
  return {
    id: record.id,
    title: record.title,
    slug: record.slug,
    content: record.content,
    format: record.format,
    description: record.description,
    rendered: false as const,
    createdAt: iso(record.createdAt),
    updatedAt: iso(record.updatedAt),
  }
}

function find(ctx: OperationContext, idOrSlug: string): LegacyPageRecord {
  const record = ctx.registry.legacyPages.find(ctx.website!.id, idOrSlug)
  if (record === undefined) throw new ApiError('not_found', `No legacy page ${idOrSlug} on this website`)
  return record
}

function checkSlug(slug: string): void {
  if (!SLUG.test(slug) || slug.length > 200)
    throw new ApiError('validation', `slug "${slug}" is lowercase words with hyphens, optionally nested with /`, { field: 'body.slug' })
}

const Fields = {
  title: Type.String({ minLength: 1, maxLength: 300 }),
  slug: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  content: Type.Optional(Type.String({ maxLength: CONTENT_MAX })),
  format: Type.Optional(StringEnum(['markdown', 'html'] as const)),
  description: Type.Optional(Type.String({ maxLength: 1000 })),
}

export const legacyPageOperations = [
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/pages',
    operationId: 'pages.create',
    capability: 'pages.write',
    rateClass: 'standard',
    tool: 'create_legacy_page',
    tag,
    deprecated: true,
    summary: 'Store a legacy page record',
    description: `${DEPRECATED} title, slug (default from the title, unique), content, format (markdown or html), description.`,
    params: WebsitePathParams,
    body: Type.Object(Fields, { additionalProperties: false }),
    status: 201,
    response: LegacyPage,
    async handle(ctx, { body }) {
      const slug = body.slug ?? (slugify(body.title) || 'page')
      checkSlug(slug)
      const record = await ctx.registry.legacyPages.create(ctx.website!.id, {
        title: body.title,
        slug,
        content: body.content ?? '',
        format: body.format ?? 'markdown',
        description: body.description ?? '',
      })
      return view(record)
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/pages',
    operationId: 'pages.list',
    capability: 'pages.read',
    rateClass: 'standard',
    tool: 'list_legacy_pages',
    tag,
    deprecated: true,
    summary: 'List legacy page records',
    description: `${DEPRECATED} By slug, a page at a time.`,
    params: WebsitePathParams,
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Page(LegacyPage),
    handle(ctx, { query }) {
      const store = ctx.registry.reads
      const limit = query.limit ?? LIST_LIMIT_DEFAULT
      const after = query.cursor === undefined ? null : String(decodeCursor(query.cursor, 1)[0])
      const items: LegacyPageRecord[] = []
      let next: string | null = null
      for (const { value } of store.legacyPagesBySlug.range({
        start: [ctx.website!.id, after === null ? '' : `${after}\u0000`],
        end: [ctx.website!.id, '\uffff'],
      })) {
        const record = store.legacyPages.get(value)
        if (record === undefined) continue
        if (items.length === limit) {
          next = encodeCursor([items[items.length - 1].slug])
          break
        }
        items.push(record)
      }
      return { items: items.map(view), nextCursor: next }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/pages/{pageId}',
    operationId: 'pages.get',
    capability: 'pages.read',
    rateClass: 'standard',
    tool: 'get_legacy_page',
    tag,
    deprecated: true,
    summary: 'Get a legacy page record',
    description: `${DEPRECATED} By id or slug.`,
    params: PageParams,
    response: LegacyPage,
    handle(ctx, { params }) {
      return view(find(ctx, params.pageId))
    },
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/websites/{websiteId}/pages/{pageId}',
    operationId: 'pages.update',
    capability: 'pages.write',
    rateClass: 'standard',
    tool: 'update_legacy_page',
    tag,
    deprecated: true,
    summary: 'Change a legacy page record',
    description: `${DEPRECATED} Any of title, slug, content, format, description.`,
    params: PageParams,
    body: Type.Object({ ...Fields, title: Type.Optional(Fields.title) }, { additionalProperties: false }),
    response: LegacyPage,
    async handle(ctx, { params, body }) {
      find(ctx, params.pageId)
      if (body.slug !== undefined) checkSlug(body.slug)
      const next = await ctx.registry.legacyPages.update(ctx.website!.id, params.pageId, (current) => ({
        title: body.title ?? current.title,
        slug: body.slug ?? current.slug,
        content: body.content ?? current.content,
        format: body.format ?? current.format,
        description: body.description ?? current.description,
      }))
      return view(next)
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/pages/{pageId}',
    operationId: 'pages.delete',
    capability: 'pages.write',
    rateClass: 'standard',
    tool: 'delete_legacy_page',
    tag,
    deprecated: true,
    summary: 'Delete a legacy page record',
    description: `${DEPRECATED} Gone for good.`,
    params: PageParams,
    response: Type.Object({ deleted: Type.Boolean() }),
    async handle(ctx, { params }) {
      await ctx.registry.legacyPages.delete(ctx.website!.id, params.pageId)
      return { deleted: true }
    },
  }),
]
