import type { Database, RootDatabase } from 'lmdb'
import type {
  ApiKeyRecord,
  AuditRecord,
  BuildRecord,
  InstallationRecord,
  LeaseRecord,
  OrganizationRecord,
  VersionRecord,
  WebsiteRecord,
} from '../schemas/records.js'
import * as Identity from '../schemas/identity.js'
import * as Anonymous from '../schemas/anonymous.js'
import * as Forms from '../schemas/forms.js'
import type * as Mail from '../schemas/mail.js'
import { AnalyticsShareRecord } from '../schemas/analytics.js'
import { StorageObjectRecord, StorageUploadRecord } from '../schemas/storage.js'
import { AssetRecord } from '../schemas/assets.js'
import { CollectionRecord, ItemRecord, LegacyPageRecord } from '../schemas/cms.js'
import { BlobFiles } from './blob-files.js'
import { BlobKeeper } from './blob-keeper.js'
import type { DomainRecord, NamespaceRecord } from '../schemas/domains.js'
import type { GeneratedPagesRecord, PurgeRecord } from '../schemas/records.js'
import { BlobReferences } from './blob-references.js'
import { ChangeFeed } from './changes.js'
import { BLOB_REFS, BLOBS, FILE_REFS, RECORD_SCHEMAS } from './record-schemas.js'
import { Replication } from './replication.js'
import { openEnvironment } from './environment.js'
import { CounterTable, IndexTable, RecordTable, type Key } from './tables.js'
import type { TrackerEvent } from './tracker-event.js'
import type { LogPosition } from './write-set.js'
import { SitePasswordRecord } from '../schemas/passwords.js'

export { CorruptRecordError, CounterTable, IndexTable, RecordTable, type Key } from './tables.js'
export type { TrackerEvent } from './tracker-event.js'
export type { CommitLog, Entry, LogPosition, Write } from './write-set.js'
export type { Change, ChangeFeed } from './changes.js'
export { BINARY_TABLES, RECORD_SCHEMAS, schemaVersions } from './record-schemas.js'
export { storeStats, type StoreStats } from './stats.js'

/** How a store is opened: alone (the embedded server), or as a node of a cluster whose commits go to a log. */
export interface StoreOptions {
  /** Record every commit's writes for the cluster's log (core/store/write-set.ts); off for the embedded server. */
  replicated?: boolean
}

/**
 * The LMDB environment under `{dataDir}/db` (msgpackr encoding). Every command runs in `commit`,
 * one atomic transaction whose promise resolves only once it is durable on disk.
 */
