import type { Clock } from '../core/clock.js'
import { newApiKeySecret, newId } from '../core/ids.js'
import type { Store } from '../core/store/store.js'
import { insertApiKey } from './organization.js'

export interface Installation {
  orgId: string
  ownerId: string
  /** Present only on the first start, when Plinth made the admin key's secret itself. */
  generatedSecret: string | null
  /** True on the first start of an empty data directory. */
  created: boolean
}

/**
 * On the first start of an empty data directory: an organization, its owner and an admin key of
 * organization scope, all in one transaction. Later starts find the installation and change nothing.
 */
export async function ensureInstallation(store: Store, clock: Clock, adminKey: string | null): Promise<Installation> {
  const existing = store.meta.get('installation')
  if (existing !== undefined) return { orgId: existing.orgId, ownerId: existing.ownerId, generatedSecret: null, created: false }
  const now = clock.now()
  const secret = adminKey ?? newApiKeySecret()
  const orgId = newId('org')
  const ownerId = newId('usr')
  await store.commit(() => {
    if (store.meta.get('installation') !== undefined) throw new Error('installation raced with another start')
    const org = { v: 1 as const, id: orgId, name: 'My organization', createdAt: now }
    store.organizations.put(orgId, org)
    store.people.put(ownerId, { v: 1, id: ownerId, orgId, name: 'Owner', role: 'owner', createdAt: now })
    insertApiKey(store, orgId, { kind: 'user', id: ownerId, name: 'Owner' }, now, { name: 'Admin key (first start)', access: { kind: 'organization', role: 'admin' }, expiresAt: null, secret })
    store.meta.put('installation', { v: 1, orgId, ownerId, createdAt: now })
  })
  return { orgId, ownerId, generatedSecret: adminKey === null ? secret : null, created: true }
}
