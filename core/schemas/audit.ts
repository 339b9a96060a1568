import { Type, type Static } from '@sinclair/typebox'
import { StringEnum, Timestamp, named } from './common.js'

export const ACTOR_KINDS = ['api_key', 'oauth', 'user'] as const
export type ActorKind = (typeof ACTOR_KINDS)[number]
/** Who may stand in an audit entry: a principal's kind, or an anonymous credential (`anc_…`, no principal). */
export const AUDIT_ACTOR_KINDS = [...ACTOR_KINDS, 'anonymous'] as const

/** Every audit event type Plinth records. */
export const AUDIT_EVENT_TYPES = [
  'website.created',
  'website.updated',
  'website.deleted',
  'website.restored',
  'website.subdomain_renamed',
  'website.version_created',
  'website.published',
  'website.unpublished',
  'website.rolled_back',
  'website.suspended',
  'website.unsuspended',
  'api_key.created',
  'api_key.updated',
  'api_key.rotated',
  'api_key.revoked',
  'member.invited',
  'member.invitation_revoked',
  'member.joined',
  'member.role_changed',
  'member.removed',
  'collaborator.invited',
  'collaborator.invitation_revoked',
  'collaborator.added',
  'collaborator.removed',
  'website.transfer_started',
  'website.transfer_cancelled',
  'website.transfer_accepted',
  'billing.plan_changed',
  'oauth.client_authorized',
  'oauth.client_revoked',
  'website.claimed',
  'website.activated',
  'domain.added',
  'domain.activated',
  'domain.primary_set',
  'domain.removed',
  // CMS (deprecated): schema changes and publication.
  'cms.collection_created',
  'cms.collection_updated',
  'cms.collection_deleted',
  'cms.field_added',
  'cms.field_updated',
  'cms.field_deleted',
  'cms.item_published',
  'cms.item_unpublished',
  'cms.item_scheduled',
] as const
export type AuditEventType = (typeof AUDIT_EVENT_TYPES)[number]

export const AUDIT_RESOURCE_TYPES = [
  'website',
  'api_key',
  'member',
  'invitation',
  'collaborator',
  'transfer',
  'billing',
  'oauth_client',
  'domain',
  'collection',
  'field',
  'item',
] as const
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
    metadata: Type.Record(Type.String(), Type.Unknown()),
  }),
)
export type AuditEntryResource = Static<typeof AuditEntry>
