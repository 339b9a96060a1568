import type { StoreFor } from '../../core/store/reader.js'
import type { AuditWrites } from '../organization/audit.js'

/** The tables this concern owns: custom domains, the label index, namespaces and vanity labels. */
export type DomainsStoreOwn =
  | 'domains'
  | 'domainsByHost'
  | 'domainsByWebsite'
  | 'labels'
  | 'namespaces'
  | 'namespaceNames'
  | 'vanityLabels'
  | 'vanityOf'
  | 'vanityRenames'

/** The store as this concern holds it: its own tables writable, every other table read-only. */
export type DomainsStore = StoreFor<DomainsStoreOwn | AuditWrites>
