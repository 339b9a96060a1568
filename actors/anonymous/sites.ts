// The commands on an anonymous credential's sites: find, create, update, and going live once built.
import { ApiError } from '../../core/errors.js'
import { iso } from '../../core/clock.js'
import { newId } from '../../core/ids.js'
import { ANON_CLAIM_WINDOW_MS, ANON_NETWORK_LIVE_MAX, ANON_WINDOW_MS, SUBDOMAIN_GENERATED_MAX_CHARS } from '../../core/limits.js'
import type { AnonymousCredentialRecord } from '../../core/schemas/anonymous.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { OrganizationRecord, WebsiteRecord } from '../../core/schemas/records.js'
import type { AnonymousStore } from './tables.js'
import { labelFromSlug, slugFromName, withRandomSuffix } from '../names.js'
import { insertOrganization } from '../organization/records.js'
import type { WebsiteActor } from '../website/actor.js'
import { prepareUploads } from '../website/static-files.js'
import { anonymousActor, charge, checkUsable, claimHint } from './rules.js'
import { currentCredential } from './turns.js'
import type { AnonymousCreateInput, AnonymousDeps, AnonymousSite, AnonymousUpdateInput } from './types.js'

const PUBLISH_STEP = 'anonymous site going live'

/** One of the credential's sites: `current` (the website), `storage`, or either's id (404 otherwise). */
export function findSite(deps: AnonymousDeps, credential: AnonymousCredentialRecord, id: string): AnonymousSite {
  checkUsable(credential, deps.clock)
  const websiteId =
    id === 'current'
      ? // With only shared files, `current` is the storage site.
        (credential.websiteId ?? credential.storageId)
      : id === 'storage'
        ? credential.storageId
        : id === credential.websiteId || id === credential.storageId
          ? id
          : null
  const website = websiteId === null ? undefined : deps.website(websiteId)
  if (website === undefined) {
    if (id === 'current' || id === 'storage') {
      throw new ApiError(
        'not_found',
        `This credential has not created ${id === 'storage' ? 'a storage site' : 'a website or a storage site'} yet; create one with POST /public/v1/anonymous/sites`,
      )
    }
    throw new ApiError(
      'not_found',
      `Anonymous site ${id} not found for this credential; GET /public/v1/anonymous/sites/current finds yours`,
    )
  }
  return { credential, website }
}

