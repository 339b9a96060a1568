// The deadline sweeper of anonymous credentials: due rows of the time-ordered index, settled in batches.
import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { ANON_SWEEP_BATCH, ANON_SWEEP_RETRY_MS } from '../../core/limits.js'
import type { AnonymousCredentialRecord } from '../../core/schemas/anonymous.js'
import type { AnonymousStore } from './tables.js'
import { removeOrganization } from '../organization/records.js'
import { anonymousActor } from './rules.js'
import { currentCredential, type CredentialTurns } from './turns.js'
import type { AnonymousDeps, Key } from './types.js'

/**
 * Acts on every deadline that is due: a website whose 24 hours ended goes offline (still
 * claimable), a storage site's files go, a credential past its claim deadline is purged (sites
 * deleted, labels freed) and its token answers `credential_expired`, a held claim goes offline. Reads
 * only due rows of the deadline index, in batches, yielding to the event loop between them.
 */
export async function sweepDeadlines(deps: AnonymousDeps, turns: CredentialTurns): Promise<number> {
  const { store, clock, log } = deps
  let done = 0
  for (;;) {
    const now = clock.now()
    const due: Key[] = []
    for (const { key } of store.anonDeadlines.range({ start: [0], end: [now + 1] })) {
      due.push(key as Key)
      if (due.length === ANON_SWEEP_BATCH) break
    }
    if (due.length === 0) return done
    // A credential with no site to act on needs no actor: it is settled (expired, or nothing to do)
    // inside one commit for the whole batch, reading each record once. The others are independent:
    // they settle concurrently (each in its own mailbox), so their writes share LMDB's batched
    // commits. A row that failed is logged and dropped, never retried forever.
    const actorWork: Key[] = []
    await store.commit(() => {
      for (const key of due) {
        const [, kind, id] = key
        const credential = kind === 'credential' ? store.anonCredentials.get(id) : undefined
        // A credential with a command queued or running settles in its own turn, after it.
        if (kind !== 'credential' || turns.has(id) || (credential !== undefined && touchesSites(store, credential, now))) {
          actorWork.push(key)
          continue
        }
        store.anonDeadlines.remove(key)
        if (credential !== undefined && credential.state === 'active' && credential.claimUntil !== null && now >= credential.claimUntil) {
          store.anonCredentials.put(id, { ...credential, state: 'expired' })
          if (credential.orgId !== null) removeOrganization(store, credential.orgId)
        }
      }
    })
    const failed: Key[] = []
    await Promise.all(
      actorWork.map(async (key) => {
        const [, kind, id] = key
        try {
          if (kind === 'credential') await turns.run(id, (credential) => settle(deps, credential))
          else await settleHeld(deps, id)
        } catch (error) {
          failed.push(key)
          log.error('anonymous deadline failed; retrying in a minute', { kind, id, error: (error as Error)?.stack ?? String(error) })
        }
      }),
    )
    if (actorWork.length > 0) {
      await store.commit(() => {
        for (const key of actorWork) store.anonDeadlines.remove(key)
        // A deadline that failed is tried again later, never dropped.
        for (const [, kind, id] of failed) store.anonDeadlines.put([now + ANON_SWEEP_RETRY_MS, kind, id], '')
      })
    }
    done += due.length
    await yieldToLoop()
  }
}

/** True when settling the credential at `now` touches a website (offline or purge): the actor path. */
function touchesSites(store: AnonymousStore, credential: AnonymousCredentialRecord, now: number): boolean {
  if (credential.state !== 'active') return false
  const sites = [credential.websiteId, credential.storageId].filter(
    (site): site is string => site !== null && store.websites.get(site) !== undefined,
  )
  if (sites.length === 0) return false
  if (credential.claimUntil !== null && now >= credential.claimUntil) return true
  return (
    (credential.websiteUntil !== null && now >= credential.websiteUntil) ||
    (credential.storageUntil !== null && now >= credential.storageUntil)
  )
}

async function settle(deps: AnonymousDeps, credential: AnonymousCredentialRecord): Promise<void> {
  if (credential.state !== 'active') return
  const { store, clock } = deps
  const now = clock.now()
  const actor = anonymousActor(credential)
  if (credential.claimUntil !== null && now >= credential.claimUntil) {
    for (const id of [credential.websiteId, credential.storageId])
      if (id !== null && store.websites.get(id) !== undefined) await deps.purgeWebsite(id, actor)
    await store.commit(() => {
      store.anonCredentials.put(credential.id, { ...credential, state: 'expired' })
      if (credential.websiteId !== null) store.anonNetworkSites.remove([credential.network, credential.websiteId])
      if (credential.orgId !== null) removeOrganization(store, credential.orgId)
    })
    return
  }
  if (credential.websiteId !== null && credential.websiteUntil !== null && now >= credential.websiteUntil) {
    const website = deps.website(credential.websiteId)
    if (website !== undefined && website.record.offline == null) await website.setAvailability(actor, { offline: 'preview_ended' })
    await store.commit(() => store.anonNetworkSites.remove([credential.network, credential.websiteId!]))
  }
  if (credential.storageId !== null && credential.storageUntil !== null && now >= credential.storageUntil) {
    // Shared files are deleted after their 24 hours; recreating starts a new 24 hours.
    if (store.websites.get(credential.storageId) !== undefined) await deps.purgeWebsite(credential.storageId, actor)
    await store.commit(() =>
      store.anonCredentials.put(credential.id, { ...currentCredential(store, credential.id), storageId: null, storageUntil: null }),
    )
  }
}

async function settleHeld(deps: AnonymousDeps, websiteId: string): Promise<void> {
  const website = deps.website(websiteId)
  if (website === undefined) return
  const record = website.record
  if (record.held === true && record.offline == null && record.previewUntil != null && deps.clock.now() >= record.previewUntil) {
    await website.setAvailability({ kind: 'user', id: 'plinth', name: 'Plinth (held claim)' }, { offline: 'claim_held' })
  }
}
