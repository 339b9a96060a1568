import { Type } from '@sinclair/typebox'
import { personOf, principalCapabilities } from '../../core/principal.js'
import { CAPABILITIES, PERSON_ROLES } from '../../core/roles.js'
import { ListQuery, Page, StringEnum, Timestamp, WebsiteId, named } from '../../core/schemas/common.js'
import { iso } from '../../core/clock.js'
import { pageByKey } from '../../core/cursor.js'
import { ApiError } from '../../core/errors.js'
import { LIST_LIMIT_DEFAULT } from '../../core/limits.js'
import { defineOperation } from '../operation.js'

const Role = StringEnum(PERSON_ROLES)

const Me = named(
  'Me',
  Type.Object({
    organization: Type.Object({ id: Type.String(), name: Type.String() }),
    actor: Type.Object({
      kind: StringEnum(['api_key', 'oauth', 'user'] as const, {
        description: 'api_key, oauth (an application acting for a person) or user (a dashboard session)',
      }),
      id: Type.String({ description: 'The API key id, or the person id' }),
      name: Type.Union([Type.String(), Type.Null()]),
      agent: Type.Optional(Type.String({ description: 'oauth: the name of the application acting for the person' })),
    }),
    access: Type.Object({
      kind: StringEnum(['organization', 'websites'] as const),
      role: Role,
      websiteIds: Type.Optional(Type.Array(WebsiteId)),
    }),
    capabilities: Type.Array(StringEnum(CAPABILITIES)),
    person: Type.Optional(
      Type.Object({
        id: Type.String(),
        email: Type.Union([Type.String(), Type.Null()]),
        name: Type.String(),
        personalWorkspaceId: Type.String(),
        pendingEmail: Type.Union([Type.String(), Type.Null()], {
          description: 'A new address asked for and not confirmed yet (a link went to it)',
        }),
        lastWorkspaceId: Type.Union([Type.String(), Type.Null()], {
          description: 'The workspace a sign-in lands in; null: the personal one',
        }),
      }),
    ),
    workspaces: Type.Optional(
      Type.Array(Type.Object({ id: Type.String(), name: Type.String(), role: Role, personal: Type.Boolean() }), {
        description: 'A person: every organization they belong to (sessions choose one with the X-Organization-Id header)',
      }),
    ),
    collaborations: Type.Optional(Type.Array(Type.Object({ websiteId: WebsiteId, organizationId: Type.String(), role: Role }))),
  }),
)

const Connection = named(
  'Connection',
  Type.Object({
    id: Type.String({ description: 'The grant id (`grt_…`)' }),
    application: Type.String({ description: 'The application’s name, as it registered' }),
    clientId: Type.String(),
    scope: Type.String({ description: 'platform:content, platform:edit or platform:admin' }),
    resource: Type.String({ description: 'Where its tokens work (the REST API or the MCP endpoint)' }),
    organizationId: Type.String({ description: 'The workspace it acts in' }),
    createdAt: Timestamp,
  }),
)

export const meOperations = [
  defineOperation({
    method: 'GET',
    path: '/v1/me',
    operationId: 'me.get',
    capability: 'websites.read',
    rateClass: 'standard',
    tool: 'whoami',
    tag: 'Account',
    summary: 'Who am I',
    description:
      'Returns who is calling (an API key, or a person through OAuth or the dashboard), the organization this call acts in, the access scope and exact capabilities; for a person also their workspaces. Call it first to learn which websites and operations are open to you.',
    response: Me,
    handle(ctx) {
      const { principal, registry } = ctx
      const out: Record<string, unknown> = {
        organization: { id: ctx.org.id, name: ctx.org.record.name },
        actor:
          principal.agent === null
            ? { kind: principal.kind, id: principal.id, name: principal.name }
            : { kind: principal.kind, id: principal.id, name: principal.name, agent: principal.agent },
        access: principal.access,
        capabilities: principalCapabilities(principal),
      }
      const personId = personOf(principal)
      if (personId !== null) {
        const person = registry.people.person(personId)!
        out.person = {
          id: person.id,
          email: person.email,
          name: person.name,
          personalWorkspaceId: person.personalOrgId,
          pendingEmail: person.pendingEmail?.email ?? null,
          lastWorkspaceId: person.lastWorkspaceId ?? null,
        }
        out.workspaces = registry.people.workspaces(person.id)
        out.collaborations = registry.people
          .collaborations(person.id)
          .map((c) => ({ websiteId: c.websiteId, organizationId: c.orgId, role: c.role }))
      }
      return out as never
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/me/connections',
    operationId: 'me.connections.list',
    capability: 'websites.read',
    personOnly: true,
    rateClass: 'standard',
    tool: 'list_connected_apps',
    tag: 'Account',
    summary: 'Applications connected to you',
    description:
      'The applications (agents, MCP clients) a person allowed to act for them over OAuth, newest first: what each may do and where. A person only.',
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Page(Connection),
    handle(ctx, { query }) {
      const grants = ctx.registry.oauth.grantsOf(personOf(ctx.principal)!)
      const page = pageByKey(
        grants.map((g) => ({ key: `${String(1e15 - g.grant.createdAt).padStart(16, '0')}${g.grant.id}`, g })),
        (e) => e.key,
        query.limit ?? LIST_LIMIT_DEFAULT,
        query.cursor,
      )
      return {
        items: page.items.map(({ g }) => ({
          id: g.grant.id,
          application: g.client.name,
          clientId: g.client.id,
          scope: g.grant.scope,
          resource: g.grant.resource,
          organizationId: g.grant.orgId,
          createdAt: iso(g.grant.createdAt),
        })),
        nextCursor: page.nextCursor,
      }
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/me/connections/{grantId}',
    operationId: 'me.connections.revoke',
    capability: 'websites.read',
    personOnly: true,
    rateClass: 'standard',
    tool: 'disconnect_app',
    tag: 'Account',
    summary: 'Disconnect an application',
    description: 'The application can no longer act for the person: every token of the grant stops working at once. A person only.',
    params: Type.Object(
      { grantId: Type.String({ minLength: 1, maxLength: 64, description: 'Grant id (`grt_…`)' }) },
      { additionalProperties: false },
    ),
    response: Type.Object({ id: Type.String(), revoked: Type.Literal(true) }),
    async handle(ctx, { params }) {
      if (!(await ctx.registry.oauth.disconnect(personOf(ctx.principal)!, params.grantId)))
        throw new ApiError(
          'not_found',
          `No application is connected to you with grant ${params.grantId}; GET /v1/me/connections lists them`,
        )
      return { id: params.grantId, revoked: true as const }
    },
  }),
]
