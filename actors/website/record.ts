// The record commands' decisions (update, delete, restore, move, availability, rename, suspend) and a purge's writes.
import type { Clock } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { SLUG_MAX_CHARS } from '../../core/limits.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { VersionRecord, WebsiteRecord } from '../../core/schemas/records.js'
import type { UpdateWebsiteInput } from '../../core/schemas/website.js'
import type { StoreFor } from '../../core/store/reader.js'
import type { WebsiteStore } from './tables.js'
import type { HostnameTable } from '../domains/hostnames.js'
import { appendAudit } from '../organization/audit.js'
import { assertUsableLabel, freeName } from '../names.js'
import type { Outcome } from './commits.js'

/*
 * Each runs inside the command's transaction (WebsiteActor's `#run`): it writes the indexes its change
 * moves and returns the outcome the actor commits; throwing leaves nothing written.
 */

/** How a move is recorded: a transfer accepted, or an anonymous site claimed (with its own changes). */
export interface MoveAs {
  eventType: 'website.transfer_accepted' | 'website.claimed'
  change?: (current: WebsiteRecord, now: number) => Partial<WebsiteRecord>
}

/** What `writeNewWebsite` writes, inside the organization's commit. */
export type NewWebsiteWrites = 'websites' | 'putVersion' | 'websitesByOrg' | 'slugs'

/**
 * A new website's records, inside its organization's commit (the organization decides the slug,
 * label and plan room): the record, its empty first version, and its place in the lists and slugs.
 */
export function writeNewWebsite(store: StoreFor<NewWebsiteWrites>, website: WebsiteRecord, first: VersionRecord): void {
  store.websites.put(website.id, website)
  store.putVersion([website.id, 1], first)
  store.websitesByOrg.put([website.orgId, 'live', website.seq], website.id)
  store.slugs.put([website.orgId, website.slug], website.id)
}

/** Name, slug and description; hostnames are unaffected (spec: websites.update). */
export function decideUpdate(store: WebsiteStore, current: WebsiteRecord, now: number, input: UpdateWebsiteInput): Outcome {
  const next: WebsiteRecord = { ...current, updatedAt: now }
  const changed: string[] = []
  if (input.name !== undefined && input.name !== current.name) {
    next.name = input.name
    changed.push('name')
  }
  if (input.description !== undefined && input.description !== current.description) {
    next.description = input.description
    changed.push('description')
  }
  if (input.slug !== undefined && input.slug !== current.slug) {
    const owner = store.slugs.get([current.orgId, input.slug])
    if (owner !== undefined && owner !== current.id) {
      throw new ApiError('conflict', `slug "${input.slug}" is taken by another website of this organization; choose another`, {
        field: 'body.slug',
      })
    }
    store.slugs.remove([current.orgId, current.slug])
    store.slugs.put([current.orgId, input.slug], current.id)
    next.slug = input.slug
    changed.push('slug')
  }
  if (changed.length === 0) return { record: current }
  return { record: next, audit: { eventType: 'website.updated', metadata: { changed } } }
}

/** Soft delete: off every hostname, listed with `scope=trash`, restorable. */
export function decideDelete(store: WebsiteStore, current: WebsiteRecord, now: number): Outcome {
  if (current.deletedAt !== null) return { record: current }
  store.websitesByOrg.remove([current.orgId, 'live', current.seq])
  store.websitesByOrg.put([current.orgId, 'trash', current.seq], current.id)
  return { record: { ...current, deletedAt: now, updatedAt: now }, audit: { eventType: 'website.deleted' } }
}

/** Back from the trash, when the plan has room (`assertRoom`). */
export function decideRestore(
  deps: { store: WebsiteStore; assertRoom?(orgId: string, kind: string): void },
  current: WebsiteRecord,
  now: number,
): Outcome {
  if (current.deletedAt === null) return { record: current }
  const { store } = deps
  deps.assertRoom?.(current.orgId, current.kind)
  store.websitesByOrg.remove([current.orgId, 'trash', current.seq])
  store.websitesByOrg.put([current.orgId, 'live', current.seq], current.id)
  return { record: { ...current, deletedAt: null, updatedAt: now }, audit: { eventType: 'website.restored' } }
}

