import { Type } from '@sinclair/typebox'
import { personOf, principalCapabilities } from '../../core/principal.js'
import { CAPABILITIES, PERSON_ROLES } from '../../core/roles.js'
import { StringEnum, WebsiteId, named } from '../../core/schemas/common.js'
import { defineOperation } from '../operation.js'

const Role = StringEnum(PERSON_ROLES)

const Me = named(
  'Me',
  Type.Object({
    organization: Type.Object({ id: Type.String(), name: Type.String() }),
    actor: Type.Object({
      kind: StringEnum(['api_key', 'oauth', 'user'] as const, { description: 'api_key, oauth (an application acting for a person) or user (a dashboard session)' }),
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
        actor: principal.agent === null ? { kind: principal.kind, id: principal.id, name: principal.name } : { kind: principal.kind, id: principal.id, name: principal.name, agent: principal.agent },
        access: principal.access,
        capabilities: principalCapabilities(principal),
      }
      const personId = personOf(principal)
      if (personId !== null) {
        const person = registry.people.person(personId)!
        out.person = { id: person.id, email: person.email, name: person.name, personalWorkspaceId: person.personalOrgId }
        out.workspaces = registry.people.workspaces(person.id)
        out.collaborations = registry.people.collaborations(person.id).map((c) => ({ websiteId: c.websiteId, organizationId: c.orgId, role: c.role }))
      }
      return out as never
    },
  }),
]
