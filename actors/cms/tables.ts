import type { StoreFor } from '../../core/store/reader.js'
import type { AuditWrites } from '../organization/audit.js'

/** The tables this concern owns: collections, items and legacy page records. */
export type CmsStoreOwn =
  | 'collections'
  | 'collectionsBySlug'
  | 'items'
  | 'itemsByCollection'
  | 'itemsBySlug'
  | 'itemsScheduled'
  | 'legacyPages'
  | 'legacyPagesBySlug'

/** The store as this concern holds it: its own tables writable, every other table read-only. */
export type CmsStore = StoreFor<CmsStoreOwn | AuditWrites>

/** The tables the CMS mirrors in memory (each collection's items): changes made elsewhere reach it by these. */
export const CMS_CACHED = ['cms-items']
