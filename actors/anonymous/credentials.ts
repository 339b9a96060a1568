// The anonymous credentials' front door: issue and look up credentials, and run each command in its credential's turn.
import { ApiError } from '../../core/errors.js'
import { hashSecret, newId, newSecret, SECRET_PREFIXES } from '../../core/ids.js'
import type { AnonymousCredentialRecord, AnonymousInviteRecord } from '../../core/schemas/anonymous.js'
import type { AuditActorValue } from '../../core/schemas/audit.js'
import type { PersonRecord } from '../../core/schemas/identity.js'
import type { WebsiteRecord } from '../../core/schemas/records.js'
import type { StorageUploadRecord } from '../../core/schemas/storage.js'
import type { FinalizeOutcome } from '../files/storage.js'
import type { BeginFile } from '../files/storage-uploads.js'
import { claimSites, newClaimCode, personOfClaimCode, sweepExpiredClaimCodes } from './claims.js'
import { charge, checkUsable, windowClosed } from './rules.js'
import { catchUpSite, createSite, findSite, liveOnNetwork, updateSite } from './sites.js'
import { sweepDeadlines } from './sweeper.js'
import { CredentialTurns, currentCredential } from './turns.js'
import type { AnonymousCreateInput, AnonymousDeps, AnonymousSite, AnonymousUpdateInput, ClaimOutcome } from './types.js'

export type { AnonymousCreateInput, AnonymousDeps, AnonymousFiles, AnonymousSite, AnonymousUpdateInput, ClaimOutcome } from './types.js'
export { anonymousActor } from './rules.js'

/**
 * Anonymous credentials and their sites (spec: Anonymous site and credential). The single writer of
 * credentials: each credential's commands run one at a time through its own mailbox. A credential's
 * sites live in a hidden organization of their own until a person claims them; a claim moves them
 * into the person's personal workspace through the websites' own actors. Deadlines are rows of a
 * time-ordered index, so the sweeper reads only what is due.
 */
export class AnonymousCredentials {
  readonly #turns: CredentialTurns

  constructor(private readonly deps: AnonymousDeps) {
    this.#turns = new CredentialTurns(deps.store)
  }

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
    return checkUsable(credential, this.deps.clock)
  }

  /** One of the credential's sites: `current` (the website), `storage`, or either's id (404 otherwise). */
  site(credential: AnonymousCredentialRecord, id: string): AnonymousSite {
    return findSite(this.deps, credential, id)
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
      throw windowClosed(credential, credential.storageUntil)
    return record
  }

  /**
   * Announces uploads to the storage site: a call without a folder (or with one the site does not
   * hold) makes a new, unguessable folder, so every upload has its own link; with the folder an
   * earlier call returned, the files join it. Within the credential's byte budget (checked now,
   * charged when finalized).
   */
  beginUploads(
    credentialId: string,
    siteId: string,
    files: BeginFile[],
    folder: string | undefined,
  ): Promise<{ site: WebsiteRecord; folder: string; uploads: StorageUploadRecord[] }> {
    return this.#turns.run(credentialId, async (current) => {
      const credential = this.usable(current)
      const site = this.storageSite(credential, siteId)
      const incoming = files.reduce((sum, f) => sum + f.size, 0)
      charge(credential, incoming)
      const begun = await this.deps.files.begin(site, files, { folder, anonymous: true })
      return { site, ...begun }
    })
  }

  /**
   * Makes complete uploads live until the storage site's 24 hours end, each answered on its own;
   * the bytes of those that went live are charged to the budget.
   */
  finalizeUploads(
    credentialId: string,
    siteId: string,
    uploadIds: string[],
  ): Promise<{ site: WebsiteRecord; outcomes: FinalizeOutcome[] }> {
    return this.#turns.run(credentialId, async (current) => {
      const credential = this.usable(current)
      const site = this.storageSite(credential, siteId)
      let bytes = 0
      const outcomes = await this.deps.files.finalize(site, uploadIds, {
        expiresAt: credential.storageUntil,
        charge: (live) => {
          charge(credential, live)
          bytes = live
        },
      })
      if (bytes > 0)
        await this.deps.store.commit(() => {
          const latest = currentCredential(this.deps.store, credential.id)
          this.deps.store.anonCredentials.put(latest.id, { ...latest, bytesUsed: latest.bytesUsed + bytes })
        })
      return { site, outcomes }
    })
  }

  /**
   * Creates the credential's website (or storage site), live by itself. With `replace`, a new
   * website is built first; only when it is live does the old one go offline and get purged (the
   * deadlines stay). Static sites are live on return; a framework site's build runs in the
   * background (`replace` waits for it: a failed build is 400 `build_failed`, the old site untouched).
   */
  create(credentialId: string, input: AnonymousCreateInput): Promise<AnonymousSite> {
    return this.#turns.run(credentialId, (current) => createSite(this.deps, current, input))
  }

  /** Replaces the whole tree of the credential's website (no lease; the expected head version guards it). */
  update(credentialId: string, siteId: string, input: AnonymousUpdateInput): Promise<AnonymousSite> {
    return this.#turns.run(credentialId, (credential) => updateSite(this.deps, credential, siteId, input))
  }

  /**
   * A framework site whose newest ready build is newer than what is live goes live (ready versions
   * publish by themselves); status reads call this too, so a build that finished while its
   * background publish could not run still goes live.
   */
  catchUp(site: AnonymousSite): void {
    catchUpSite(this.deps, site)
  }

  // Claims

  /** A claim code for the person (`wc_…`, 10 minutes). */
  createClaimCode(personId: string): Promise<{ code: string; expiresAt: number }> {
    return newClaimCode(this.deps, personId)
  }

  /** Removes expired claim codes (the registry's sweeper); returns how many went. */
  sweepClaimCodes(): Promise<number> {
    return sweepExpiredClaimCodes(this.deps)
  }

  /** The person a claim code was made for: 401 `claim_code_invalid` when wrong or expired. */
  claimCodePerson(code: string): PersonRecord {
    return personOfClaimCode(this.deps, code)
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
    return this.#turns.run(found.id, (credential) => claimSites(this.deps, credential, person, actor))
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
  sweep(): Promise<number> {
    return sweepDeadlines(this.deps, this.#turns)
  }

  /** Live anonymous websites of a network. */
  networkLive(network: string): { count: number; nextFreeAt: number | null } {
    return liveOnNetwork(this.deps.store, network)
  }

  /** Resolves when every credential command queued so far has finished. */
  drained(): Promise<void> {
    return this.#turns.drained()
  }
}
