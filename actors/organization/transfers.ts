import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { hashSecret, newId, newSecret, SECRET_PREFIXES } from '../../core/ids.js'
import { TRANSFER_MS } from '../../core/limits.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { CollaboratorRecord, TransferRecord } from '../../core/schemas/identity.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { OrganizationStore } from './tables.js'
import { appendAudit } from './audit.js'
import type { People } from '../identity/people.js'
import type { Teams } from '../identity/teams.js'
import type { Plans } from '../billing/plans.js'
import type { SharedFiles } from '../files/storage.js'
import type { WebsiteActor } from '../website/actor.js'

export interface TransfersDeps {
  store: OrganizationStore
  clock: Clock
  people: People
  teams: Teams
  plans: Plans
  website(id: string): WebsiteActor | undefined
  /** Shared files: a storage website's bytes count where it moves, with that plan's expiry (and need room there). */
  files: SharedFiles
}

/**
 * Website transfers between organizations (spec: Transfer state table): one pending transfer per
 * website with a one-time `wt_` code (hash only, 7 days); accepting it moves the website through its
 * own actor, so nothing of it is written by two hands, and the live site never goes offline.
 */
export class Transfers {
  constructor(private readonly deps: TransfersDeps) {}

  /** The website's pending transfer, or undefined (none, or expired). */
  pending(websiteId: string): TransferRecord | undefined {
    const { store, clock } = this.deps
    const id = store.pendingTransfers.get(websiteId)
    const record = id === undefined ? undefined : store.transfers.get(id)
    return record !== undefined && record.status === 'pending' && record.expiresAt > clock.now() ? record : undefined
  }

  start(actor: AuditActorValue, website: WebsiteActor, toOrgId: string | null): Promise<{ record: TransferRecord; code: string }> {
    return website.mailbox.run(async () => {
      const { store, clock } = this.deps
      const now = clock.now()
      const current = website.record
      if (toOrgId !== null && toOrgId === current.orgId)
        throw new ApiError('validation', 'toOrganizationId is this website’s own organization; name another one or omit it', {
          field: 'body.toOrganizationId',
        })
      if (toOrgId !== null && store.organizations.get(toOrgId) === undefined)
        throw new ApiError('validation', `Organization ${toOrgId} not found`, { field: 'body.toOrganizationId' })
      const code = newSecret(SECRET_PREFIXES.transfer)
      const record = await store.commit(() => {
        if (this.pending(current.id) !== undefined) {
          throw new ApiError(
            'conflict',
            `Website ${current.id} already has a pending transfer; cancel it (DELETE /v1/websites/${current.id}/transfer) before starting another`,
          )
        }
        const record: TransferRecord = {
          v: 1,
          id: newId('tr'),
          websiteId: current.id,
          fromOrgId: current.orgId,
          toOrgId,
          codeHash: hashSecret(code),
          status: 'pending',
          createdAt: now,
          expiresAt: now + TRANSFER_MS,
          endedAt: null,
        }
        store.transfers.put(record.id, record)
        store.transfersByCode.put(record.codeHash, record.id)
        store.pendingTransfers.put(current.id, record.id)
        appendAudit(store, current.orgId, actor, now, {
          eventType: 'website.transfer_started',
          resourceType: 'transfer',
          resourceId: record.id,
          websiteId: current.id,
          metadata: { toOrganizationId: toOrgId },
        })
        return record
      })
      return { record, code }
    })
  }

  cancel(actor: AuditActorValue, website: WebsiteActor): Promise<TransferRecord> {
    return website.mailbox.run(async () => {
      const { store, clock } = this.deps
      const now = clock.now()
      return store.commit(() => {
        const record = this.pending(website.id)
        if (record === undefined) throw new ApiError('not_found', `Website ${website.id} has no pending transfer`)
        const next: TransferRecord = { ...record, status: 'cancelled', endedAt: now }
        store.transfers.put(record.id, next)
        store.transfersByCode.remove(record.codeHash)
        store.pendingTransfers.remove(website.id)
        appendAudit(store, record.fromOrgId, actor, now, {
          eventType: 'website.transfer_cancelled',
          resourceType: 'transfer',
          resourceId: record.id,
          websiteId: website.id,
        })
        return next
      })
    })
  }

  /**
   * Accepts a code for the caller's organization: the website moves with its history, builds and
   * published version. A wrong, used, cancelled or expired code is a 404 that never says which.
   */
  async accept(actor: AuditActorValue, orgId: string, code: string): Promise<WebsiteRecord> {
    const { store, clock } = this.deps
    const unknown = () =>
      new ApiError(
        'not_found',
        'No pending transfer has this code (it may be wrong, used, cancelled or expired); ask the sending organization for a new one',
      )
    const find = (): TransferRecord => {
      const id = store.transfersByCode.get(hashSecret(code))
      const record = id === undefined ? undefined : store.transfers.get(id)
      if (record === undefined || record.status !== 'pending' || record.expiresAt <= clock.now()) throw unknown()
      return record
    }
    const found = find()
    if (found.toOrgId !== null && found.toOrgId !== orgId) throw unknown()
    if (found.fromOrgId === orgId)
      throw new ApiError('conflict', 'This website already belongs to your organization; the transfer is for another one')
    const website = this.deps.website(found.websiteId)
    if (website === undefined) throw unknown()
    let dropped: CollaboratorRecord[] = []
    const sharedBytes = this.deps.files.usage(website.id)
    if (sharedBytes > 0) this.deps.files.assertRoom(orgId, sharedBytes)
    const moved = await website.moveTo(actor, orgId, (current, now) => {
      const record = find()
      if (record.id !== found.id || current.orgId !== record.fromOrgId) throw unknown()
      // A website in the trash takes no slot until it is restored (and restoring checks the plan).
      if (current.deletedAt === null) this.deps.plans.assertRoom(orgId, current.kind)
      store.transfers.put(record.id, { ...record, status: 'accepted', endedAt: now })
      store.transfersByCode.remove(record.codeHash)
      store.pendingTransfers.remove(current.id)
      dropped = this.deps.teams.dropCollaborators(current.id)
      // A storage website's bytes count in the new organization from this same commit.
      if (current.kind === 'storage') this.deps.files.movedWithin(current.id, current.orgId, orgId)
      appendAudit(store, orgId, actor, now, {
        eventType: 'website.transfer_accepted',
        resourceType: 'website',
        resourceId: current.id,
        websiteId: current.id,
        metadata: { from: current.orgId, to: orgId, transferId: record.id },
      })
    })
    for (const record of dropped) this.deps.people.mirrorCollaboration(record, false)
    return moved
  }
}
