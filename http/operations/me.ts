import { Type } from '@sinclair/typebox'
import { principalCapabilities } from '../../core/principal.js'
import { CAPABILITIES } from '../../core/roles.js'
import { Access } from '../../core/schemas/api-key.js'
import { StringEnum, named } from '../../core/schemas/common.js'
import { defineOperation } from '../operation.js'

const Me = named(
  'Me',
  Type.Object({
    organization: Type.Object({ id: Type.String(), name: Type.String() }),
    actor: Type.Object({ kind: StringEnum(['api_key', 'oauth', 'user'] as const), id: Type.String(), name: Type.Union([Type.String(), Type.Null()]) }),
    access: Access,
    capabilities: Type.Array(StringEnum(CAPABILITIES)),
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
      'Returns the organization, access scope and exact capabilities of the calling key. Call it first to learn which websites and operations are open to you.',
    response: Me,
    handle(ctx) {
      return {
        organization: { id: ctx.org.id, name: ctx.org.record.name },
        actor: { kind: ctx.principal.kind, id: ctx.principal.id, name: ctx.principal.name },
        access: ctx.principal.access,
        capabilities: principalCapabilities(ctx.principal),
      }
    },
  }),
]