export class Store {
  readonly env: RootDatabase
  /** Writes this process's actors did not make (a log entry applied), announced by table to the caches of them. */
  readonly changes = new ChangeFeed()
  readonly organizations: RecordTable<OrganizationRecord>
  /** Persons (`usr_…`). */
  readonly persons: RecordTable<Identity.PersonRecord>
  /** lowercased email to person id. */
  readonly personsByEmail: IndexTable
  /** `[orgId, personId]` to a membership. */
  readonly memberships: RecordTable<Identity.MembershipRecord>
  /** `[personId, orgId]` to orgId: the organizations of a person. */
  readonly membershipsByPerson: IndexTable
  /** `[websiteId, personId]` to a collaboration. */
  readonly collaborators: RecordTable<Identity.CollaboratorRecord>
  /** `[personId, websiteId]` to websiteId. */
  readonly collaborationsByPerson: IndexTable
  /** invitation id to invitation. */
  readonly invitations: RecordTable<Identity.InvitationRecord>
  /** code hash to invitation id. */
  readonly invitationsByCode: IndexTable
  /** `[orgId, websiteId or '', seq]` to invitation id. */
  readonly invitationsByOwner: IndexTable
  /** session hash to session. */
  readonly sessions: RecordTable<Identity.SessionRecord>
  /** code hash to a one-time code (setup link). */
  readonly oneTime: RecordTable<Identity.OneTimeRecord>
  readonly oauthClients: RecordTable<Identity.OAuthClientRecord>
  readonly oauthGrants: RecordTable<Identity.OAuthGrantRecord>
  /** code hash to authorization code. */
  readonly oauthCodes: RecordTable<Identity.OAuthCodeRecord>
  /** token hash to access or refresh token. */
  readonly oauthTokens: RecordTable<Identity.OAuthTokenRecord>
  /** transfer id to transfer. */
  readonly transfers: RecordTable<Identity.TransferRecord>
  /** code hash to transfer id. */
  readonly transfersByCode: IndexTable
  /** website id to its pending transfer's id. */
  readonly pendingTransfers: IndexTable
  /** orgId to plan (billing on; absent means free). */
  readonly plans: RecordTable<Identity.PlanRecord>
  /** credential id to anonymous credential. */
  readonly anonCredentials: RecordTable<Anonymous.AnonymousCredentialRecord>
  /** token hash to credential id. */
  readonly anonTokens: IndexTable
  /** `[at, kind, id]` to '' : what the anonymous sweeper acts on at `at` (kind: credential | website). */
  readonly anonDeadlines: IndexTable
  /** `[network, websiteId]` to credential id: live anonymous sites of a network. */
  readonly anonNetworkSites: IndexTable
  /** code hash to claim code. */
  readonly claimCodes: RecordTable<Anonymous.ClaimCodeRecord>
  /** code hash to an operator's anonymous invite code. */
  readonly anonInvites: RecordTable<Anonymous.AnonymousInviteRecord>
  /** submission id to form submission. */
  readonly formSubmissions: RecordTable<Forms.SubmissionRecord>
  /** `[websiteId, form, seq]` to submission id (newest last). */
  readonly submissionsByForm: IndexTable
  /** `[websiteId, form, spam ? 1 : 0, seq]` to submission id: a spam flood never slows listing kept ones. */
  readonly submissionsBySpam: IndexTable
  /** `[websiteId, form]` to the form's counts. */
  readonly formStats: RecordTable<Forms.FormStatsRecord>
  /** `[websiteId]` to the bytes of its submissions' files (the site's form storage quota counts them). */
  readonly formFileBytes: CounterTable
  /** submission id to its webhook delivery waiting in the outbox (one per submission). */
  readonly webhookDeliveries: RecordTable<Forms.WebhookDeliveryRecord>
  /** `[nextAttemptAt, submissionId]` to submission id: what the deliverer sends next. */
  readonly webhooksDue: IndexTable
  /** message id to a message of the mail outbox (one recipient each). */
  readonly mailMessages: RecordTable<Mail.MailMessageRecord>
  /** `[nextAttemptAt, id]` to id: what the sender hands the relay next. */
  readonly mailDue: IndexTable
  /** `[createdAt, id]` to id: the outbox newest first (`plinth mail list`), and what the sweep drops after 30 days. */
  readonly mailByTime: IndexTable
  /** `[address, createdAt, id]` to id: what one address was sent lately (its limits). */
  readonly mailByAddress: IndexTable
  /** `[organizationId, createdAt, id]` to id: what one organization sent lately (its limits). */
  readonly mailByOrganization: IndexTable
  /** domain id to custom domain. */
  readonly domains: RecordTable<DomainRecord>
  /** hostname to domain id: a custom hostname belongs to one website on the whole platform. */
  readonly domainsByHost: IndexTable
  /** `[websiteId, hostname]` to domain id. */
  readonly domainsByWebsite: IndexTable
  /** org id to its namespace. */
  readonly namespaces: RecordTable<NamespaceRecord>
  /** namespace name to org id: one name space with `labels` (a name is a namespace or a site's label, never both). */
  readonly namespaceNames: IndexTable
  /** `[orgId, label]` to website id: a site's vanity label chosen with rename_vanity (unique within the namespace). */
  readonly vanityLabels: IndexTable
  /** website id to the vanity label chosen for it (without one, its vanity label is its subdomain). */
  readonly vanityOf: IndexTable
  /** `[websiteId]` to its vanity renames (limited for its lifetime). */
  readonly vanityRenames: CounterTable
  /** `[websiteId, dimension, hour, value]` to page views (the edge beacon's hourly rollups; dimension '' is the total). */
  readonly analyticsHourly: CounterTable
  /** `[websiteId, dimension, day, value]` to page views (daily rollups, for long ranges). */
  readonly analyticsDaily: CounterTable
  /**
   * `[utcDay, websiteId, dimension, minute]` to page views ('' ) or visits begun (`visit`) of a minute
   * (the beacon's unit=minute; kept PLINTH_ANALYTICS_RETENTION_DAYS, day first so old days go in one range).
   */
  readonly analyticsMinutely: CounterTable
  /** `[websiteId, dimension, metric, hour, value]` to a count (the tracker's hourly rollups; metrics in actors/analytics/tracker.ts). */
  readonly trackerHourly: CounterTable
  /** `[websiteId, dimension, metric, day, value]` to a count (the tracker's daily rollups). */
  readonly trackerDaily: CounterTable
  /** `[utcDay, websiteId, at, seq]` to one raw tracker event (kept PLINTH_ANALYTICS_RETENTION_DAYS; day first, so old days go in one range). */
  readonly trackerEvents: Database<TrackerEvent, [number, string, number, number]>
  /** UTC day number to that day's visitor-hash salt (forgotten the day after). */
  readonly trackerSalts: Database<Buffer, number>
  /** object id to a shared file of a storage website. */
  readonly storageObjects: RecordTable<StorageObjectRecord>
  /** `[websiteId, folder, name]` to object id: a file's link, unique within its website. */
  readonly objectsByPath: IndexTable
  /** `[expiresAt, objectId]` to object id: what the sweeper deletes next. */
  readonly objectsExpiring: IndexTable
  /** `[orgId, sha256]` to the size: large site files an organization sent (ticket deploys); what it may reuse without sending again. */
  readonly orgBlobs: IndexTable
  /** `[websiteId, folder]` to the name a folder is shown under (label_folder; its link keeps the folder's own name). */
  readonly folderLabels: IndexTable
  /** `[websiteId]` (bytes of its finished files) and `[orgId]` (bytes of all its storage websites). */
  readonly storageBytes: CounterTable
  /** upload id to an upload in progress. */
  readonly storageUploads: RecordTable<StorageUploadRecord>
  /** `[orgId, uploadId]` to upload id: an organization's uploads in progress. */
  readonly uploadsByOrg: IndexTable
  /** sha256 to how many storage objects name that file of the blob directory. */
  readonly fileRefs: CounterTable
  /** asset id to an asset of a website's library. */
  readonly assets: RecordTable<AssetRecord>
  /** `[websiteId, createdAt, assetId]` to asset id: a website's assets, newest last. */
  readonly assetsByWebsite: IndexTable
  /** `[assetId, variantKey]` to the hash of a rendered image variant (its file in the blob directory). */
  readonly assetVariants: IndexTable
  /** `[websiteId]` to how many distinct image variants its assets have. */
  readonly variantCounts: CounterTable
  /** collection id to a CMS collection (its fields inside). */
  readonly collections: RecordTable<CollectionRecord>
  /** `[websiteId, slug]` to collection id. */
  readonly collectionsBySlug: IndexTable
  /** item id to a CMS item. */
  readonly items: RecordTable<ItemRecord>
  /** `[collectionId, itemId]` to item id: a collection's items. */
  readonly itemsByCollection: IndexTable
  /** `[collectionId, slug]` to item id: slugs are unique within a collection. */
  readonly itemsBySlug: IndexTable
  /** `[publishAt, itemId]` to item id: scheduled publications, read when they come due. */
  readonly itemsScheduled: IndexTable
  /** website id to the pages a static site serves beside its deployed files (its blog). */
  readonly generatedPages: RecordTable<GeneratedPagesRecord>
  /** page id to a legacy page record. */
  readonly legacyPages: RecordTable<LegacyPageRecord>
  /** `[websiteId, slug]` to page id. */
  readonly legacyPagesBySlug: IndexTable
  /** Large content: files named by hash under `{dataDir}/files`. */
  readonly files: BlobFiles
  /** Blob files added and removed as records come to name them and stop (`adopt`, `place`, `release`). */
  readonly blobs: BlobKeeper
  /** website id to the generation of its webhook signing secret. */
  readonly webhookSecrets: RecordTable<Forms.WebhookSecretRecord>
  /** website id to its shareable analytics dashboard's state. */
  readonly analyticsShares: RecordTable<AnalyticsShareRecord>
  readonly sitePasswords: RecordTable<SitePasswordRecord>
  /** `[seq]` to feedback. */
  readonly feedback: RecordTable<Identity.FeedbackRecord>
  readonly apiKeys: RecordTable<ApiKeyRecord>
  readonly websites: RecordTable<WebsiteRecord>
  /** `[orgId, seq]` to audit entry. */
  readonly audit: RecordTable<AuditRecord>
  readonly meta: RecordTable<InstallationRecord>
  /** `[orgId, 'live' | 'trash', seq]` to website id. */
  readonly websitesByOrg: IndexTable
  /** `[orgId, slug]` to website id: slugs are unique within an organization. */
  readonly slugs: IndexTable
  /** subdomain label to website id: labels are unique on the platform. */
  readonly labels: IndexTable
  /** secret hash to key id. */
  readonly keysByHash: IndexTable
  /** `[orgId, seq]` to key id. */
  readonly keysByOrg: IndexTable
  /** `[websiteId, version]` to the build of a framework version. */
  readonly builds: RecordTable<BuildRecord>
  /** website id to its edit lease. */
  readonly leases: RecordTable<LeaseRecord>
  /** website id to a purge not finished yet (its record is gone; files, CMS and assets may remain). */
  readonly purges: RecordTable<PurgeRecord>
  /** `[websiteId, version]` to an append-only version manifest. */
  readonly versions: RecordTable<VersionRecord>
  readonly #blobs: Database<Buffer, string>
  readonly #variants: Database<Buffer, [string, string]>
  readonly #counters: Database<number, string>
  /** How many manifest entries (of versions, builds and submissions) name each blob. */
  readonly #references: BlobReferences
  /** Secrets a data directory from before PLINTH_SECRET_FILE kept, moved out at start (actors/installation.ts). */
  readonly legacySecrets: Database<Buffer, string>