/** Creates the credential's website or storage site, in the credential's turn (see `AnonymousCredentials.create`). */
export async function createSite(
  deps: AnonymousDeps,
  current: AnonymousCredentialRecord,
  input: AnonymousCreateInput,
): Promise<AnonymousSite> {
  // Checked again in the credential's turn: a claim or the deadline may have come while the body arrived.
  const credential = checkUsable(current, deps.clock)
  const { store, clock } = deps
  const now = clock.now()
  const storage = input.files.kind === 'storage'
  const existingId = storage ? credential.storageId : credential.websiteId
  const found = existingId === null ? undefined : store.websites.get(existingId)
  // Only a site still in the credential's hidden organization is the credential's to replace.
  const existing = found !== undefined && found.orgId === credential.orgId ? found : undefined
  const until = storage ? credential.storageUntil : credential.websiteUntil
  const open = existing !== undefined && until !== null && now < until
  if (storage) {
    if (open)
      throw new ApiError('conflict', `This credential already has a live storage site (${existingId}); it stays until its 24 hours end`, {
        reason: 'site_already_created',
        websiteId: existingId,
      })
  } else if (existing !== undefined && !open) {
    throw new ApiError(
      'gone',
      `The 24-hour window of website ${existingId} closed at ${iso(until ?? now)}: it can no longer be replaced or edited, and this credential creates no other website. It can still be claimed (${claimHint(credential)}); for a new site now, issue a new credential`,
      { reason: 'edit_window_closed' },
    )
  } else if (existing !== undefined && !input.replace) {
    throw new ApiError(
      'conflict',
      `This credential already created website ${existingId}. Update it with PUT /public/v1/anonymous/sites/${existingId} (the whole tree, with expectedHeadVersion ${existing.headVersion}), or swap it for a new one with replace: true`,
      {
        reason: 'site_already_created',
        websiteId: existingId,
      },
    )
  }
  charge(credential, input.bytes)
  // Validate and hash static files before anything is created or counted.
  const uploads = input.files.kind === 'static' ? await prepareUploads(store, input.files.files, 'body.files') : null
  input.charge?.()
  // Replacing keeps the network's count; a new website reserves its place first, in one commit
  // with the count, so simultaneous creates cannot all take the last place.
  const replacing = !storage && existing !== undefined
  const reservation: [string, string] = [credential.network, `pending:${credential.id}`]
  if (!storage && !replacing) await reserveNetwork(deps, reservation, credential.id)
  const release = () => store.commit(() => store.anonNetworkSites.remove(reservation))

  // Deadlines: the claim deadline starts with the first site; no window runs past it.
  const claimUntil = credential.claimUntil ?? now + ANON_CLAIM_WINDOW_MS
  const windowUntil = replacing ? credential.websiteUntil! : Math.min(now + ANON_WINDOW_MS, claimUntil)
  const actor = anonymousActor(credential)
  let record: WebsiteRecord
  let website: WebsiteActor
  try {
    const orgId = credential.orgId ?? (await hiddenOrganization(deps, credential))
    const org = deps.organization(orgId)
    if (org === undefined) throw new Error(`the hidden organization ${orgId} of ${credential.id} is missing`)
    const label = withRandomSuffix(labelFromSlug(slugFromName(input.name)), SUBDOMAIN_GENERATED_MAX_CHARS)
    record = await org.createWebsite(actor, { name: input.name, kind: input.files.kind, subdomain: label }, { previewUntil: windowUntil })
    website = deps.website(record.id)!
  } catch (error) {
    if (!storage && !replacing) await release()
    throw error
  }
  try {
    if (uploads !== null) {
      await website.deploy(actor, { uploads, deletes: [], replace: true, expectedHeadVersion: undefined, message: 'Anonymous publish' })
      await website.publish(actor)
    } else if (input.files.kind === 'framework') {
      const written = await website.framework.replaceTree(actor, input.files.files, undefined, 'Anonymous publish')
      if (replacing) await buildThenPublish(deps, website, written.version, actor, true)
      else void buildThenPublish(deps, website, written.version, actor, false)
    }
  } catch (error) {
    await deps.purgeWebsite(record.id, actor)
    if (!storage && !replacing) await release()
    throw error
  }
  const next: AnonymousCredentialRecord = {
    ...currentCredential(store, credential.id),
    orgId: record.orgId,
    claimUntil,
    bytesUsed: credential.bytesUsed + input.bytes,
    ...(storage
      ? { storageId: record.id, storageUntil: Math.min(now + ANON_WINDOW_MS, claimUntil) }
      : { websiteId: record.id, websiteUntil: windowUntil }),
  }
  await store.commit(() => {
    store.anonCredentials.put(next.id, next)
    store.anonDeadlines.put([storage ? next.storageUntil! : windowUntil, 'credential', next.id], '')
    store.anonDeadlines.put([claimUntil, 'credential', next.id], '')
    if (!storage) {
      if (replacing) store.anonNetworkSites.remove([credential.network, existingId!])
      else store.anonNetworkSites.remove(reservation)
      store.anonNetworkSites.put([credential.network, record.id], next.id)
    }
  })
  // The new site is live: only now does the old one go.
  if (existing !== undefined) await deps.purgeWebsite(existing.id, actor)
  return { credential: next, website }
}

/** Replaces the whole tree of the credential's website, in the credential's turn (see `AnonymousCredentials.update`). */
export async function updateSite(
  deps: AnonymousDeps,
  credential: AnonymousCredentialRecord,
  siteId: string,
  input: AnonymousUpdateInput,
): Promise<AnonymousSite> {
  const { website } = findSite(deps, credential, siteId)
  const now = deps.clock.now()
  if (website.id === credential.storageId)
    throw new ApiError(
      'validation',
      'A storage site has no source tree to replace (shared-file uploads are not offered on this server yet); PUT updates the website: use /public/v1/anonymous/sites/current',
      { field: 'path.id' },
    )
  if (credential.websiteUntil !== null && now >= credential.websiteUntil) {
    throw new ApiError(
      'gone',
      `The 24-hour window of website ${website.id} closed at ${iso(credential.websiteUntil)}: edits are closed, but it can still be claimed (${claimHint(credential)})`,
      { reason: 'edit_window_closed' },
    )
  }
  if (input.files.kind !== website.record.kind) {
    throw new ApiError(
      'validation',
      `Website ${website.id} is a ${website.record.kind} site; send ${website.record.kind === 'static' ? 'files as {path, content, encoding?}' : 'files as {file: {type, name?}, content}'}`,
      { field: 'body.files' },
    )
  }
  charge(credential, input.bytes)
  const actor = anonymousActor(credential)
  const store = deps.store
  // Only what is kept counts against the budget: an update equal to the head makes no version and keeps nothing.
  let kept = false
  if (input.files.kind === 'static') {
    const uploads = await prepareUploads(store, input.files.files, 'body.files')
    const result = await website.deploy(actor, {
      uploads,
      deletes: [],
      replace: true,
      expectedHeadVersion: input.expectedHeadVersion,
      message: 'Anonymous update',
    })
    if (result.changed || website.record.publishedVersion !== result.version) await website.publish(actor)
    kept = result.changed
  } else if (input.files.kind === 'framework') {
    const result = await website.framework.replaceTree(actor, input.files.files, input.expectedHeadVersion, 'Anonymous update')
    if (website.record.publishedVersion !== result.version) void buildThenPublish(deps, website, result.version, actor, false)
    kept = result.changed
  }
  if (!kept) return { credential: currentCredential(store, credential.id), website }
  const next = { ...currentCredential(store, credential.id), bytesUsed: credential.bytesUsed + input.bytes }
  await store.commit(() => store.anonCredentials.put(next.id, next))
  return { credential: next, website }
}

