import type { StoreFor } from '../../core/store/reader.js'
import type { AuditWrites } from '../organization/audit.js'

/** The tables this concern owns: each organization's plan. */
export type BillingStoreOwn = 'plans'

/** The store as this concern holds it: its own tables writable, every other table read-only. */
export type BillingStore = StoreFor<BillingStoreOwn | AuditWrites>
