import { setImmediate as yieldToLoop } from 'node:timers/promises'
import type { Clock } from '../../core/clock.js'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { hashSecret, newId, newSecret, SECRET_PREFIXES } from '../../core/ids.js'
import {
  ANON_BUDGET_BYTES,
  ANON_CLAIM_WINDOW_MS,
  ANON_NETWORK_LIVE_MAX,
  ANON_SWEEP_BATCH,
  ANON_SWEEP_RETRY_MS,
  ANON_WINDOW_MS,
  CLAIM_CODE_MS,
  SUBDOMAIN_GENERATED_MAX_CHARS,
} from '../../core/limits.js'
import type { AnonymousCredentialRecord, AnonymousInviteRecord } from '../../core/schemas/anonymous.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { PersonRecord } from '../../core/schemas/identity.js'
import type { OrganizationRecord, WebsiteRecord } from '../../core/schemas/records.js'
import type { Store } from '../../core/store/store.js'
import type { FileId } from '../../core/typed-files.js'
import type { Logger } from '../../core/log.js'
import { appendAudit } from '../audit.js'
import { Mailbox } from '../mailbox.js'
import { labelFromSlug, slugFromName, withRandomSuffix } from '../names.js'
import type { OrganizationActor } from '../organization.js'
import type { Plans } from '../plans.js'
import type { People } from '../identity/people.js'
import type { WebsiteActor } from '../website/actor.js'
import type { SharedFiles } from '../storage.js'
import type { StorageObjectRecord, StorageUploadRecord } from '../../core/schemas/storage.js'
import type { RawFile } from '../website/static-files.js'
import { prepareUploads } from '../website/static-files.js'

export interface AnonymousDeps {
  store: Store
  clock: Clock
  log: Logger
  people: People
  plans: Plans
  organization(id: string): OrganizationActor | undefined
  website(id: string): WebsiteActor | undefined
  /** Removes a website for good and forgets its actor. */
  purgeWebsite(id: string, actor: AuditActorValue): Promise<void>
  /** Shared files (the storage site's uploads). */
  files: SharedFiles
}

/** A deadline row: when, what kind of thing, its id. */
type Key = [number, string, string]

/** What a create or update writes: static files (decoded), framework files, or nothing (storage). */
export type AnonymousFiles =
  { kind: 'static'; files: RawFile[] } | { kind: 'framework'; files: { file: FileId; content: string }[] } | { kind: 'storage' }

/** A credential with one of its sites (the website, or the storage site). */
export interface AnonymousSite {
  credential: AnonymousCredentialRecord
  website: WebsiteActor
}

/** What a claim answers. */
export interface ClaimOutcome {
  website: WebsiteRecord | null
  storage: WebsiteRecord | null
  workspace: OrganizationRecord
  alreadyClaimed: boolean
}

const PUBLISH_STEP = 'anonymous site going live'

/** An error that means the saved secret is useless for good (spec: credential reasons). */
function consumed(): ApiError {
  return new ApiError(
    'gone',
    'This anonymous credential was claimed: its sites now belong to a person’s workspace and the token no longer works. Delete the saved token; a new anonymous site needs a new credential (POST /public/v1/anonymous/credentials).',
    { reason: 'credential_consumed' },
  )
}

function expired(): ApiError {
  return new ApiError(
    'gone',
    'This anonymous credential expired: its claim deadline passed and its sites were deleted. Delete the saved token and issue a new one (POST /public/v1/anonymous/credentials).',
    { reason: 'credential_expired' },
  )
}

/** The claiming workspace's own audit entry of a claim (the hidden organization gets one too). */
function claimedEntry(store: Store, workspaceId: string, actor: AuditActorValue, at: number, website: WebsiteRecord): void {
  appendAudit(store, workspaceId, actor, at, {
    eventType: 'website.claimed',
    resourceType: 'website',
    resourceId: website.id,
    websiteId: website.id,
    metadata: { name: website.name, kind: website.kind, subdomain: website.subdomain },
  })
}

