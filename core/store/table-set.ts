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

/** Every table of the store, opened. */
export function openTables(open: TableOpeners) {
  return {
    organizations: open.table<OrganizationRecord>('organizations'),
    /** Persons (`usr_…`). */
    persons: open.table<Identity.PersonRecord>('persons'),
    /** lowercased email to person id. */
    personsByEmail: open.index('persons-by-email'),
    /** `[orgId, personId]` to a membership. */
    memberships: open.table<Identity.MembershipRecord>('memberships'),
    /** `[personId, orgId]` to orgId: the organizations of a person. */
    membershipsByPerson: open.index('memberships-by-person'),
    /** `[websiteId, personId]` to a collaboration. */
    collaborators: open.table<Identity.CollaboratorRecord>('collaborators'),
    /** `[personId, websiteId]` to websiteId. */
    collaborationsByPerson: open.index('collaborations-by-person'),
    /** invitation id to invitation. */
    invitations: open.table<Identity.InvitationRecord>('invitations'),
    /** code hash to invitation id. */
    invitationsByCode: open.index('invitations-by-code'),
    /** `[orgId, websiteId or '', seq]` to invitation id. */
    invitationsByOwner: open.index('invitations-by-owner'),
    /** session hash to session. */
    sessions: open.table<Identity.SessionRecord>('sessions'),
    /** code hash to a one-time code (setup link). */
    oneTime: open.table<Identity.OneTimeRecord>('one-time'),
    oauthClients: open.table<Identity.OAuthClientRecord>('oauth-clients'),
    oauthGrants: open.table<Identity.OAuthGrantRecord>('oauth-grants'),
    /** code hash to authorization code. */
    oauthCodes: open.table<Identity.OAuthCodeRecord>('oauth-codes'),
    /** token hash to access or refresh token. */
    oauthTokens: open.table<Identity.OAuthTokenRecord>('oauth-tokens'),
    /** transfer id to transfer. */
    transfers: open.table<Identity.TransferRecord>('transfers'),
    /** code hash to transfer id. */
    transfersByCode: open.index('transfers-by-code'),
    /** website id to its pending transfer's id. */
    pendingTransfers: open.index('pending-transfers'),
    /** orgId to plan (billing on; absent means free). */
    plans: open.table<Identity.PlanRecord>('plans'),
    /** credential id to anonymous credential. */
    anonCredentials: open.table<Anonymous.AnonymousCredentialRecord>('anon-credentials'),
    /** token hash to credential id. */
    anonTokens: open.index('anon-tokens'),
    /** `[at, kind, id]` to '' : what the anonymous sweeper acts on at `at` (kind: credential | website). */
    anonDeadlines: open.index('anon-deadlines'),
    /** `[network, websiteId]` to credential id: live anonymous sites of a network. */
    anonNetworkSites: open.index('anon-network-sites'),
    /** code hash to claim code. */
    claimCodes: open.table<Anonymous.ClaimCodeRecord>('claim-codes'),
    /** code hash to an operator's anonymous invite code. */
    anonInvites: open.table<Anonymous.AnonymousInviteRecord>('anon-invites'),
    /** submission id to form submission. */
    formSubmissions: open.table<Forms.SubmissionRecord>('form-submissions'),
    /** `[websiteId, form, seq]` to submission id (newest last). */
    submissionsByForm: open.index('submissions-by-form'),
    /** `[websiteId, form, spam ? 1 : 0, seq]` to submission id: a spam flood never slows listing kept ones. */
    submissionsBySpam: open.index('submissions-by-spam'),
    /** `[websiteId, form]` to the form's counts. */
    formStats: open.table<Forms.FormStatsRecord>('form-stats'),
    /** `[websiteId]` to the bytes of its submissions' files (the site's form storage quota counts them). */
    formFileBytes: open.counter('form-file-bytes'),
    /** submission id to its webhook delivery waiting in the outbox (one per submission). */
    webhookDeliveries: open.table<Forms.WebhookDeliveryRecord>('webhook-deliveries'),
    /** `[nextAttemptAt, submissionId]` to submission id: what the deliverer sends next. */
    webhooksDue: open.index('webhooks-due'),
    /** `[websiteId, form]` to who is mailed the form's submissions (and the minute's count for digests). */
    formNotify: open.table<Forms.FormNotifyRecord>('form-notify'),
    /** A pending recipient's confirmation token hash to `[websiteId, form]` as JSON. */
    formNotifyTokens: open.index('form-notify-tokens'),
    /** `[digestAt, websiteId, form]` to websiteId: the digests the chores send next. */
    formDigestsDue: open.index('form-digests-due'),
    /** message id to a message of the mail outbox (one recipient each). */
    mailMessages: open.table<Mail.MailMessageRecord>('mail-messages'),
    /** `[nextAttemptAt, id]` to id: what the sender hands the relay next. */
    mailDue: open.index('mail-due'),
    /** `[createdAt, id]` to id: the outbox newest first (`plinth mail list`), and what the sweep drops after 30 days. */
    mailByTime: open.index('mail-by-time'),
    /** `[address, createdAt, id]` to id: what one address was sent lately (its limits). */
    mailByAddress: open.index('mail-by-address'),
    /** `[organizationId, createdAt, id]` to id: what one organization sent lately (its limits). */
    mailByOrganization: open.index('mail-by-organization'),
    /** domain id to custom domain. */
    domains: open.table<DomainRecord>('domains'),
    /** hostname to domain id: a custom hostname belongs to one website on the whole platform. */
    domainsByHost: open.index('domains-by-host'),
    /** `[websiteId, hostname]` to domain id. */
    domainsByWebsite: open.index('domains-by-website'),
    /** org id to its namespace. */
    namespaces: open.table<NamespaceRecord>('namespaces'),
    /** namespace name to org id: one name space with `labels` (a name is a namespace or a site's label, never both). */
    namespaceNames: open.index('namespace-names'),
    /** `[orgId, label]` to website id: a site's vanity label chosen with rename_vanity (unique within the namespace). */
    vanityLabels: open.index('vanity-labels'),
    /** website id to the vanity label chosen for it (without one, its vanity label is its subdomain). */
    vanityOf: open.index('vanity-of'),
    /** `[websiteId]` to its vanity renames (limited for its lifetime). */
    vanityRenames: open.counter('vanity-renames'),
    /** `[websiteId, dimension, hour, value]` to page views (the edge beacon's hourly rollups; dimension '' is the total). */
    analyticsHourly: open.counter('analytics-hourly'),
    /** `[websiteId, dimension, day, value]` to page views (daily rollups, for long ranges). */
    analyticsDaily: open.counter('analytics-daily'),
    /**
     * `[utcDay, websiteId, dimension, minute]` to page views ('' ) or visits begun (`visit`) of a minute
     * (the beacon's unit=minute; kept PLINTH_ANALYTICS_RETENTION_DAYS, day first so old days go in one range).
     */
    analyticsMinutely: open.counter('analytics-minutely'),
    /** `[websiteId, dimension, metric, hour, value]` to a count (the tracker's hourly rollups; metrics in actors/analytics/tracker.ts). */
    trackerHourly: open.counter('tracker-hourly'),
    /** `[websiteId, dimension, metric, day, value]` to a count (the tracker's daily rollups). */
    trackerDaily: open.counter('tracker-daily'),
    /** `[utcDay, websiteId, at, seq]` to one raw tracker event (kept PLINTH_ANALYTICS_RETENTION_DAYS; day first, so old days go in one range). */
    trackerEvents: open.raw<TrackerEvent, [number, string, number, number]>('tracker-events', 'msgpack'),
    /** UTC day number to that day's visitor-hash salt (forgotten the day after). */
    trackerSalts: open.raw<Buffer, number>('tracker-salts', 'binary'),
    /** object id to a shared file of a storage website. */
    storageObjects: open.table<StorageObjectRecord>('storage-objects'),
    /** `[websiteId, folder, name]` to object id: a file's link, unique within its website. */
    objectsByPath: open.index('objects-by-path'),
    /** `[expiresAt, objectId]` to object id: what the sweeper deletes next. */
    objectsExpiring: open.index('objects-expiring'),
    /** `[orgId, sha256]` to the size: large site files an organization sent (ticket deploys); what it may reuse without sending again. */
    orgBlobs: open.index('org-blobs'),
    /** `[websiteId, folder]` to the name a folder is shown under (label_folder; its link keeps the folder's own name). */
    folderLabels: open.index('folder-labels'),
    /** `[websiteId]` (bytes of its finished files) and `[orgId]` (bytes of all its storage websites). */
    storageBytes: open.counter('storage-bytes'),
    /** upload id to an upload in progress. */
    storageUploads: open.table<StorageUploadRecord>('storage-uploads'),
    /** `[orgId, uploadId]` to upload id: an organization's uploads in progress. */
    uploadsByOrg: open.index('uploads-by-org'),
    /** sha256 to how many storage objects name that file of the blob directory. */
    fileRefs: open.counter(FILE_REFS),
    /** asset id to an asset of a website's library. */
    assets: open.table<AssetRecord>('assets'),
    /** `[websiteId, createdAt, assetId]` to asset id: a website's assets, newest last. */
    assetsByWebsite: open.index('assets-by-website'),
    /** `[assetId, variantKey]` to the hash of a rendered image variant (its file in the blob directory). */
    assetVariants: open.index('asset-variants'),
    /** `[websiteId]` to how many distinct image variants its assets have. */
    variantCounts: open.counter('variant-counts'),
    /** collection id to a CMS collection (its fields inside). */
    collections: open.table<CollectionRecord>('cms-collections'),
    /** `[websiteId, slug]` to collection id. */
    collectionsBySlug: open.index('cms-collections-by-slug'),
    /** item id to a CMS item. */
    items: open.table<ItemRecord>('cms-items'),
    /** `[collectionId, itemId]` to item id: a collection's items. */
    itemsByCollection: open.index('cms-items-by-collection'),
    /** `[collectionId, slug]` to item id: slugs are unique within a collection. */
    itemsBySlug: open.index('cms-items-by-slug'),
    /** `[publishAt, itemId]` to item id: scheduled publications, read when they come due. */
    itemsScheduled: open.index('cms-items-scheduled'),
    /** website id to the pages a static site serves beside its deployed files (its blog). */
    generatedPages: open.table<GeneratedPagesRecord>('generated-pages'),
    /** page id to a legacy page record. */
    legacyPages: open.table<LegacyPageRecord>('legacy-pages'),
    /** `[websiteId, slug]` to page id. */
    legacyPagesBySlug: open.index('legacy-pages-by-slug'),
    /** website id to the generation of its webhook signing secret. */
    webhookSecrets: open.table<Forms.WebhookSecretRecord>('webhook-secrets'),
    /** website id to its shareable analytics dashboard's state. */
    analyticsShares: open.table<AnalyticsShareRecord>('analytics-shares'),
    sitePasswords: open.table<SitePasswordRecord>('site-passwords'),
    /** `[seq]` to feedback. */
    feedback: open.table<Identity.FeedbackRecord>('feedback'),
    apiKeys: open.table<ApiKeyRecord>('api-keys'),
    websites: open.table<WebsiteRecord>('websites'),
    /** `[orgId, seq]` to audit entry. */
    audit: open.table<AuditRecord>('audit'),
    meta: open.table<InstallationRecord>('meta'),
    /** `[orgId, 'live' | 'trash', seq]` to website id. */
    websitesByOrg: open.index('websites-by-org'),
    /** `[orgId, slug]` to website id: slugs are unique within an organization. */
    slugs: open.index('slugs'),
    /** subdomain label to website id: labels are unique on the platform. */
    labels: open.index('labels'),
    /** secret hash to key id. */
    keysByHash: open.index('keys-by-hash'),
    /** `[orgId, seq]` to key id. */
    keysByOrg: open.index('keys-by-org'),
    /** `[websiteId, version]` to the build of a framework version. */
    builds: open.table<BuildRecord>('builds'),
    /** website id to its edit lease. */
    leases: open.table<LeaseRecord>('leases'),
    /** website id to a purge not finished yet (its record is gone; files, CMS and assets may remain). */
    purges: open.table<PurgeRecord>('purges'),
    /** `[websiteId, version]` to an append-only version manifest. */
    versions: open.table<VersionRecord>('versions'),
  }
}

/** The store's tables, as `Store` carries them. */
export type Tables = Readonly<ReturnType<typeof openTables>>
