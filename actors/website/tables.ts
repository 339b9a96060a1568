import type { StoreFor } from '../../core/store/reader.js'
import type { Change } from '../../core/store/changes.js'
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

/**
 * The tables whose writes change what a website serves: its record, versions, builds and generated
 * pages, its lease, its hosts (label, vanity address, custom domains) and its passwords. A change made
 * elsewhere (a log entry applied) to any of them makes the website's actor again from the store.
 */
export const WEBSITE_SERVING_TABLES = [
  'websites',
  'generated-pages',
  'leases',
  'versions',
  'builds',
  'domains-by-website',
  'site-passwords',
  'labels',
  'domains',
  'vanity-of',
] as const

/** The website a write to one of WEBSITE_SERVING_TABLES touches (null: none, such as a label freed). */
function websiteOfChange({ table, key, value }: Change): string | null {
  const first = String(Array.isArray(key) ? key[0] : key)
  switch (table) {
    case 'site-passwords':
      return first.split('/')[0]!
    case 'labels':
      return value === null ? null : String(value)
    case 'domains':
      return value === null ? null : String((value as { websiteId?: unknown }).websiteId)
    default:
      return first
  }
}

/** The websites a change touches. */
export function websitesOfChanges(changes: readonly Change[]): Set<string> {
  const ids = new Set<string>()
  for (const change of changes) {
    const id = websiteOfChange(change)
    if (id !== null) ids.add(id)
  }
  return ids
}
