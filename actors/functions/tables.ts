import type { StoreFor } from '../../core/store/reader.js'
import type { AuditWrites } from '../organization/audit.js'

/** The tables this concern owns: each website's function variables and secrets, and its key-value store. */
export type FunctionsStoreOwn = 'functionVariables' | 'functionKv'

/** The store as this concern holds it: its own tables writable, every other table read-only. */
export type FunctionsStore = StoreFor<FunctionsStoreOwn | AuditWrites>