  /** The cluster's side of this store (its commits recorded and sealed to the log, entries applied); null on the embedded server. */
  readonly replication: Replication | null

  /** Opens the store under `dataDir` and brings an older data directory's bookkeeping up to date. */
  static async open(dataDir: string, options: StoreOptions = {}): Promise<Store> {
    const store = new Store(dataDir, options)
    // Once, for a data directory from before blobs were counted (a replica's comes from the log).
    if (options.replicated !== true) await store.ensureBlobReferences()
    return store
  }

  constructor(dataDir: string, options: StoreOptions = {}) {
    this.env = openEnvironment(dataDir)
    // Never recorded: each node keeps its own position, written with the entry it records.
    this.replication =
      options.replicated === true
        ? new Replication(this, this.env.openDB<LogPosition, string>({ name: 'replication', encoding: 'msgpack' }))
        : null
    const openDB = this.#openDB.bind(this)
    const table = <T extends { v: number }>(name: keyof typeof RECORD_SCHEMAS) =>
      new RecordTable<T>(name, openDB<unknown>(name, 'msgpack'), RECORD_SCHEMAS[name])
    const index = (name: string) => new IndexTable(openDB<string>(name, 'msgpack'))
    const counter = (name: string) => new CounterTable(openDB<number, Key>(name, 'msgpack', true))
    this.organizations = table('organizations')
    this.persons = table('persons')
    this.personsByEmail = index('persons-by-email')
    this.memberships = table('memberships')
    this.membershipsByPerson = index('memberships-by-person')
    this.collaborators = table('collaborators')
    this.collaborationsByPerson = index('collaborations-by-person')
    this.invitations = table('invitations')
    this.invitationsByCode = index('invitations-by-code')
    this.invitationsByOwner = index('invitations-by-owner')
    this.sessions = table('sessions')
    this.oneTime = table('one-time')
    this.oauthClients = table('oauth-clients')
    this.oauthGrants = table('oauth-grants')
    this.oauthCodes = table('oauth-codes')
    this.oauthTokens = table('oauth-tokens')
    this.transfers = table('transfers')
    this.transfersByCode = index('transfers-by-code')
    this.pendingTransfers = index('pending-transfers')
    this.plans = table('plans')
    this.feedback = table('feedback')
    this.analyticsHourly = counter('analytics-hourly')
    this.analyticsDaily = counter('analytics-daily')
    this.analyticsMinutely = counter('analytics-minutely')
    this.analyticsShares = table('analytics-shares')
    this.sitePasswords = table('site-passwords')
    this.trackerHourly = counter('tracker-hourly')
    this.trackerDaily = counter('tracker-daily')
    this.trackerEvents = openDB<TrackerEvent, [number, string, number, number]>('tracker-events', 'msgpack')
    this.trackerSalts = openDB<Buffer, number>('tracker-salts', 'binary')
    this.storageObjects = table('storage-objects')
    this.objectsByPath = index('objects-by-path')
    this.objectsExpiring = index('objects-expiring')
    this.folderLabels = index('folder-labels')
    this.orgBlobs = index('org-blobs')
    this.storageBytes = counter('storage-bytes')
    this.storageUploads = table('storage-uploads')
    this.uploadsByOrg = index('uploads-by-org')
    this.fileRefs = counter(FILE_REFS)
    this.files = new BlobFiles(dataDir)
    this.collections = table('cms-collections')
    this.collectionsBySlug = index('cms-collections-by-slug')
    this.items = table('cms-items')
    this.itemsByCollection = index('cms-items-by-collection')
    this.itemsBySlug = index('cms-items-by-slug')
    this.itemsScheduled = index('cms-items-scheduled')
    this.generatedPages = table('generated-pages')
    this.legacyPages = table('legacy-pages')
    this.legacyPagesBySlug = index('legacy-pages-by-slug')
    this.assets = table('assets')
    this.assetsByWebsite = index('assets-by-website')
    this.assetVariants = index('asset-variants')
    this.variantCounts = counter('variant-counts')
    this.webhookSecrets = table('webhook-secrets')
    this.domains = table('domains')
    this.domainsByHost = index('domains-by-host')
    this.domainsByWebsite = index('domains-by-website')
    this.namespaces = table('namespaces')
    this.namespaceNames = index('namespace-names')
    this.vanityLabels = index('vanity-labels')
    this.vanityOf = index('vanity-of')
    this.vanityRenames = counter('vanity-renames')
    this.formSubmissions = table('form-submissions')
    this.submissionsByForm = index('submissions-by-form')
    this.submissionsBySpam = index('submissions-by-spam')
    this.formStats = table('form-stats')
    this.formFileBytes = counter('form-file-bytes')
    this.webhookDeliveries = table('webhook-deliveries')
    this.webhooksDue = index('webhooks-due')
    this.mailMessages = table('mail-messages')
    this.mailDue = index('mail-due')
    this.mailByTime = index('mail-by-time')
    this.mailByAddress = index('mail-by-address')
    this.mailByOrganization = index('mail-by-organization')
    this.anonCredentials = table('anon-credentials')
    this.anonTokens = index('anon-tokens')
    this.anonDeadlines = index('anon-deadlines')
    this.anonNetworkSites = index('anon-network-sites')
    this.claimCodes = table('claim-codes')
    this.anonInvites = table('anon-invites')
    this.apiKeys = table('api-keys')
    this.websites = table('websites')
    this.audit = table('audit')
    this.meta = table('meta')
    this.websitesByOrg = index('websites-by-org')
    this.slugs = index('slugs')
    this.labels = index('labels')
    this.keysByHash = index('keys-by-hash')
    this.keysByOrg = index('keys-by-org')
    this.versions = table('versions')
    this.leases = table('leases')
    this.purges = table('purges')
    this.builds = table('builds')
    this.#blobs = openDB<Buffer, string>(BLOBS, 'binary')
    this.#variants = openDB<Buffer, [string, string]>('variants', 'binary')
    this.#counters = openDB<number, string>('counters', 'msgpack')
    this.#references = new BlobReferences(openDB<number, string>(BLOB_REFS, 'msgpack'), this.#blobs, this.#variants, {
      versions: this.versions,
      builds: this.builds,
      submissions: this.formSubmissions,
    })
    this.legacySecrets = openDB<Buffer, string>('secrets', 'binary')
    this.blobs = new BlobKeeper(this.files, {
      // A site version may name the same bytes (a large file of a ticket deploy): they stay while it does.
      references: (hash) => Math.max(0, this.fileRefs.get(hash)) + this.#references.count(hash),
      // A replica drops nothing itself: the primary's drop arrives through the log.
      dropCounter: (hash) =>
        !this.writable
          ? Promise.resolve()
          : this.commit(() => {
              if (this.fileRefs.get(hash) <= 0) void this.fileRefs.db.remove(hash)
            }),
    })
  }

  /** Opens a table of the environment (in a replicated store, through `Replication.table`: its writes go to the log). */
  #openDB<V, K extends Key | number = Key>(name: string, encoding: 'msgpack' | 'binary', counts = false): Database<V, K> {
    const db = this.env.openDB<V, K>({ name, encoding })
    return this.replication === null ? db : this.replication.table(db, name, encoding, counts)
  }

  /** True when content with this sha256 is stored. */
  hasBlob(hash: string): boolean {
    return this.#blobs.doesExist(hash)
  }

  /** Stores content under its sha256 once; only inside `commit`. */
  putBlob(hash: string, bytes: Uint8Array): void {
    if (!this.#blobs.doesExist(hash)) void this.#blobs.put(hash, Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
  }

  /** Content and its precompressed variants (either may be null: not worth it, or already stored); only inside `commit`. */
  putContent(hash: string, bytes: Uint8Array, variants: { gzip: Uint8Array | null; br: Uint8Array | null } | null): void {
    this.putBlob(hash, bytes)
    if (variants?.gzip) this.putVariant(hash, 'gzip', variants.gzip)
    if (variants?.br) this.putVariant(hash, 'br', variants.br)
  }

  /** A copy of the content with this sha256 (never lmdb's reused read buffer). */
  getBlob(hash: string): Buffer | undefined {
    return this.#blobs.get(hash)
  }

  /** Stores a precompressed variant (`gzip` or `br`) of a blob; only inside `commit`. */
  putVariant(hash: string, encoding: string, bytes: Uint8Array): void {
    void this.#variants.put([hash, encoding], Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength))
  }

  hasVariant(hash: string, encoding: string): boolean {
    return this.#variants.doesExist([hash, encoding])
  }

  getVariant(hash: string, encoding: string): Buffer | undefined {
    return this.#variants.get([hash, encoding])
  }

  // Blob references: the writes that name blobs keep their counts (blob-references.ts).

  /** Stores a version (append-only); its blobs gain a reference. Only inside `commit`. */
  putVersion(key: [string, number], record: VersionRecord): void {
    this.#references.putVersion(key, record)
  }

  /** Removes a version (a purge); blobs nothing else names go. Only inside `commit`. */
  removeVersion(key: [string, number]): void {
    this.#references.removeVersion(key)
  }

  /** Stores a build (a rebuild replaces the version's previous one). Only inside `commit`. */
  putBuild(key: [string, number], record: BuildRecord): void {
    this.#references.putBuild(key, record)
  }

  removeBuild(key: [string, number]): void {
    this.#references.removeBuild(key)
  }

  /** Stores a form submission; its files' blobs gain a reference. Only inside `commit`. */
  putSubmission(record: Forms.SubmissionRecord): void {
    this.#references.putSubmission(record)
  }

  /** Removes a submission; blobs nothing else names go. Only inside `commit`. */
  removeSubmission(id: string): void {
    this.#references.removeSubmission(id)
  }

  /** How many manifest entries name the blob (0: none, and it is gone or about to be). */
  blobReferences(hash: string): number {
    return this.#references.count(hash)
  }

  /**
   * Counts the references of a data directory written before blobs were counted (once; a flag in the
   * counters says it is done). New data directories count from their first write.
   */
  async ensureBlobReferences(): Promise<void> {
    if (this.#counters.get('blob-refs-counted') === 1) return
    await this.commit(() => {
      if (this.#counters.get('blob-refs-counted') === 1) return
      this.#references.recount()
      void this.#counters.put('blob-refs-counted', 1)
    })
  }

  /** The versions of a website, newest first, from `before` (exclusive). */
  *versionsOf(websiteId: string, before = Number.MAX_SAFE_INTEGER): Generator<VersionRecord> {
    for (const { value } of this.versions.range({ start: [websiteId, before - 1], end: [websiteId, 0], reverse: true })) yield value
  }

  /**
   * Runs `fn` in one write transaction and resolves once it is committed and flushed. If `fn`
   * throws, nothing it wrote is kept and the promise rejects with that error.
   */
  commit<T>(fn: () => T): Promise<T> {
    if (this.replication !== null) return this.replication.commit(fn)
    return this.env.childTransaction(fn) as Promise<T>
  }

  /** Whether this node makes commits: the embedded server, or a cluster's primary (a replica only applies the log). */
  get writable(): boolean {
    return this.replication === null || this.replication.writable
  }

  /**
   * A number greater than every one handed out before, also across restarts; only inside `commit`.
   * Ordering keys built from it make keyset pagination stable while new records arrive.
   */
  nextSeq(): number {
    const last = this.#counters.get('seq') ?? 0
    const next = Math.max(last + 1, Date.now() * 1000)
    void this.#counters.put('seq', next)
    return next
  }

  async close(): Promise<void> {
    await this.env.close()
  }
}
