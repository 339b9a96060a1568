// The organizations table's writes, for the concerns that make or end an organization inside their own commit.
import type { OrganizationRecord } from '../../core/schemas/records.js'
import type { Store } from '../../core/store/store.js'

/**
 * An organization comes into being inside another concern's commit (the installation's first start,
 * a person's sign-up, an anonymous credential's hidden organization); these are the only writes of
 * its record, so the organization concern owns the table.
 */
export function insertOrganization(store: Store, record: OrganizationRecord): void {
  store.organizations.put(record.id, record)
}

/** An anonymous credential's hidden organization, once its sites are gone (claim deadline passed). */
export function removeOrganization(store: Store, id: string): void {
  store.organizations.remove(id)
}
