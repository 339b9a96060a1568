import type { StoreFor } from '../../core/store/reader.js'
import type { AuditWrites } from '../organization/audit.js'

/** The tables this concern owns: websites, their versions, builds, content, leases, slugs, passwords, generated pages and purges. */
export type WebsiteStoreOwn =
  | 'generatedPages'
  | 'leases'
  | 'purges'
  | 'sitePasswords'
  | 'slugs'
  | 'websites'
  | 'websitesByOrg'
  | 'putBuild'
  | 'putContent'
  | 'putVersion'
  | 'removeBuild'
  | 'removeVersion'

/** The store as this concern holds it: its own tables writable, every other table read-only. */
export type WebsiteStore = StoreFor<WebsiteStoreOwn | AuditWrites>