/** A move to another organization: its indexes move, a slug taken there gets a suffix, the lease goes. */
export function decideMove(
  store: WebsiteStore,
  current: WebsiteRecord,
  now: number,
  toOrgId: string,
  within: (current: WebsiteRecord, now: number) => void,
  as: MoveAs,
): Outcome {
  const scope = current.deletedAt === null ? 'live' : 'trash'
  store.websitesByOrg.remove([current.orgId, scope, current.seq])
  store.websitesByOrg.put([toOrgId, scope, current.seq], current.id)
  store.slugs.remove([current.orgId, current.slug])
  const slug =
    store.slugs.get([toOrgId, current.slug]) === undefined
      ? current.slug
      : freeName(current.slug, SLUG_MAX_CHARS, (s) => store.slugs.get([toOrgId, s]) === undefined)
  store.slugs.put([toOrgId, slug], current.id)
  store.leases.remove(current.id)
  within(current, now)
  return {
    record: { ...current, ...as.change?.(current, now), orgId: toOrgId, slug, updatedAt: now },
    audit: { eventType: as.eventType, metadata: { from: current.orgId, to: toOrgId } },
  }
}

/** Whether the website serves, and how a claimed anonymous site is held; no change, no audit entry. */
export function decideAvailability(
  current: WebsiteRecord,
  now: number,
  change: Pick<Partial<WebsiteRecord>, 'offline' | 'held' | 'previewUntil'>,
  audit: { eventType: 'website.activated'; metadata?: Record<string, unknown> } | undefined,
  guard: ((current: WebsiteRecord) => void) | undefined,
): Outcome {
  guard?.(current)
  const next = { ...current, ...change }
  const same = (['offline', 'held', 'previewUntil'] as const).every((field) => (next[field] ?? null) === (current[field] ?? null))
  return same ? { record: current } : { record: { ...next, updatedAt: now }, audit }
}

/** A new label, claimed; the old one is free for anyone at once. */
export function decideRename(hostnames: HostnameTable, current: WebsiteRecord, now: number, label: string): Outcome {
  if (label === current.subdomain) return { record: current }
  assertUsableLabel(label, hostnames.reservedLabels, 'body.label')
  hostnames.claim(label, current.id, 'body.label', 'choose another label')
  hostnames.free(current.subdomain, current.id)
  return {
    record: { ...current, subdomain: label, updatedAt: now },
    audit: { eventType: 'website.subdomain_renamed', metadata: { from: current.subdomain, to: label } },
  }
}

/** Platform takedown: nothing serves on any hostname and publishing fails. */
export function decideSuspend(current: WebsiteRecord, now: number, reason: string): Outcome {
  return {
    record: { ...current, suspendedAt: current.suspendedAt ?? now, suspendedReason: reason, updatedAt: now },
    audit: { eventType: 'website.suspended', metadata: { reason } },
  }
}

/** Lifts a takedown. */
export function decideUnsuspend(current: WebsiteRecord, now: number): Outcome {
  return current.suspendedAt === null
    ? { record: current }
    : {
        record: { ...current, suspendedAt: null, suspendedReason: null, updatedAt: now },
        audit: { eventType: 'website.unsuspended' },
      }
}

/** The purge is finished: shared files, CMS and assets are gone too. Inside `commit`. */
export function removePurgeRecord(store: WebsiteStore, websiteId: string): void {
  store.purges.remove(websiteId)
}

/**
 * A purge's one transaction: the record, versions, builds and lease leave the store, the label is
 * free, and a purge record says what is left to finish (shared files, CMS, assets). Inside `commit`.
 */
export function writePurge(
  deps: { store: WebsiteStore; clock: Clock; hostnames: HostnameTable },
  current: WebsiteRecord,
  actor: AuditActorValue,
  within: (() => void) | undefined,
): void {
  const { store, clock, hostnames } = deps
  // First, while the website's record is still readable to what `within` removes.
  within?.()
  // The rest of the purge (shared files, CMS, assets) finishes from this record, at once or at the next start.
  store.purges.put(current.id, { v: 1, websiteId: current.id, orgId: current.orgId, at: clock.now() })
  for (const { key } of store.versions.range({ start: [current.id, 0], end: [current.id, Number.MAX_SAFE_INTEGER] }))
    store.removeVersion(key as [string, number])
  for (const { key } of store.builds.range({ start: [current.id, 0], end: [current.id, Number.MAX_SAFE_INTEGER] }))
    store.removeBuild(key as [string, number])
  store.leases.remove(current.id)
  store.websitesByOrg.remove([current.orgId, current.deletedAt === null ? 'live' : 'trash', current.seq])
  store.slugs.remove([current.orgId, current.slug])
  hostnames.free(current.subdomain, current.id)
  store.websites.remove(current.id)
  store.generatedPages.remove(current.id)
  appendAudit(store, current.orgId, actor, clock.now(), {
    eventType: 'website.deleted',
    resourceType: 'website',
    resourceId: current.id,
    websiteId: current.id,
    metadata: { purged: true },
  })
}
