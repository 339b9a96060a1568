import { Type } from '@sinclair/typebox'
import { ApiError } from '../../core/errors.js'
import { actorOf } from '../../core/principal.js'
import { ItemAsset, ItemProperties, itemView } from './cms-views.js'
import { blogPaths } from '../../actors/cms/blog.js'
import { pageByOffset } from '../../core/cursor.js'
import { LIST_LIMIT_DEFAULT } from '../../core/limits.js'
import { ListQuery, named, Page } from '../../core/schemas/common.js'
import { defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'

const tag = 'Blog (deprecated)'
const DEPRECATED =
  'Deprecated: the managed blog keeps working for sites that use it; put new posts in source files unless the owner asks for the CMS blog.'

const PostParams = Type.Object(
  { websiteId: Type.String({ description: 'Website id (`ws_…`)' }), postId: Type.String({ description: 'Post id (`itm_…`) or slug' }) },
  { additionalProperties: false },
)
const Post = named(
  'BlogPost',
  Type.Object(
    {
      ...ItemProperties,
      title: Type.Optional(Type.String()),
      date: Type.Optional(Type.String({ description: 'YYYY-MM-DD' })),
      excerpt: Type.Optional(Type.String()),
      body: Type.Optional(Type.String({ description: 'Markdown' })),
      tags: Type.Optional(Type.Array(Type.String())),
      cover: Type.Optional(Type.Union([ItemAsset, Type.Null()], { description: 'The image asset, or null when it is gone' })),
    },
    {
      additionalProperties: true,
      description:
        'An item of the blog-posts collection: the properties of every CMS item and the fields the blog writes (each present once set); a collection made before the blog may hold other fields too.',
    },
  ),
)
const Rendering = Type.Object({
  kind: Type.String(),
  connected: Type.Boolean({ description: 'The site has pages that render the posts' }),
  scaffolded: Type.Boolean({ description: 'This call wrote them as a new head version' }),
  indexPath: Type.String(),
  postPathPattern: Type.String(),
})

const PostFields = {
  body: Type.Optional(Type.String({ maxLength: 200_000, description: 'Markdown' })),
  excerpt: Type.Optional(Type.String({ maxLength: 1000 })),
  date: Type.Optional(Type.String({ pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'YYYY-MM-DD' })),
  tags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 50 }), { maxItems: 20 })),
  cover: Type.Optional(Type.String({ minLength: 1, maxLength: 40, description: 'An image asset id' })),
  slug: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  publish: Type.Optional(Type.Boolean()),
  publishAt: Type.Optional(Type.String({ format: 'date-time' })),
}

function values(body: {
  title?: string
  body?: string
  excerpt?: string
  date?: string
  tags?: string[]
  cover?: string
}): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const key of ['title', 'body', 'excerpt', 'date', 'tags', 'cover'] as const) if (body[key] !== undefined) out[key] = body[key]
  return out
}

function urls(ctx: OperationContext) {
  const record = ctx.website!.record
  const origin = record.publishedVersion === null ? ctx.urls.draft(record.subdomain) : ctx.urls.published(record.subdomain)
  const paths = blogPaths(record.kind)
  return { index: `${origin}${paths.indexPath}`, post: `${origin}${paths.postPathPattern}` }
}

