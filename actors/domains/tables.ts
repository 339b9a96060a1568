import type { StoreFor } from '../../core/store/reader.js'
import type { AuditWrites } from '../organization/audit.js'

/** The tables this concern owns: custom domains and the label index. */
export type DomainsStoreOwn = 'domains' | 'domainsByHost' | 'domainsByWebsite' | 'labels'

/** The store as this concern holds it: its own tables writable, every other table read-only. */
export type DomainsStore = StoreFor<DomainsStoreOwn | AuditWrites>