/**
 * A framework site whose newest ready build is newer than what is live goes live (ready versions
 * publish by themselves); status reads call this too, so a build that finished while its
 * background publish could not run still goes live.
 */
export function catchUpSite(deps: AnonymousDeps, site: AnonymousSite): void {
  const { website, credential } = site
  const builds = website.builds
  if (builds === null || website.record.orgId !== credential.orgId) return
  const head = website.head.version
  if (website.record.publishedVersion !== head && builds.status(head)?.status === 'ready')
    void publishInBackground(deps, website, anonymousActor(credential))
}

/** Live anonymous websites of a network. */
export function liveOnNetwork(store: AnonymousStore, network: string): { count: number; nextFreeAt: number | null } {
  let count = 0
  let nextFreeAt: number | null = null
  for (const { value } of store.anonNetworkSites.range({ start: [network, ''], end: [network, '\uffff'] })) {
    count++
    const until = store.anonCredentials.get(value)?.websiteUntil ?? null
    if (until !== null && (nextFreeAt === null || until < nextFreeAt)) nextFreeAt = until
  }
  return { count, nextFreeAt }
}

/** Builds a framework version, then publishes it if it passed; `strict`: a failure throws 400 build_failed. */
async function buildThenPublish(
  deps: AnonymousDeps,
  website: WebsiteActor,
  version: number,
  actor: AuditActorValue,
  strict: boolean,
): Promise<void> {
  await website.ensureBuilt(version)
  const state = website.builds?.status(version)
  if (state?.status === 'ready') {
    if (website.head.version === version) await (strict ? website.publish(actor) : publishInBackground(deps, website, actor))
    return
  }
  if (strict) {
    const result = state?.result
    throw new ApiError(
      'validation',
      `The new site did not build${result?.message ? `: ${result.message}` : ''}; the old site is untouched. Fix the diagnostics and replace again`,
      {
        reason: 'build_failed',
        diagnostics: result?.diagnostics ?? [],
        renderFailures: result?.renderFailures ?? [],
      },
    )
  }
}

/** Publishes the head in the background; a failure (a newer edit raced it) is left to the next status read. */
function publishInBackground(deps: AnonymousDeps, website: WebsiteActor, actor: AuditActorValue): Promise<void> {
  return website.publish(actor).then(
    () => undefined,
    (error: unknown) => {
      if (!(error instanceof ApiError))
        deps.log.error(PUBLISH_STEP, { websiteId: website.id, error: (error as Error)?.stack ?? String(error) })
    },
  )
}

/** Counts the network's live sites and reserves a place for one more, in one commit (409 `network_limit` when full). */
function reserveNetwork(deps: AnonymousDeps, reservation: [string, string], credentialId: string): Promise<void> {
  const { store, clock } = deps
  return store.commit(() => {
    const { count, nextFreeAt } = liveOnNetwork(store, reservation[0])
    if (count >= ANON_NETWORK_LIVE_MAX) {
      const now = clock.now()
      const retryAfterSeconds = Math.max(1, Math.ceil(((nextFreeAt ?? now + ANON_WINDOW_MS) - now) / 1000))
      throw new ApiError(
        'conflict',
        `Your network already has ${count} live anonymous sites, the most it may have; one goes offline in ${retryAfterSeconds} seconds. Retry then, or sign in to publish more (an account has no such limit)`,
        {
          reason: 'network_limit',
          retryAfterSeconds,
        },
      )
    }
    store.anonNetworkSites.put(reservation, credentialId)
  })
}

/** Makes the credential's hidden organization, where its sites live until claimed. */
async function hiddenOrganization(deps: AnonymousDeps, credential: AnonymousCredentialRecord): Promise<string> {
  const { store, clock } = deps
  const org: OrganizationRecord = { v: 1, id: newId('org'), name: 'Anonymous sites', createdAt: clock.now(), kind: 'anonymous' }
  await store.commit(() => {
    insertOrganization(store, org)
    store.anonCredentials.put(credential.id, { ...currentCredential(store, credential.id), orgId: org.id })
  })
  return org.id
}
