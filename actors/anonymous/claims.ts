// Claims of anonymous sites: claim codes for a person, and the move of a credential's sites into the person's workspace.
import { ApiError } from '../../core/errors.js'
import { hashSecret, newSecret, SECRET_PREFIXES } from '../../core/ids.js'
import { CLAIM_CODE_MS } from '../../core/limits.js'
import type { AnonymousCredentialRecord } from '../../core/schemas/anonymous.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { PersonRecord } from '../../core/schemas/identity.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { AnonymousStore } from './tables.js'
import { appendAudit } from '../organization/audit.js'
import { checkUsable, consumed } from './rules.js'
import { currentCredential } from './turns.js'
import type { AnonymousDeps, ClaimOutcome } from './types.js'

/** The claiming workspace's own audit entry of a claim (the hidden organization gets one too). */
function claimedEntry(store: AnonymousStore, workspaceId: string, actor: AuditActorValue, at: number, website: WebsiteRecord): void {
  appendAudit(store, workspaceId, actor, at, {
    eventType: 'website.claimed',
    resourceType: 'website',
    resourceId: website.id,
    websiteId: website.id,
    metadata: { name: website.name, kind: website.kind, subdomain: website.subdomain },
  })
}

/** A claim code for the person (`wc_…`, 10 minutes). */
export async function newClaimCode(deps: AnonymousDeps, personId: string): Promise<{ code: string; expiresAt: number }> {
  const { store, clock } = deps
  const code = newSecret(SECRET_PREFIXES.claimCode)
  const now = clock.now()
  const expiresAt = now + CLAIM_CODE_MS
  await store.commit(() => store.claimCodes.put(hashSecret(code), { v: 1, personId, createdAt: now, expiresAt }))
  return { code, expiresAt }
}

/** Removes expired claim codes (the registry's sweeper); returns how many went. */
export async function sweepExpiredClaimCodes(deps: AnonymousDeps): Promise<number> {
  const { store, clock } = deps
  const now = clock.now()
  const expired = [...store.claimCodes.range({ start: '', end: '\uffff' })]
    .filter(({ value }) => value.expiresAt <= now)
    .map(({ key }) => key)
  if (expired.length > 0) await store.commit(() => expired.forEach((key) => store.claimCodes.remove(key)))
  return expired.length
}

/** The person a claim code was made for: 401 `claim_code_invalid` when wrong or expired. */
export function personOfClaimCode(deps: AnonymousDeps, code: string): PersonRecord {
  const record = deps.store.claimCodes.get(hashSecret(code))
  const person = record === undefined || record.expiresAt <= deps.clock.now() ? undefined : deps.people.person(record.personId)
  if (person === undefined) {
    throw new ApiError(
      'unauthorized',
      'The claim code is wrong or expired (codes last 10 minutes); ask the person to create a new one (MCP: create_claim_code) and retry',
      { reason: 'claim_code_invalid' },
    )
  }
  return person
}

/**
 * The claim itself, in the credential's turn: moves its website and storage site into the person's
 * personal workspace through the websites' own actors, then marks the credential claimed.
 */
export async function claimSites(
  deps: AnonymousDeps,
  credential: AnonymousCredentialRecord,
  person: PersonRecord,
  actor: AuditActorValue,
): Promise<ClaimOutcome> {
  const { store, clock, plans } = deps
  const workspaceId = credential.claimedInto ?? person.personalOrgId
  const workspace = store.organizations.get(workspaceId)
  if (workspace === undefined) throw new Error(`person ${person.id} has no personal workspace ${workspaceId}`)
  const view = (id: string | null) => (id === null ? null : (deps.website(id)?.record ?? null))
  if (credential.state === 'claimed') {
    if (credential.claimedBy !== person.id) throw consumed()
    return { website: view(credential.websiteId), storage: view(credential.storageId), workspace, alreadyClaimed: true }
  }
  checkUsable(credential, deps.clock)
  if (credential.websiteId === null && credential.storageId === null)
    throw new ApiError(
      'not_found',
      'This credential has not created a site yet, so there is nothing to claim; publish one first (POST /public/v1/anonymous/sites)',
    )
  const now = clock.now()
  // Shared files need room in the workspace's storage quota, checked before anything moves.
  if (credential.storageId !== null) deps.files.assertRoom(workspaceId, deps.files.usage(credential.storageId))
  const websiteActor = credential.websiteId === null ? undefined : deps.website(credential.websiteId)
  let held = false
  let moved: WebsiteRecord | null = null
  if (websiteActor !== undefined) {
    const previewUntil = credential.websiteUntil ?? now
    moved = await websiteActor.moveTo(actor, workspaceId, (current, at) => claimedEntry(store, workspaceId, actor, at, current), {
      eventType: 'website.claimed',
      // Decided inside the move's transaction, so two claims cannot both take the plan's last slot.
      change: (current) => {
        held = plans.billing.enabled && (plans.record(workspaceId).plan === 'free' || !plans.hasRoom(workspaceId, current.kind))
        return held
          ? { held: true, previewUntil, offline: now >= previewUntil ? 'claim_held' : null }
          : // An ordinary active site: back online even if its preview had ended.
            { held: false, previewUntil: null, offline: null }
      },
    })
  }
  const storage = credential.storageId === null ? undefined : deps.website(credential.storageId)
  const movedStorage =
    storage === undefined
      ? null
      : await storage.moveTo(
          actor,
          workspaceId,
          (current, at) => {
            claimedEntry(store, workspaceId, actor, at, current)
            // The live shared files move with it, in the same commit: counted in the workspace, expiring as its plan says from now.
            deps.files.movedWithin(current.id, current.orgId, workspaceId)
          },
          { eventType: 'website.claimed' },
        )
  const next: AnonymousCredentialRecord = {
    ...currentCredential(store, credential.id),
    state: 'claimed',
    claimedBy: person.id,
    claimedAt: now,
    claimedInto: workspaceId,
  }
  await store.commit(() => {
    store.anonCredentials.put(next.id, next)
    if (credential.websiteId !== null) store.anonNetworkSites.remove([credential.network, credential.websiteId])
    // A held site goes offline when its preview ends.
    if (held && moved !== null && moved.offline == null) store.anonDeadlines.put([moved.previewUntil!, 'website', moved.id], '')
  })
  return { website: moved, storage: movedStorage, workspace, alreadyClaimed: false }
}