/** The audit actor of an anonymous credential (its entries live in its hidden organization). */
export function anonymousActor(credential: AnonymousCredentialRecord): AuditActorValue {
  return { kind: 'anonymous', id: credential.id, name: null }
}

/**
 * Anonymous credentials and their sites (spec: Anonymous site and credential). The single writer of
 * credentials: each credential's commands run one at a time through its own mailbox. A credential's
 * sites live in a hidden organization of their own until a person claims them; a claim moves them
 * into the person's personal workspace through the websites' own actors. Deadlines are rows of a
 * time-ordered index, so the sweeper reads only what is due.
 */
export class AnonymousCredentials {
  readonly #mailboxes = new Map<string, Mailbox>()

  constructor(private readonly deps: AnonymousDeps) {}

  /** A new credential for `network`; the token is returned once and stored as its hash. */
  async issue(network: string): Promise<{ token: string; credential: AnonymousCredentialRecord }> {
    const { store, clock } = this.deps
    const token = newSecret(SECRET_PREFIXES.anonymous)
    const credential: AnonymousCredentialRecord = {
      v: 1,
      id: newId('anc'),
      tokenHash: hashSecret(token),
      network,
      createdAt: clock.now(),
      state: 'active',
      orgId: null,
      claimUntil: null,
      websiteId: null,
      websiteUntil: null,
      storageId: null,
      storageUntil: null,
      bytesUsed: 0,
      claimedBy: null,
      claimedAt: null,
      claimedInto: null,
    }
    await store.commit(() => {
      store.anonCredentials.put(credential.id, credential)
      store.anonTokens.put(credential.tokenHash, credential.id)
    })
    return { token, credential }
  }

  /** The credential of a token (any state), or undefined. */
  byToken(token: string): AnonymousCredentialRecord | undefined {
    const id = this.deps.store.anonTokens.get(hashSecret(token))
    return id === undefined ? undefined : this.deps.store.anonCredentials.get(id)
  }

  /** The credential, if it may still act: 410 once claimed or expired. */
  usable(credential: AnonymousCredentialRecord): AnonymousCredentialRecord {
    if (credential.state === 'claimed') throw consumed()
    if (credential.state === 'expired' || (credential.claimUntil !== null && this.deps.clock.now() >= credential.claimUntil))
      throw expired()
    return credential
  }

  /** One of the credential's sites: `current` (the website), `storage`, or either's id (404 otherwise). */
  site(credential: AnonymousCredentialRecord, id: string): AnonymousSite {
    this.usable(credential)
    const websiteId =
      id === 'current'
        ? credential.websiteId
        : id === 'storage'
          ? credential.storageId
          : id === credential.websiteId || id === credential.storageId
            ? id
            : null
    const website = websiteId === null ? undefined : this.deps.website(websiteId)
    if (website === undefined) {
      if (id === 'current' || id === 'storage') {
        throw new ApiError(
          'not_found',
          `This credential has not created ${id === 'storage' ? 'a storage site' : 'a website'} yet; create one with POST /public/v1/anonymous/sites`,
        )
      }
      throw new ApiError(
        'not_found',
        `Anonymous site ${id} not found for this credential; GET /public/v1/anonymous/sites/current finds yours`,
      )
    }
    return { credential, website }
  }

  // Shared files of the storage site

  /** The credential's storage site while its 24 hours run (410 `edit_window_closed` after). */
  storageSite(credential: AnonymousCredentialRecord, id: string): WebsiteRecord {
    const { website } = this.site(credential, id === 'storage' ? 'storage' : id)
    const record = website.record
    if (record.kind !== 'storage')
      throw new ApiError(
        'conflict',
        `${record.id} is this credential's website, not its storage site; create one with POST /public/v1/anonymous/sites {kind: "storage"}`,
        { reason: 'wrong_kind' },
      )
    if (credential.storageUntil !== null && this.deps.clock.now() >= credential.storageUntil)
      throw this.#windowClosed(credential, credential.storageUntil)
    return record
  }

