import type { StoreFor } from '../../core/store/reader.js'
import type { AuditWrites } from '../organization/audit.js'
import type { OrganizationRecordWrites } from '../organization/records.js'

/** The tables this concern owns: people, sessions, memberships, collaborators, invitations and OAuth. */
export type IdentityStoreOwn =
  | 'collaborationsByPerson'
  | 'collaborators'
  | 'invitations'
  | 'invitationsByCode'
  | 'invitationsByOwner'
  | 'memberships'
  | 'membershipsByPerson'
  | 'oauthClients'
  | 'oauthCodes'
  | 'oauthGrants'
  | 'oauthTokens'
  | 'oneTime'
  | 'persons'
  | 'personsByEmail'
  | 'sessions'
  | 'nextSeq'

/** The store as this concern holds it: its own tables writable, every other table read-only. */
export type IdentityStore = StoreFor<IdentityStoreOwn | AuditWrites | OrganizationRecordWrites>
