import { Type, type Static } from '@sinclair/typebox'
import { AUDIT_EVENT_TYPES, AUDIT_RESOURCE_TYPES } from '../audit-names.js'
import { StringEnum, Timestamp, named } from './common.js'

export const ACTOR_KINDS = ['api_key', 'oauth', 'user'] as const
export type ActorKind = (typeof ACTOR_KINDS)[number]
/** Who may stand in an audit entry: a principal's kind, or an anonymous credential (`anc_…`, no principal). */
export const AUDIT_ACTOR_KINDS = [...ACTOR_KINDS, 'anonymous'] as const

export { AUDIT_EVENT_TYPES, AUDIT_RESOURCE_TYPES } from '../audit-names.js'
export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number]

export type AuditResourceType = (typeof AUDIT_RESOURCE_TYPES)[number]

export const AuditActor = Type.Object({
  kind: StringEnum(AUDIT_ACTOR_KINDS),
  id: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  /** An OAuth client acting for the person: its name (also in the entry's `metadata.agent`). */
  agent: Type.Optional(Type.String()),
})
export type AuditActorValue = Static<typeof AuditActor>

export const AuditEntry = named(
  'AuditEntry',
  Type.Object({
    id: Type.String(),
    at: Timestamp,
    eventType: StringEnum(AUDIT_EVENT_TYPES),
    resourceType: StringEnum(AUDIT_RESOURCE_TYPES),
    resourceId: Type.String(),
    websiteId: Type.Union([Type.String(), Type.Null()]),
    actor: AuditActor,
    metadata: Type.Record(Type.String(), Type.Unknown(), {
      description:
        'What the event changed or concerned; its keys depend on eventType (a role change: from and to; a publish: the version; a domain: its hostname)',
    }),
  }),
)
export type AuditEntryResource = Static<typeof AuditEntry>
