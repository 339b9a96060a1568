import { Type } from '@sinclair/typebox'
import { auditActor } from '../../actors/organization/audit.js'
import { challengeName } from '../../actors/domains/domains.js'
import { iso } from '../../core/clock.js'
import { pageByKey } from '../../core/cursor.js'
import { DOMAIN_CHECK_AGAIN_SECONDS, LIST_LIMIT_DEFAULT, DOMAIN_HOSTNAME_MAX_CHARS } from '../../core/limits.js'
import { ListQuery, Page, StringEnum, Timestamp, named } from '../../core/schemas/common.js'
import type { DomainRecord } from '../../core/schemas/domains.js'
import { defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'

const tag = 'Domains'

const DomainParams = Type.Object(
  { websiteId: Type.String({ description: 'Website id (`ws_…`)' }), domainId: Type.String({ description: 'Domain id (`dom_…`)' }) },
  { additionalProperties: false },
)

const Domain = named(
  'Domain',
  Type.Object({
    id: Type.String(),
    websiteId: Type.String(),
    hostname: Type.String({ description: 'ASCII (punycode) form' }),
    state: StringEnum(['pending', 'verified', 'active', 'failed'] as const),
    reason: Type.Union([Type.String(), Type.Null()], { description: 'Why it is not active yet' }),
    primary: Type.Boolean(),
    redirectPlatform: Type.Boolean({ description: 'The platform subdomain redirects here too' }),
    dnsRecords: Type.Array(Type.Object({ type: Type.String(), name: Type.String(), value: Type.String() }), {
      description: 'What to create at the DNS provider',
    }),
    dns: Type.Object(
      { records: Type.Array(Type.Object({ type: Type.String(), name: Type.String(), value: Type.String() })) },
      { description: 'The same records, in the shape agents copy into a Type / Name / Value table' },
    ),
    apexForward: Type.Union([Type.Object({ from: Type.String(), to: Type.String(), message: Type.String() }), Type.Null()], {
      description:
        'For a www. domain: forward the bare name to it at the registrar (a free 301 forward; most DNS providers cannot point a bare name at a CNAME); null otherwise',
    }),
    url: Type.Union([Type.String(), Type.Null()], { description: 'Where it serves, once active' }),
    next: Type.Object({ message: Type.String(), checkAgainSeconds: Type.Union([Type.Integer(), Type.Null()]) }),
    createdAt: Timestamp,
    checkedAt: Type.Union([Timestamp, Type.Null()]),
    activatedAt: Type.Union([Timestamp, Type.Null()]),
  }),
)

function domainView(ctx: OperationContext, record: DomainRecord) {
  const records = ctx.registry.domains.records(record)
  const todo = records.map((r) => `${r.type} ${r.name} → ${r.value}`).join('; ')
  const verify = `POST /v1/websites/${record.websiteId}/domains/${record.id}/verify (MCP: verify_domain)`
  const next = {
    pending: {
      message: `Create these DNS records: ${todo}. Then verify with ${verify}; DNS can take a while to update.`,
      checkAgainSeconds: DOMAIN_CHECK_AGAIN_SECONDS,
    },
    verified: {
      message: `Ownership is proven. Now point ${record.hostname} at the platform (${records
        .filter((r) => r.type !== 'TXT')
        .map((r) => `${r.type} → ${r.value}`)
        .join(' or ')}), then verify again with ${verify}.`,
      checkAgainSeconds: DOMAIN_CHECK_AGAIN_SECONDS,
    },
    failed: {
      message: `${record.reason ?? 'The check failed'}. Fix the record (${challengeName(record.hostname)} must hold ${record.token}), then verify again with ${verify}.`,
      checkAgainSeconds: DOMAIN_CHECK_AGAIN_SECONDS,
    },
    active: {
      message: record.primary
        ? `${record.hostname} serves the published site and is its primary address.`
        : `${record.hostname} serves the published site. To send every other address of the site here, POST /v1/websites/${record.websiteId}/domains/${record.id}/primary (MCP: set_primary_domain).`,
      checkAgainSeconds: null,
    },
  }[record.state]
  return {
    id: record.id,
    websiteId: record.websiteId,
    hostname: record.hostname,
    state: record.state,
    reason: record.reason,
    primary: record.primary,
    redirectPlatform: record.redirectPlatform,
    dnsRecords: records,
    dns: { records },
    apexForward: record.hostname.startsWith('www.')
      ? {
          from: record.hostname.slice(4),
          to: `https://${record.hostname}/`,
          message: `At your registrar, forward ${record.hostname.slice(4)} to https://${record.hostname}/ (a permanent 301 forward), so the bare name reaches the site too.`,
        }
      : null,
    url: record.state === 'active' ? `https://${record.hostname}/` : null,
    next,
    createdAt: iso(record.createdAt),
    checkedAt: record.checkedAt === null ? null : iso(record.checkedAt),
    activatedAt: record.activatedAt === null ? null : iso(record.activatedAt),
  }
}

/** Domain records in hostname order: the key lists of domains page by (a hostname is one domain's, installation-wide). */
function byHostname<T extends { hostname: string }>(records: T[]): T[] {
  return records.sort((a, b) => (a.hostname < b.hostname ? -1 : a.hostname > b.hostname ? 1 : 0))
}

export const domainOperations = [
  defineOperation({
    method: 'GET',
    path: '/v1/domains',
    operationId: 'domains.listAll',
    capability: 'domains.read',
    rateClass: 'standard',
    tool: 'list_all_domains',
    tag,
    summary: 'List the organization’s custom domains',
    description:
      'Every custom domain of every website of the organization the caller can see, with its state, by hostname, a page at a time.',
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Page(Domain),
    handle(ctx, { query }) {
      const store = ctx.registry.reads
      const records = []
      for (const { value } of store.websitesByOrg.range({
        start: [ctx.org.id, 'live', 0],
        end: [ctx.org.id, 'live', Number.MAX_SAFE_INTEGER],
      })) {
        const website = store.websites.get(value)
        if (website === undefined || (ctx.principal.access.kind === 'websites' && !(ctx.principal.access.websiteIds ?? []).includes(value)))
          continue
        records.push(...ctx.registry.domains.list(value))
      }
      const page = pageByKey(byHostname(records), (r) => r.hostname, query.limit ?? LIST_LIMIT_DEFAULT, query.cursor)
      return { items: page.items.map((record) => domainView(ctx, record)), nextCursor: page.nextCursor }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/domains',
    operationId: 'domains.list',
    capability: 'domains.read',
    rateClass: 'standard',
    tool: 'list_domains',
    tag,
    summary: 'List a website’s custom domains',
    description:
      'The website’s custom domains with their state, the DNS records each needs and the next step, by hostname, a page at a time.',
    params: WebsitePathParams,
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Page(Domain),
    handle(ctx, { query }) {
      const page = pageByKey(
        byHostname(ctx.registry.domains.list(ctx.website!.id)),
        (r) => r.hostname,
        query.limit ?? LIST_LIMIT_DEFAULT,
        query.cursor,
      )
      return { items: page.items.map((record) => domainView(ctx, record)), nextCursor: page.nextCursor }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/domains',
    operationId: 'domains.add',
    capability: 'domains.manage',
    rateClass: 'standard',
    tool: 'add_domain',
    tag,
    summary: 'Add a custom domain',
    description:
      'Adds a domain you own (www.example.com; IDNA names are converted) as pending and answers the DNS records to create: a TXT ownership record and the routing record. Then call verify_domain.',
    params: WebsitePathParams,
    body: Type.Object({ hostname: Type.String({ minLength: 1, maxLength: DOMAIN_HOSTNAME_MAX_CHARS }) }, { additionalProperties: false }),
    response: Domain,
    status: 201,
    async handle(ctx, { body }) {
      return domainView(ctx, await ctx.registry.domains.add(auditActor(ctx.principal), ctx.website!.record, body.hostname))
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/domains/{domainId}/connect',
    operationId: 'domains.connect',
    capability: 'domains.manage',
    rateClass: 'standard',
    tool: 'connect_domain',
    tag,
    summary: 'Connect a custom domain at its DNS provider',
    description:
      'After add_domain: finds the domain’s DNS provider with Domain Connect (the TXT record _domainconnect.{domain}, then the provider’s settings) and answers its name and control-panel link. With the operator’s Domain Connect template, url is a signed link where the person signs in at the provider and approves, and the provider creates the records; otherwise url is null: give the person dns.records exactly as answered (Type / Name / Value) and, for a www domain, apexForward. Then verify_domain every next.checkAgainSeconds until active.',
    params: DomainParams,
    response: Type.Object({
      provider: Type.Union(
        [Type.Object({ id: Type.String(), name: Type.String(), controlPanel: Type.Union([Type.String(), Type.Null()]) }), Type.Null()],
        {
          description: 'The DNS provider, when it supports Domain Connect; null otherwise',
        },
      ),
      url: Type.Union([Type.String(), Type.Null()], {
        description: 'A signed link that applies the records at the provider in one approval; null without the operator’s template',
      }),
      dns: Type.Object({ records: Type.Array(Type.Object({ type: Type.String(), name: Type.String(), value: Type.String() })) }),
      apexForward: Domain.properties.apexForward,
      domain: Domain,
      next: Type.Object({ message: Type.String(), checkAgainSeconds: Type.Union([Type.Integer(), Type.Null()]) }),
    }),
    async handle(ctx, { params }) {
      const { record, discovery } = await ctx.registry.domains.connect(ctx.website!.id, params.domainId, ctx.registry.outbound)
      const view = domainView(ctx, record)
      const where = discovery.provider === null ? 'their DNS provider' : discovery.provider.name
      const panel = discovery.provider?.controlPanel == null ? '' : ` (${discovery.provider.controlPanel})`
      const message =
        record.state === 'active'
          ? view.next.message
          : discovery.url !== null
            ? `Give the person this link first: they sign in at ${where} and approve, and ${where} creates the records. Then call verify_domain every ${view.next.checkAgainSeconds ?? 60} seconds until the domain is active. If they cannot, give them dns.records as a Type / Name / Value table.`
            : `${discovery.why ?? 'No apply link'}. Give the person dns.records exactly as answered, as a Type / Name / Value table, to create at ${where}${panel}${view.apexForward === null ? '' : `, and apexForward's forwarding rule`}. Then call verify_domain every ${view.next.checkAgainSeconds ?? 60} seconds until the domain is active.`
      return {
        provider: discovery.provider,
        url: discovery.url,
        dns: view.dns,
        apexForward: view.apexForward,
        domain: view,
        next: { message, checkAgainSeconds: view.next.checkAgainSeconds },
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/domains/{domainId}',
    operationId: 'domains.get',
    capability: 'domains.read',
    rateClass: 'standard',
    tool: 'get_domain',
    tag,
    summary: 'Get a custom domain',
    description: 'The domain’s state, what the last check found, the DNS records and the next step.',
    params: DomainParams,
    response: Domain,
    handle: (ctx, { params }) => domainView(ctx, ctx.registry.domains.get(ctx.website!.id, params.domainId)),
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/domains/{domainId}',
    operationId: 'domains.remove',
    capability: 'domains.manage',
    rateClass: 'standard',
    tool: 'remove_domain',
    tag,
    summary: 'Remove a custom domain',
    description: 'Stops serving the domain at once and frees the name for any website.',
    params: DomainParams,
    response: Type.Object({ removed: Type.Boolean() }),
    async handle(ctx, { params }) {
      await ctx.registry.domains.remove(auditActor(ctx.principal), ctx.website!.record, params.domainId)
      return { removed: true }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/domains/{domainId}/verify',
    operationId: 'domains.verify',
    capability: 'domains.manage',
    rateClass: 'standard',
    tool: 'verify_domain',
    tag,
    summary: 'Check a custom domain’s DNS',
    description:
      'Asks DNS for the TXT ownership record, then for the routing; an active domain serves the published site at once. Call again after next.checkAgainSeconds while it is pending.',
    params: DomainParams,
    response: Domain,
    async handle(ctx, { params }) {
      return domainView(ctx, await ctx.registry.domains.verify(auditActor(ctx.principal), ctx.website!.record, params.domainId))
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/domains/{domainId}/primary',
    operationId: 'domains.setPrimary',
    capability: 'domains.manage',
    rateClass: 'standard',
    tool: 'set_primary_domain',
    tag,
    summary: 'Make a domain the primary address',
    description:
      'Every other active domain of the website redirects here with 301 (and the platform subdomain too with redirectPlatform: true).',
    params: DomainParams,
    body: Type.Object({ redirectPlatform: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
    response: Domain,
    async handle(ctx, { params, body }) {
      return domainView(
        ctx,
        await ctx.registry.domains.setPrimary(
          auditActor(ctx.principal),
          ctx.website!.record,
          params.domainId,
          body.redirectPlatform === true,
        ),
      )
    },
  }),
]