export const blogOperations = [
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/blog',
    operationId: 'blog.get',
    capability: 'cms.items.read',
    rateClass: 'standard',
    tool: 'get_blog',
    tag,
    deprecated: true,
    summary: 'The blog: its collection, whether the site renders it, its URLs',
    description: `${DEPRECATED} Whether the blog-posts collection exists (and its post counts), whether the site has pages that render it, and where.`,
    params: WebsitePathParams,
    response: Type.Object({
      collection: Type.Union([
        Type.Object({ id: Type.String(), slug: Type.String(), posts: Type.Integer(), published: Type.Integer() }),
        Type.Null(),
      ]),
      rendering: Rendering,
      urls: Type.Object({ index: Type.String(), post: Type.String() }),
      notes: Type.Array(Type.String()),
    }),
    async handle(ctx) {
      const collection = ctx.registry.blog.collection(ctx.website!.id)
      const { rendering, notes } = await ctx.registry.blog.rendering(ctx.website!, null)
      let summary = null
      if (collection !== null) {
        const all = ctx.registry.cms.listItems(ctx.website!.id, collection.id, { limit: 1, offset: 0 })
        const published = ctx.registry.cms.listItems(ctx.website!.id, collection.id, { limit: 1, offset: 0, status: 'published' })
        summary = { id: collection.id, slug: collection.slug, posts: all.total, published: published.total }
      }
      return {
        collection: summary,
        rendering,
        urls: urls(ctx),
        notes: collection === null ? ['No blog yet: the first post creates it.', ...notes] : notes,
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/blog/posts',
    operationId: 'blog.posts.list',
    capability: 'cms.items.read',
    rateClass: 'standard',
    tool: 'list_blog_posts',
    tag,
    deprecated: true,
    summary: 'List blog posts',
    description: `${DEPRECATED} Newest first by date; published ones unless status says draft, scheduled or all.`,
    params: WebsitePathParams,
    query: Type.Object(
      {
        status: Type.Optional(
          Type.Union([Type.Literal('published'), Type.Literal('draft'), Type.Literal('scheduled'), Type.Literal('all')]),
        ),
        ...ListQuery,
      },
      { additionalProperties: false },
    ),
    response: Type.Object({ ...Page(Post).properties, total: Type.Integer() }),
    handle(ctx, { query }) {
      const collection = ctx.registry.blog.collection(ctx.website!.id)
      if (collection === null) return { items: [], total: 0, nextCursor: null }
      const page = pageByOffset(
        (offset, limit) =>
          ctx.registry.cms.listItems(ctx.website!.id, collection.id, {
            limit,
            offset,
            status: query.status ?? 'published',
            sort: { field: 'date', direction: 'desc' },
          }),
        query.limit ?? LIST_LIMIT_DEFAULT,
        query.cursor,
      )
      return { items: page.items.map((i) => itemView(ctx, i, 1)), total: page.total, nextCursor: page.nextCursor }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/blog/posts',
    operationId: 'blog.posts.create',
    capability: 'cms.items.write',
    rateClass: 'standard',
    tool: 'create_blog_post',
    tag,
    deprecated: true,
    summary: 'Create a blog post',
    description: `${DEPRECATED} title, body (Markdown), excerpt, date (YYYY-MM-DD), tags, cover (image asset id), slug; published by default (publish: false keeps a draft; publishAt schedules). The first post creates the blog-posts collection and, on a framework site, scaffolds /blog and /blog/:slug pages as a new head version.`,
    params: WebsitePathParams,
    body: Type.Object({ title: Type.String({ minLength: 1, maxLength: 300 }), ...PostFields }, { additionalProperties: false }),
    status: 201,
    response: Type.Object({
      post: Post,
      collection: Type.Object({ created: Type.Boolean(), addedFields: Type.Array(Type.String()) }),
      rendering: Rendering,
      notes: Type.Array(Type.String()),
    }),
    async handle(ctx, { body }) {
      const website = ctx.website!
      const actor = actorOf(ctx.principal)
      const ensured = await ctx.registry.blog.ensureCollection(website.id, website.record.orgId, actor)
      const publishAt = body.publishAt === undefined ? undefined : Date.parse(body.publishAt)
      const item = await ctx.registry.cms.createItem(website.id, ensured.collection.id, {
        slug: body.slug,
        values: values(body),
        publish: publishAt === undefined && body.publish !== false,
        publishAt,
      })
      const { rendering, notes } = await ctx.registry.blog.rendering(website, actor)
      return {
        post: itemView(ctx, item, 1),
        collection: { created: ensured.created, addedFields: ensured.addedFields },
        rendering,
        notes: [
          ...(item.publishedAt === null
            ? [
                item.publishAt === null
                  ? 'Saved as a draft; publish it with PATCH …/blog/posts/{postId} {publish: true}.'
                  : 'Scheduled: it is published when publishAt comes.',
              ]
            : []),
          ...notes,
        ],
      }
    },
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/websites/{websiteId}/blog/posts/{postId}',
    operationId: 'blog.posts.update',
    capability: 'cms.items.write',
    rateClass: 'standard',
    tool: 'update_blog_post',
    tag,
    deprecated: true,
    summary: 'Edit, publish or unpublish a blog post',
    description: `${DEPRECATED} postId is an id or a slug. Fields given replace theirs; publish true publishes now, false unpublishes.`,
    params: PostParams,
    body: Type.Object(
      { title: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })), ...PostFields },
      { additionalProperties: false },
    ),
    response: Type.Object({ post: Post }),
    async handle(ctx, { params, body }) {
      const website = ctx.website!
      const id = ctx.registry.blog.postId(website.id, params.postId, (collectionId, slug) =>
        ctx.registry.reads.itemsBySlug.get([collectionId, slug]),
      )
      const changed = values(body)
      let item = ctx.registry.cms.item(website.id, id)
      if (Object.keys(changed).length > 0 || body.slug !== undefined)
        item = await ctx.registry.cms.updateItem(website.id, id, { values: changed, slug: body.slug })
      if (body.publish !== undefined || body.publishAt !== undefined) {
        if (body.publish === true && body.publishAt !== undefined)
          throw new ApiError('validation', 'Give publish: true (now) or publishAt (later), not both', { field: 'body.publishAt' })
        const action = body.publishAt !== undefined ? 'schedule' : body.publish === true ? 'publish' : 'unpublish'
        item = await ctx.registry.cms.setPublished(website.id, website.record.orgId, actorOf(ctx.principal), id, {
          action,
          publishAt: body.publishAt === undefined ? undefined : Date.parse(body.publishAt),
        })
      }
      return { post: itemView(ctx, item, 1) }
    },
  }),
]
