import type { StoreFor } from '../../core/store/reader.js'
import type { AuditWrites } from '../organization/audit.js'
import type { OrganizationRecordWrites } from '../organization/records.js'

/** The tables this concern owns: anonymous credentials, their deadlines, invites, per-network sites, tokens and claim codes. */
export type AnonymousStoreOwn = 'anonCredentials' | 'anonDeadlines' | 'anonInvites' | 'anonNetworkSites' | 'anonTokens' | 'claimCodes'

/** The store as this concern holds it: its own tables writable, every other table read-only. */
export type AnonymousStore = StoreFor<AnonymousStoreOwn | AuditWrites | OrganizationRecordWrites>
