import type { Clock } from '../core/clock.js'
import { newApiKeySecret, newId } from '../core/ids.js'
import type { Store } from '../core/store/store.js'
import { insertOwnerPerson } from './identity/people.js'
import { insertApiKey } from './organization/organization.js'
import { insertOrganization } from './organization/records.js'

export interface Installation {
  orgId: string
  ownerId: string
  /** Present only on the first start, when Plinth made the admin key's secret itself. */
  generatedSecret: string | null
  /**
   * The owner's one-time setup code (`{app_url}/setup#token=…`, valid 24 hours): on the first start,
   * and on a start that finds an installation whose owner cannot sign in yet (made before people existed).
   */
  setupCode: string | null
  /** True on the first start of an empty data directory. */
  created: boolean
}

/**
 * On the first start of an empty data directory: the owner (a person without email or password yet),
 * their personal workspace, an admin key of organization scope and the owner's setup code, all in
 * one transaction. Later starts change nothing, except that an installation made before people
 * existed gets its owner person (and a setup code) once.
 */
export async function ensureInstallation(store: Store, clock: Clock, adminKey: string | null): Promise<Installation> {
  const existing = store.meta.get('installation')
  const now = clock.now()
  if (existing !== undefined) {
    if (store.persons.get(existing.ownerId) !== undefined)
      return { orgId: existing.orgId, ownerId: existing.ownerId, generatedSecret: null, setupCode: null, created: false }
    const setupCode = await store.commit(() => insertOwnerPerson(store, existing.ownerId, existing.orgId, now))
    return { orgId: existing.orgId, ownerId: existing.ownerId, generatedSecret: null, setupCode, created: false }
  }
  const secret = adminKey ?? newApiKeySecret()
  const orgId = newId('org')
  const ownerId = newId('usr')
  const setupCode = await store.commit(() => {
    if (store.meta.get('installation') !== undefined) throw new Error('installation raced with another start')
    insertOrganization(store, { v: 1, id: orgId, name: 'My organization', createdAt: now })
    const code = insertOwnerPerson(store, ownerId, orgId, now)
    insertApiKey(store, orgId, { kind: 'user', id: ownerId, name: 'Owner' }, now, {
      name: 'Admin key (first start)',
      access: { kind: 'organization', role: 'admin' },
      expiresAt: null,
      secret,
    })
    store.meta.put('installation', { v: 1, orgId, ownerId, createdAt: now })
    return code
  })
  return { orgId, ownerId, generatedSecret: adminKey === null ? secret : null, setupCode, created: true }
}

/** The installation's key webhook signing secrets derive from (made on first start and kept). */
export function webhookSigningKey(store: Store): Promise<Buffer> {
  return store.secret('webhook-signing')
}
