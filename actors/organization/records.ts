// The organizations table's writes, for the concerns that make or end an organization inside their own commit.
import type { OrganizationRecord } from '../../core/schemas/records.js'
import type { StoreFor } from '../../core/store/reader.js'

/** What `insertOrganization` and `removeOrganization` write, inside another concern's commit. */
export type OrganizationRecordWrites = 'organizations'

/**
 * An organization comes into being inside another concern's commit (the installation's first start,
 * a person's sign-up, an anonymous credential's hidden organization); these are the only writes of
 * its record, so the organization concern owns the table.
 */
export function insertOrganization(store: StoreFor<OrganizationRecordWrites>, record: OrganizationRecord): void {
  store.organizations.put(record.id, record)
}

/** An anonymous credential's hidden organization, once its sites are gone (claim deadline passed). */
export function removeOrganization(store: StoreFor<OrganizationRecordWrites>, id: string): void {
  store.organizations.remove(id)
}
