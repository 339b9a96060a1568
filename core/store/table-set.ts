// The tables of the database: each one's name, key and record, and what it holds. The store (store.ts)
// opens them once; the rest of the store is transactions, blobs and their references.
import type { Database } from 'lmdb'
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
import type * as Identity from '../schemas/identity.js'
import type * as Anonymous from '../schemas/anonymous.js'
import type * as Forms from '../schemas/forms.js'
import type * as Mail from '../schemas/mail.js'
import type { AnalyticsShareRecord } from '../schemas/analytics.js'
import type { StorageObjectRecord, StorageUploadRecord } from '../schemas/storage.js'
import type { AssetRecord } from '../schemas/assets.js'
import type { CollectionRecord, ItemRecord, LegacyPageRecord } from '../schemas/cms.js'
import type { DomainRecord, NamespaceRecord } from '../schemas/domains.js'
import type { GeneratedPagesRecord, PurgeRecord } from '../schemas/records.js'
import type { SitePasswordRecord } from '../schemas/passwords.js'
import type { FunctionKvRecord, FunctionVariableRecord } from '../schemas/functions.js'
import { FILE_REFS, type RECORD_SCHEMAS } from './record-schemas.js'
import type { CounterTable, IndexTable, Key, RecordTable } from './tables.js'
import type { TrackerEvent } from './tracker-event.js'

/** How the store opens a table of each kind (through the cluster's replication when it has one). */
export interface TableOpeners {
  table<T extends { v: number }>(name: keyof typeof RECORD_SCHEMAS): RecordTable<T>
  index(name: string): IndexTable
  counter(name: string): CounterTable
  raw<V, K extends Key | number = Key>(name: string, encoding: 'msgpack' | 'binary'): Database<V, K>
}

/** Every table of the store (`Store` carries them: store.ts merges this interface into its class). */
export interface Tables {
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
  /** `[websiteId, form]` to who is mailed the form's submissions (and the minute's count for digests). */
  readonly formNotify: RecordTable<Forms.FormNotifyRecord>
  /** A pending recipient's confirmation token hash to `[websiteId, form]` as JSON. */
  readonly formNotifyTokens: IndexTable
  /** `[digestAt, websiteId, form]` to websiteId: the digests the chores send next. */
  readonly formDigestsDue: IndexTable
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
  /** website id to the generation of its webhook signing secret. */
  readonly webhookSecrets: RecordTable<Forms.WebhookSecretRecord>
  /** website id to its shareable analytics dashboard's state. */
  readonly analyticsShares: RecordTable<AnalyticsShareRecord>
  readonly sitePasswords: RecordTable<SitePasswordRecord>
  /** `[websiteId, name]` to a function variable or secret. */
  readonly functionVariables: RecordTable<FunctionVariableRecord>
  /** `[websiteId, key]` to a value of the website's key-value store (`env.KV`). */
  readonly functionKv: RecordTable<FunctionKvRecord>
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
}

/**
 * Opens every table onto the store. One named assignment each, in the store's constructor: V8 then
 * keeps the store's properties fast (a copy by Object.assign turned it into a dictionary, and every
 * `store.<table>` read five times slower: measured, 158 ms vs 778 ms for 50 million reads).
 */
