import type { StoreFor } from '../../core/store/reader.js'
import type { NewWebsiteWrites } from '../website/record.js'

/** The tables this concern owns: organizations, API keys, transfers, feedback and the audit log. */
export type OrganizationStoreOwn =
  | 'apiKeys'
  | 'audit'
  | 'feedback'
  | 'keysByHash'
  | 'keysByOrg'
  | 'organizations'
  | 'pendingTransfers'
  | 'transfers'
  | 'transfersByCode'
  | 'nextSeq'

/** The store as this concern holds it: its own tables writable, every other table read-only. */
export type OrganizationStore = StoreFor<OrganizationStoreOwn | NewWebsiteWrites>
