import { Type } from '@sinclair/typebox'
import { auditActor } from '../../actors/organization/audit.js'
import { ListQuery, Page, StringEnum } from '../../core/schemas/common.js'
import { CreateWebsiteBody, RenameSubdomainBody, UpdateWebsiteBody, Website, type WebsiteResource } from '../../core/schemas/website.js'
import { principalCovers } from '../../core/principal.js'
import { LIST_LIMIT_DEFAULT } from '../../core/limits.js'
import { defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'
import { websiteResource } from '../resources.js'

function current(ctx: OperationContext): WebsiteResource {
  return websiteResource(ctx.website!, ctx.urls, ctx.registry)
}

const tag = 'Websites'

export const websiteOperations = [
  defineOperation({
    method: 'POST',
    path: '/v1/websites',
    operationId: 'websites.create',
    capability: 'websites.create',
    mayNeedPlanRoom: true,
    rateClass: 'standard',
    tool: 'create_website',
    tag,
    summary: 'Create a website',
    description:
      'Creates a website (kind framework by default; static for raw files; storage for file sharing) with an empty draft head at version 1. Use it before deploying or writing source; the kind can never change later.',
    body: CreateWebsiteBody,
    response: Website,
    status: 201,
    async handle(ctx, { body }) {
      const record = await ctx.org.createWebsite(auditActor(ctx.principal), body)
      return websiteResource(ctx.registry.website(record.id)!, ctx.urls, ctx.registry)
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites',
    operationId: 'websites.list',
    capability: 'websites.read',
    rateClass: 'standard',
    tool: 'list_websites',
    tag,
    summary: 'List websites',
    description:
      'Lists the websites this key can reach, newest first, paginated with cursor. Pass scope=trash to list soft-deleted websites that can be restored; name to find those whose name, slug or subdomain contains it.',
    query: Type.Object(
      {
        ...ListQuery,
        scope: Type.Optional(StringEnum(['live', 'trash'] as const, { description: 'trash lists soft-deleted websites' })),
        name: Type.Optional(
          Type.String({
            minLength: 1,
            maxLength: 100,
            description: 'Only websites whose name, slug or subdomain contains this (any case)',
          }),
        ),
      },
      { additionalProperties: false },
    ),
    response: Page(Website),
    handle(ctx, { query }) {
      const needle = query.name?.toLowerCase()
      const named = (id: string) => {
        if (needle === undefined) return true
        const record = ctx.registry.reads.websites.get(id)
        return record !== undefined && [record.name, record.slug, record.subdomain].some((text) => text.toLowerCase().includes(needle))
      }
      const page = ctx.org.listWebsiteIds(
        query.scope ?? 'live',
        query.limit ?? LIST_LIMIT_DEFAULT,
        query.cursor,
        (id) => principalCovers(ctx.principal, ctx.org.id, id) && named(id),
      )
      return {
        items: page.items.map((id) => websiteResource(ctx.registry.website(id)!, ctx.urls, ctx.registry)),
        nextCursor: page.nextCursor,
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}',
    operationId: 'websites.get',
    capability: 'websites.read',
    rateClass: 'standard',
    tool: 'get_website',
    tag,
    summary: 'Get a website',
    description:
      'Returns one website with its head and published versions, whether it has unpublished changes, and its draft and live URLs. Works for websites in the trash too (deletedAt is set).',
    params: WebsitePathParams,
    response: Website,
    allowDeletedWebsite: true,
    handle: (ctx) => current(ctx),
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/websites/{websiteId}',
    operationId: 'websites.update',
    capability: 'websites.manage',
    rateClass: 'standard',
    tool: 'update_website',
    tag,
    summary: 'Update name, slug or description',
    description:
      "Changes a website's name, slug or description. Hostnames do not change; use rename_subdomain to move the site to another subdomain.",
    params: WebsitePathParams,
    body: UpdateWebsiteBody,
    response: Website,
    async handle(ctx, { body }) {
      await ctx.website!.update(auditActor(ctx.principal), body)
      return current(ctx)
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}',
    operationId: 'websites.delete',
    capability: 'websites.manage',
    rateClass: 'standard',
    tool: 'delete_website',
    tag,
    summary: 'Soft-delete a website',
    description:
      'Moves a website to the trash: it goes offline on every hostname at once but keeps its history, slug and subdomain. Undo with restore_website.',
    params: WebsitePathParams,
    response: Website,
    allowDeletedWebsite: true,
    async handle(ctx) {
      await ctx.website!.delete(auditActor(ctx.principal))
      return current(ctx)
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/restore',
    operationId: 'websites.restore',
    capability: 'websites.manage',
    mayNeedPlanRoom: true,
    rateClass: 'standard',
    tool: 'restore_website',
    tag,
    summary: 'Restore a soft-deleted website',
    description: 'Brings a website back from the trash to the state it had when deleted, on the same hostnames.',
    params: WebsitePathParams,
    response: Website,
    allowDeletedWebsite: true,
    async handle(ctx) {
      await ctx.website!.restore(auditActor(ctx.principal))
      return current(ctx)
    },
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/websites/{websiteId}/subdomain',
    operationId: 'websites.renameSubdomain',
    capability: 'websites.manage',
    rateClass: 'standard',
    tool: 'rename_subdomain',
    tag,
    summary: 'Rename the subdomain',
    description:
      'Moves the website to a new subdomain label (1-56 lowercase letters, digits, inner hyphens). The old label stops serving at once and becomes free for others.',
    params: WebsitePathParams,
    body: RenameSubdomainBody,
    response: Website,
    async handle(ctx, { body }) {
      await ctx.website!.renameSubdomain(auditActor(ctx.principal), body.label)
      return current(ctx)
    },
  }),
]