  #windowClosed(credential: AnonymousCredentialRecord, until: number): ApiError {
    return new ApiError(
      'gone',
      `This storage site's 24 hours ended at ${iso(until)} and its files are deleted; create a new storage site (the byte budget is not renewed), or ${this.#claimHint(credential)}`,
      { reason: 'edit_window_closed' },
    )
  }

  /**
   * Announces uploads to the storage site: each call is its own folder (so every upload has its own
   * link), within the credential's byte budget (checked now, charged when finalized).
   */
  beginUploads(
    credentialId: string,
    siteId: string,
    files: { name: string; size: number; contentType?: string; folder?: string }[],
    folder: string,
  ): Promise<StorageUploadRecord[]> {
    return this.#run(credentialId, async (current) => {
      const credential = this.usable(current)
      const site = this.storageSite(credential, siteId)
      const incoming = files.reduce((sum, f) => sum + f.size, 0)
      this.#charge(credential, incoming)
      return this.deps.files.begin(site, files, { folder, anonymous: true })
    })
  }

  /** Makes complete uploads live until the storage site's 24 hours end; their bytes are charged to the budget. */
  finalizeUploads(credentialId: string, siteId: string, uploadIds: string[]): Promise<StorageObjectRecord[]> {
    return this.#run(credentialId, async (current) => {
      const credential = this.usable(current)
      const site = this.storageSite(credential, siteId)
      const bytes = uploadIds.reduce((sum, id) => sum + this.deps.files.upload(site.id, id).size, 0)
      this.#charge(credential, bytes)
      const objects = await this.deps.files.finalize(site, uploadIds, { expiresAt: credential.storageUntil })
      await this.deps.store.commit(() => {
        const latest = this.#current(credential.id)
        this.deps.store.anonCredentials.put(latest.id, { ...latest, bytesUsed: latest.bytesUsed + bytes })
      })
      return objects
    })
  }

  /**
   * Creates the credential's website (or storage site), live by itself. With `replace`, a new
   * website is built first; only when it is live does the old one go offline and get purged (the
   * deadlines stay). Static sites are live on return; a framework site's build runs in the
   * background (`replace` waits for it: a failed build is 400 `build_failed`, the old site untouched).
   */
  create(
    credentialId: string,
    input: { name: string; files: AnonymousFiles; replace: boolean; bytes: number; network: string; charge?: () => void },
  ): Promise<AnonymousSite> {
    return this.#run(credentialId, async (current) => {
      // Checked again in the credential's turn: a claim or the deadline may have come while the body arrived.
      const credential = this.usable(current)
      const { store, clock } = this.deps
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
          throw new ApiError(
            'conflict',
            `This credential already has a live storage site (${existingId}); it stays until its 24 hours end`,
            { reason: 'site_already_created', websiteId: existingId },
          )
      } else if (existing !== undefined && !open) {
        throw new ApiError(
          'gone',
          `The 24-hour window of website ${existingId} closed at ${iso(until ?? now)}: it can no longer be replaced or edited, and this credential creates no other website. It can still be claimed (${this.#claimHint(credential)}); for a new site now, issue a new credential`,
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
      this.#charge(credential, input.bytes)
      // Validate and hash static files before anything is created or counted.
      const uploads = input.files.kind === 'static' ? await prepareUploads(store, input.files.files, 'body.files') : null
      input.charge?.()
      // Replacing keeps the network's count; a new website reserves its place first, in one commit
      // with the count, so simultaneous creates cannot all take the last place.
      const replacing = !storage && existing !== undefined
      const reservation: [string, string] = [credential.network, `pending:${credential.id}`]
      if (!storage && !replacing) await this.#reserveNetwork(reservation, credential.id)
      const release = () => store.commit(() => store.anonNetworkSites.remove(reservation))

      // Deadlines: the claim deadline starts with the first site; no window runs past it.
      const claimUntil = credential.claimUntil ?? now + ANON_CLAIM_WINDOW_MS
      const windowUntil = replacing ? credential.websiteUntil! : Math.min(now + ANON_WINDOW_MS, claimUntil)
      const actor = anonymousActor(credential)
      let record: WebsiteRecord
      let website: WebsiteActor
      try {
        const orgId = credential.orgId ?? (await this.#hiddenOrganization(credential))
        const org = this.deps.organization(orgId)
        if (org === undefined) throw new Error(`the hidden organization ${orgId} of ${credential.id} is missing`)
        const label = withRandomSuffix(labelFromSlug(slugFromName(input.name)), SUBDOMAIN_GENERATED_MAX_CHARS)
        record = await org.createWebsite(
          actor,
          { name: input.name, kind: input.files.kind, subdomain: label },
          { previewUntil: windowUntil },
        )
        website = this.deps.website(record.id)!
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
          if (replacing) await this.#buildThenPublish(website, written.version, actor, true)
          else void this.#buildThenPublish(website, written.version, actor, false)
        }
      } catch (error) {
        await this.deps.purgeWebsite(record.id, actor)
        if (!storage && !replacing) await release()
        throw error
      }
      const next: AnonymousCredentialRecord = {
        ...this.#current(credential.id),
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
      if (existing !== undefined) await this.deps.purgeWebsite(existing.id, actor)
      return { credential: next, website }
    })
  }

  /** Replaces the whole tree of the credential's website (no lease; the expected head version guards it). */
  update(
    credentialId: string,
    siteId: string,
    input: { files: AnonymousFiles; expectedHeadVersion: number; bytes: number },
  ): Promise<AnonymousSite> {
    return this.#run(credentialId, async (credential) => {
      const { website } = this.site(credential, siteId)
      const now = this.deps.clock.now()
      if (website.id === credential.storageId)
        throw new ApiError(
          'validation',
          'A storage site has no source tree to replace (shared-file uploads are not offered on this server yet); PUT updates the website: use /public/v1/anonymous/sites/current',
          { field: 'path.id' },
        )
      if (credential.websiteUntil !== null && now >= credential.websiteUntil) {
        throw new ApiError(
          'gone',
          `The 24-hour window of website ${website.id} closed at ${iso(credential.websiteUntil)}: edits are closed, but it can still be claimed (${this.#claimHint(credential)})`,
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
      this.#charge(credential, input.bytes)
      const actor = anonymousActor(credential)
      const store = this.deps.store
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
      } else if (input.files.kind === 'framework') {
        const result = await website.framework.replaceTree(actor, input.files.files, input.expectedHeadVersion, 'Anonymous update')
        if (website.record.publishedVersion !== result.version) void this.#buildThenPublish(website, result.version, actor, false)
      }
      const next = { ...this.#current(credential.id), bytesUsed: credential.bytesUsed + input.bytes }
      await store.commit(() => store.anonCredentials.put(next.id, next))
      return { credential: next, website }
    })
  }

  /**
   * A framework site whose newest ready build is newer than what is live goes live (ready versions
   * publish by themselves); status reads call this too, so a build that finished while its
   * background publish could not run still goes live.
   */
  catchUp(site: AnonymousSite): void {
    const { website, credential } = site
    const builds = website.builds
    if (builds === null || website.record.orgId !== credential.orgId) return
    const head = website.head.version
    if (website.record.publishedVersion !== head && builds.status(head)?.status === 'ready')
      void this.#publish(website, anonymousActor(credential))
  }

  // Claims

  /** A claim code for the person (`wc_…`, 10 minutes). */
  async createClaimCode(personId: string): Promise<{ code: string; expiresAt: number }> {
    const { store, clock } = this.deps
    const code = newSecret(SECRET_PREFIXES.claimCode)
    const now = clock.now()
    const expiresAt = now + CLAIM_CODE_MS
    await store.commit(() => store.claimCodes.put(hashSecret(code), { v: 1, personId, createdAt: now, expiresAt }))
    return { code, expiresAt }
  }

  /** Removes expired claim codes (the registry's sweeper); returns how many went. */
  async sweepClaimCodes(): Promise<number> {
    const { store, clock } = this.deps
    const now = clock.now()
    const expired = [...store.claimCodes.range({ start: '', end: '\uffff' })]
      .filter(({ value }) => value.expiresAt <= now)
      .map(({ key }) => key)
    if (expired.length > 0) await store.commit(() => expired.forEach((key) => store.claimCodes.remove(key)))
    return expired.length
  }

  /** The person a claim code was made for: 401 `claim_code_invalid` when wrong or expired. */
  claimCodePerson(code: string): PersonRecord {
    const record = this.deps.store.claimCodes.get(hashSecret(code))
    const person = record === undefined || record.expiresAt <= this.deps.clock.now() ? undefined : this.deps.people.person(record.personId)
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
   * Moves the credential's website and storage site into the person's personal workspace, keeping
   * their URLs; the token stops working. With billing on and a plan without room (always on free),
   * the website is held: online until its 24 hours end, then offline and read-only until activated.
   * The same person claiming again gets `alreadyClaimed`.
   */
  claim(token: string, person: PersonRecord, actor: AuditActorValue): Promise<ClaimOutcome> {
    const found = this.byToken(token)
    if (found === undefined)
      throw new ApiError('not_found', 'No anonymous site has this token; check that it is the saved wa_ token of the site to claim')
    return this.#run(found.id, async (credential) => {
      const { store, clock, plans } = this.deps
      const workspaceId = credential.claimedInto ?? person.personalOrgId
      const workspace = store.organizations.get(workspaceId)
      if (workspace === undefined) throw new Error(`person ${person.id} has no personal workspace ${workspaceId}`)
      const view = (id: string | null) => (id === null ? null : (this.deps.website(id)?.record ?? null))
      if (credential.state === 'claimed') {
        if (credential.claimedBy !== person.id) throw consumed()
        return { website: view(credential.websiteId), storage: view(credential.storageId), workspace, alreadyClaimed: true }
      }
      this.usable(credential)
      if (credential.websiteId === null && credential.storageId === null)
        throw new ApiError(
          'not_found',
          'This credential has not created a site yet, so there is nothing to claim; publish one first (POST /public/v1/anonymous/sites)',
        )
      const now = clock.now()
      // Shared files need room in the workspace's storage quota, checked before anything moves.
      if (credential.storageId !== null) this.deps.files.assertRoom(workspaceId, this.deps.files.usage(credential.storageId))
      const websiteActor = credential.websiteId === null ? undefined : this.deps.website(credential.websiteId)
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
      const storage = credential.storageId === null ? undefined : this.deps.website(credential.storageId)
      const movedStorage =
        storage === undefined
          ? null
          : await storage.moveTo(actor, workspaceId, (current, at) => claimedEntry(store, workspaceId, actor, at, current), {
              eventType: 'website.claimed',
            })
      // The live shared files move with it: counted in the workspace, expiring as its plan says from now.
      if (movedStorage !== null && credential.orgId !== null) await this.deps.files.moved(movedStorage.id, credential.orgId, workspaceId)
      const next: AnonymousCredentialRecord = {
        ...this.#current(credential.id),
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
    })
  }

  // Invite codes (invite-only mode)

  /** An operator's invite code (`wv_…`); `uses` credentials at most (null: unlimited). */
  async createInvite(options: {
    uses: number | null
    days: number | null
    note: string | null
  }): Promise<{ code: string; record: AnonymousInviteRecord }> {
    const { store, clock } = this.deps
    const code = newSecret(SECRET_PREFIXES.anonymousInvite)
    const now = clock.now()
    const record: AnonymousInviteRecord = {
      v: 1,
      createdAt: now,
      expiresAt: options.days === null ? null : now + options.days * 86_400_000,
      usesLeft: options.uses,
      note: options.note,
    }
    await store.commit(() => store.anonInvites.put(hashSecret(code), record))
    return { code, record }
  }

  /** Spends one use of an invite code; false when it is unknown, used up or expired. */
  async useInvite(code: string): Promise<boolean> {
    const { store, clock } = this.deps
    const key = hashSecret(code)
    return store.commit(() => {
      const record = store.anonInvites.get(key)
      if (record === undefined || (record.expiresAt !== null && record.expiresAt <= clock.now()) || record.usesLeft === 0) return false
      if (record.usesLeft !== null) store.anonInvites.put(key, { ...record, usesLeft: record.usesLeft - 1 })
      return true
    })
  }

  // Deadlines

  /**
   * Acts on every deadline that is due: a website whose 24 hours ended goes offline (still
   * claimable), a storage site's files go, a credential past its claim deadline is purged (sites
   * deleted, labels freed) and its token answers `credential_expired`, a held claim goes offline. Reads
   * only due rows of the deadline index, in batches, yielding to the event loop between them.
   */
  async sweep(): Promise<number> {
    const { store, clock, log } = this.deps
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
          if (kind !== 'credential' || this.#mailboxes.has(id) || (credential !== undefined && this.#touchesSites(credential, now))) {
            actorWork.push(key)
            continue
          }
          store.anonDeadlines.remove(key)
          if (credential !== undefined && credential.state === 'active' && credential.claimUntil !== null && now >= credential.claimUntil) {
            store.anonCredentials.put(id, { ...credential, state: 'expired' })
            if (credential.orgId !== null) store.organizations.remove(credential.orgId)
          }
        }
      })
      const failed: Key[] = []
      await Promise.all(
        actorWork.map(async (key) => {
          const [, kind, id] = key
          try {
            if (kind === 'credential') await this.#run(id, (credential) => this.#settle(credential))
            else await this.#settleHeld(id)
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

  /** Live anonymous websites of a network. */
  networkLive(network: string): { count: number; nextFreeAt: number | null } {
    const { store } = this.deps
    let count = 0
    let nextFreeAt: number | null = null
    for (const { value } of store.anonNetworkSites.range({ start: [network, ''], end: [network, '\uffff'] })) {
      count++
      const until = store.anonCredentials.get(value)?.websiteUntil ?? null
      if (until !== null && (nextFreeAt === null || until < nextFreeAt)) nextFreeAt = until
    }
    return { count, nextFreeAt }
  }

  /** Resolves when every credential command queued so far has finished. */
  async drained(): Promise<void> {
    await Promise.all([...this.#mailboxes.values()].map((m) => m.drained()))
  }

  // Internals

  /** True when settling the credential at `now` touches a website (offline or purge): the actor path. */
  #touchesSites(credential: AnonymousCredentialRecord, now: number): boolean {
    if (credential.state !== 'active') return false
    const sites = [credential.websiteId, credential.storageId].filter(
      (site): site is string => site !== null && this.deps.store.websites.get(site) !== undefined,
    )
    if (sites.length === 0) return false
    if (credential.claimUntil !== null && now >= credential.claimUntil) return true
    return (
      (credential.websiteUntil !== null && now >= credential.websiteUntil) ||
      (credential.storageUntil !== null && now >= credential.storageUntil)
    )
  }

  async #settle(credential: AnonymousCredentialRecord): Promise<void> {
    if (credential.state !== 'active') return
    const { store, clock } = this.deps
    const now = clock.now()
    const actor = anonymousActor(credential)
    if (credential.claimUntil !== null && now >= credential.claimUntil) {
      for (const id of [credential.websiteId, credential.storageId])
        if (id !== null && store.websites.get(id) !== undefined) await this.deps.purgeWebsite(id, actor)
      await store.commit(() => {
        store.anonCredentials.put(credential.id, { ...credential, state: 'expired' })
        if (credential.websiteId !== null) store.anonNetworkSites.remove([credential.network, credential.websiteId])
        if (credential.orgId !== null) store.organizations.remove(credential.orgId)
      })
      return
    }
    if (credential.websiteId !== null && credential.websiteUntil !== null && now >= credential.websiteUntil) {
      const website = this.deps.website(credential.websiteId)
      if (website !== undefined && website.record.offline == null) await website.setAvailability(actor, { offline: 'preview_ended' })
      await store.commit(() => store.anonNetworkSites.remove([credential.network, credential.websiteId!]))
    }
    if (credential.storageId !== null && credential.storageUntil !== null && now >= credential.storageUntil) {
      // Shared files are deleted after their 24 hours; recreating starts a new 24 hours.
      if (store.websites.get(credential.storageId) !== undefined) await this.deps.purgeWebsite(credential.storageId, actor)
      await store.commit(() =>
        store.anonCredentials.put(credential.id, { ...this.#current(credential.id), storageId: null, storageUntil: null }),
      )
    }
  }

  async #settleHeld(websiteId: string): Promise<void> {
    const website = this.deps.website(websiteId)
    if (website === undefined) return
    const record = website.record
    if (record.held === true && record.offline == null && record.previewUntil != null && this.deps.clock.now() >= record.previewUntil) {
      await website.setAvailability({ kind: 'user', id: 'plinth', name: 'Plinth (held claim)' }, { offline: 'claim_held' })
    }
  }

  /** Builds a framework version, then publishes it if it passed; `strict`: a failure throws 400 build_failed. */
  async #buildThenPublish(website: WebsiteActor, version: number, actor: AuditActorValue, strict: boolean): Promise<void> {
    await website.ensureBuilt(version)
    const state = website.builds?.status(version)
    if (state?.status === 'ready') {
      if (website.head.version === version) await (strict ? website.publish(actor) : this.#publish(website, actor))
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
  #publish(website: WebsiteActor, actor: AuditActorValue): Promise<void> {
    return website.publish(actor).then(
      () => undefined,
      (error: unknown) => {
        if (!(error instanceof ApiError))
          this.deps.log.error(PUBLISH_STEP, { websiteId: website.id, error: (error as Error)?.stack ?? String(error) })
      },
    )
  }

  /** Counts the network's live sites and reserves a place for one more, in one commit (409 `network_limit` when full). */
  #reserveNetwork(reservation: [string, string], credentialId: string): Promise<void> {
    const { store, clock } = this.deps
    return store.commit(() => {
      const { count, nextFreeAt } = this.networkLive(reservation[0])
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

  #charge(credential: AnonymousCredentialRecord, bytes: number): void {
    if (credential.bytesUsed + bytes <= ANON_BUDGET_BYTES) return
    throw new ApiError(
      'payload_too_large',
      `This credential has sent ${credential.bytesUsed} of its ${ANON_BUDGET_BYTES} bytes (every version, update and swap counts; deletes do not refund), and this request needs ${bytes} more. Claim the site into an account to keep working on it`,
      {
        reason: 'anonymous_storage_limit',
        limitBytes: ANON_BUDGET_BYTES,
        usedBytes: credential.bytesUsed,
      },
    )
  }

  #claimHint(credential: AnonymousCredentialRecord): string {
    return credential.claimUntil === null ? 'claim it' : `a person can claim it until ${iso(credential.claimUntil)}`
  }

  async #hiddenOrganization(credential: AnonymousCredentialRecord): Promise<string> {
    const { store, clock } = this.deps
    const org: OrganizationRecord = { v: 1, id: newId('org'), name: 'Anonymous sites', createdAt: clock.now(), kind: 'anonymous' }
    await store.commit(() => {
      store.organizations.put(org.id, org)
      store.anonCredentials.put(credential.id, { ...this.#current(credential.id), orgId: org.id })
    })
    return org.id
  }

  #current(id: string): AnonymousCredentialRecord {
    const record = this.deps.store.anonCredentials.get(id)
    if (record === undefined) throw new Error(`anonymous credential ${id} vanished`)
    return record
  }

  /** Runs a command of one credential, on its current record, after every earlier one. */
  #run<T>(id: string, command: (credential: AnonymousCredentialRecord) => Promise<T>): Promise<T> {
    let mailbox = this.#mailboxes.get(id)
    if (mailbox === undefined) {
      mailbox = new Mailbox()
      this.#mailboxes.set(id, mailbox)
    }
    const box = mailbox
    return box
      .run(() => command(this.#current(id)))
      .finally(() => {
        if (box.size === 0 && this.#mailboxes.get(id) === box) this.#mailboxes.delete(id)
      })
  }
}
