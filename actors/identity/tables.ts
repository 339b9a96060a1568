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

/** The tables People mirrors in memory (persons, roles, collaborations, sessions): changes made elsewhere reach it by these. */
export const PEOPLE_CACHED = ['persons', 'memberships', 'collaborators', 'sessions']

/** The tables OAuth mirrors in memory (clients, live grants, access tokens). */
export const OAUTH_CACHED = ['oauth-clients', 'oauth-grants', 'oauth-tokens']