export function openTables(store: { -readonly [K in keyof Tables]: Tables[K] }, open: TableOpeners): void {
  store.organizations = open.table('organizations')
  store.persons = open.table('persons')
  store.personsByEmail = open.index('persons-by-email')
  store.memberships = open.table('memberships')
  store.membershipsByPerson = open.index('memberships-by-person')
  store.collaborators = open.table('collaborators')
  store.collaborationsByPerson = open.index('collaborations-by-person')
  store.invitations = open.table('invitations')
  store.invitationsByCode = open.index('invitations-by-code')
  store.invitationsByOwner = open.index('invitations-by-owner')
  store.sessions = open.table('sessions')
  store.oneTime = open.table('one-time')
  store.oauthClients = open.table('oauth-clients')
  store.oauthGrants = open.table('oauth-grants')
  store.oauthCodes = open.table('oauth-codes')
  store.oauthTokens = open.table('oauth-tokens')
  store.transfers = open.table('transfers')
  store.transfersByCode = open.index('transfers-by-code')
  store.pendingTransfers = open.index('pending-transfers')
  store.plans = open.table('plans')
  store.anonCredentials = open.table('anon-credentials')
  store.anonTokens = open.index('anon-tokens')
  store.anonDeadlines = open.index('anon-deadlines')
  store.anonNetworkSites = open.index('anon-network-sites')
  store.claimCodes = open.table('claim-codes')
  store.anonInvites = open.table('anon-invites')
  store.formSubmissions = open.table('form-submissions')
  store.submissionsByForm = open.index('submissions-by-form')
  store.submissionsBySpam = open.index('submissions-by-spam')
  store.formStats = open.table('form-stats')
  store.formFileBytes = open.counter('form-file-bytes')
  store.webhookDeliveries = open.table('webhook-deliveries')
  store.webhooksDue = open.index('webhooks-due')
  store.formNotify = open.table('form-notify')
  store.formNotifyTokens = open.index('form-notify-tokens')
  store.formDigestsDue = open.index('form-digests-due')
  store.mailMessages = open.table('mail-messages')
  store.mailDue = open.index('mail-due')
  store.mailByTime = open.index('mail-by-time')
  store.mailByAddress = open.index('mail-by-address')
  store.mailByOrganization = open.index('mail-by-organization')
  store.domains = open.table('domains')
  store.domainsByHost = open.index('domains-by-host')
  store.domainsByWebsite = open.index('domains-by-website')
  store.namespaces = open.table('namespaces')
  store.namespaceNames = open.index('namespace-names')
  store.vanityLabels = open.index('vanity-labels')
  store.vanityOf = open.index('vanity-of')
  store.vanityRenames = open.counter('vanity-renames')
  store.analyticsHourly = open.counter('analytics-hourly')
  store.analyticsDaily = open.counter('analytics-daily')
  store.analyticsMinutely = open.counter('analytics-minutely')
  store.trackerHourly = open.counter('tracker-hourly')
  store.trackerDaily = open.counter('tracker-daily')
  store.trackerEvents = open.raw('tracker-events', 'msgpack')
  store.trackerSalts = open.raw('tracker-salts', 'binary')
  store.storageObjects = open.table('storage-objects')
  store.objectsByPath = open.index('objects-by-path')
  store.objectsExpiring = open.index('objects-expiring')
  store.orgBlobs = open.index('org-blobs')
  store.folderLabels = open.index('folder-labels')
  store.storageBytes = open.counter('storage-bytes')
  store.storageUploads = open.table('storage-uploads')
  store.uploadsByOrg = open.index('uploads-by-org')
  store.fileRefs = open.counter(FILE_REFS)
  store.assets = open.table('assets')
  store.assetsByWebsite = open.index('assets-by-website')
  store.assetVariants = open.index('asset-variants')
  store.variantCounts = open.counter('variant-counts')
  store.collections = open.table('cms-collections')
  store.collectionsBySlug = open.index('cms-collections-by-slug')
  store.items = open.table('cms-items')
  store.itemsByCollection = open.index('cms-items-by-collection')
  store.itemsBySlug = open.index('cms-items-by-slug')
  store.itemsScheduled = open.index('cms-items-scheduled')
  store.generatedPages = open.table('generated-pages')
  store.legacyPages = open.table('legacy-pages')
  store.legacyPagesBySlug = open.index('legacy-pages-by-slug')
  store.webhookSecrets = open.table('webhook-secrets')
  store.analyticsShares = open.table('analytics-shares')
  store.sitePasswords = open.table('site-passwords')
  store.functionVariables = open.table('function-variables')
  store.functionKv = open.table('function-kv')
  store.feedback = open.table('feedback')
  store.apiKeys = open.table('api-keys')
  store.websites = open.table('websites')
  store.audit = open.table('audit')
  store.meta = open.table('meta')
  store.websitesByOrg = open.index('websites-by-org')
  store.slugs = open.index('slugs')
  store.labels = open.index('labels')
  store.keysByHash = open.index('keys-by-hash')
  store.keysByOrg = open.index('keys-by-org')
  store.builds = open.table('builds')
  store.leases = open.table('leases')
  store.purges = open.table('purges')
  store.versions = open.table('versions')
}
