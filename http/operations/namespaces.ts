/** A workspace's namespace and its sites' vanity addresses (`{label}.{namespace}.{site domain}`). */
import { Type } from '@sinclair/typebox'
import { auditActor } from '../../actors/organization/audit.js'
import type { Renames } from '../../actors/domains/namespaces.js'
import { iso } from '../../core/clock.js'
import { SUBDOMAIN_LABEL_MAX_CHARS } from '../../core/limits.js'
import { StringEnum, Timestamp, named } from '../../core/schemas/common.js'
import { defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'

const tag = 'Namespaces'

const RenamesView = Type.Object(
  { used: Type.Integer(), limit: Type.Integer(), left: Type.Integer() },
  { description: 'Renames made and left, for the lifetime (PLINTH_NAMESPACE_RENAMES with billing off; the plan’s with billing on)' },
)

const Namespace = named(
  'Namespace',
  Type.Object({
    namespace: Type.Union([
      Type.Object({
        name: Type.String(),
        addresses: Type.String({ description: 'The pattern each published site answers at: {label}.{name}.{site domain}' }),
        certificate: StringEnum(['pending', 'active'] as const, {
          description:
            'active once the front (on-demand TLS) has asked for a certificate of an address under the name since it was taken or renamed',
        }),
        renames: RenamesView,
        createdAt: Timestamp,
        renamedAt: Type.Union([Timestamp, Type.Null()]),
      }),
      Type.Null(),
    ]),
    next: Type.Object({ message: Type.String() }),
  }),
)

function namespaceView(ctx: OperationContext) {
  const record = ctx.registry.namespaces.get(ctx.org.id)
  const siteDomain = ctx.urls.siteDomain
  if (record === undefined)
    return {
      namespace: null,
      next: {
        message:
          'This workspace has no namespace. Check a name with check_namespace, then take it with rename_namespace: each published site then also answers at {label}.{name}.' +
          siteDomain,
      },
    }
  const certificate = record.certificateAt === null ? 'pending' : 'active'
  return {
    namespace: {
      name: record.name,
      addresses: `{label}.${record.name}.${siteDomain}`,
      certificate,
      renames: ctx.registry.namespaces.renames(ctx.org.id),
      createdAt: iso(record.createdAt),
      renamedAt: record.renamedAt === null ? null : iso(record.renamedAt),
    },
    next: {
      message:
        certificate === 'active'
          ? `Published sites answer at {label}.${record.name}.${siteDomain} (urls.vanity of each site; share urls.primary).`
          : `The new addresses need about a minute for HTTPS: call get_namespace again until certificate is active, then tell the person they are live.`,
    },
  } as const
}

const renamesOf = (renames: Renames) => `${renames.left} of ${renames.limit} rename${renames.limit === 1 ? '' : 's'} left`

export const namespaceOperations = [
  defineOperation({
    method: 'GET',
    path: '/v1/namespace',
    operationId: 'namespaces.get',
    capability: 'domains.read',
    rateClass: 'standard',
    tool: 'get_namespace',
    tag,
    summary: 'Get the workspace’s namespace',
    description:
      'The workspace’s namespace (null without one): each published site also answers at {label}.{namespace}.{site domain} (urls.vanity), its certificate state (pending until the front has asked for a certificate under the name; check again until active before telling the person) and the renames left.',
    response: Namespace,
    handle: (ctx) => namespaceView(ctx),
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/namespace/check',
    operationId: 'namespaces.check',
    capability: 'domains.read',
    rateClass: 'standard',
    tool: 'check_namespace',
    tag,
    summary: 'Check a namespace name',
    description:
      'Whether a name may be taken as the workspace’s namespace: 1-56 lowercase letters, digits and inner hyphens, not another workspace’s namespace and not a site’s subdomain (they share one name space).',
    query: Type.Object({ name: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
    response: Type.Object({ name: Type.String(), available: Type.Boolean(), reason: Type.Union([Type.String(), Type.Null()]) }),
    handle(ctx, { query }) {
      const name = query.name.trim().toLowerCase()
      return { name, ...ctx.registry.namespaces.check(name, ctx.org.id) }
    },
  }),
  defineOperation({
    method: 'PUT',
    path: '/v1/namespace',
    operationId: 'namespaces.rename',
    capability: 'domains.manage',
    rateClass: 'standard',
    tool: 'rename_namespace',
    tag,
    extraErrors: ['payment_required', 'conflict'],
    summary: 'Take or rename the workspace’s namespace',
    description:
      'Takes the name as the workspace’s namespace, or renames it. A rename ends every old vanity address at once (tell the person) and counts against the renames left (PLINTH_NAMESPACE_RENAMES, or the plan’s with billing on: 402 with details.upgradeUrl on the free plan); rename only to the exact name the person asked for. 409 when the name is taken or no rename is left (details.reason rename_limit).',
    body: Type.Object({ name: Type.String({ minLength: 1, maxLength: SUBDOMAIN_LABEL_MAX_CHARS }) }, { additionalProperties: false }),
    response: Namespace,
    async handle(ctx, { body }) {
      const { renamed } = await ctx.registry.namespaces.take(auditActor(ctx.principal), ctx.org.id, body.name.trim())
      const view = namespaceView(ctx)
      if (renamed === null) return view
      return {
        ...view,
        next: {
          message: `Renamed from ${renamed}: every address under ${renamed}.${ctx.urls.siteDomain} stopped working at once; tell the person. ${view.next.message} (${renamesOf(ctx.registry.namespaces.renames(ctx.org.id))}.)`,
        },
      }
    },
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/websites/{websiteId}/vanity',
    operationId: 'namespaces.renameVanity',
    capability: 'domains.manage',
    rateClass: 'standard',
    tool: 'rename_vanity',
    tag,
    extraErrors: ['payment_required', 'conflict'],
    summary: 'Rename a site’s vanity label',
    description:
      'Changes the label of the site’s vanity address ({label}.{namespace}.{site domain}; by default its subdomain), unique within the namespace. The old vanity address stops working at once. Renames are limited per site (the same limit as the namespace’s).',
    params: WebsitePathParams,
    body: Type.Object({ label: Type.String({ minLength: 1, maxLength: SUBDOMAIN_LABEL_MAX_CHARS }) }, { additionalProperties: false }),
    response: Type.Object({
      label: Type.String(),
      vanity: Type.String({ description: 'The new vanity address' }),
      renames: RenamesView,
      next: Type.Object({ message: Type.String() }),
    }),
    async handle(ctx, { body }) {
      const website = ctx.website!
      const { label, host } = await ctx.registry.namespaces.renameVanity(auditActor(ctx.principal), website.record, body.label.trim())
      const vanity = ctx.urls.site(host)
      const renames = ctx.registry.namespaces.vanityRenames(website.record)
      return {
        label,
        vanity,
        renames,
        next: {
          message: `${website.record.publishedVersion === null ? 'Once published, the site answers' : 'The site answers'} at ${vanity}; its old vanity address stopped working at once (tell the person). ${renamesOf(renames)} for this site.`,
        },
      }
    },
  }),
]
