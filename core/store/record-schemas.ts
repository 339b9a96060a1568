// The record tables by name with their schemas, and the tables of raw bytes: what a record is checked against when read.
import { FunctionKvRecord, FunctionVariableRecord } from '../schemas/functions.js'
import type { TSchema } from '@sinclair/typebox'
import * as Identity from '../schemas/identity.js'
import * as Anonymous from '../schemas/anonymous.js'
import * as Forms from '../schemas/forms.js'
import { MailMessageRecord } from '../schemas/mail.js'
import { AnalyticsShareRecord } from '../schemas/analytics.js'
import { StorageObjectRecord, StorageUploadRecord } from '../schemas/storage.js'
import { AssetRecord } from '../schemas/assets.js'
import { CollectionRecord, ItemRecord, LegacyPageRecord } from '../schemas/cms.js'
import { DomainRecord as DomainSchema, NamespaceRecord as NamespaceSchema } from '../schemas/domains.js'
import {
  BuildRecord as BuildSchema,
  LeaseRecord as LeaseSchema,
  VersionRecord as VersionSchema,
  ApiKeyRecord as ApiKeySchema,
  AuditRecord as AuditSchema,
  InstallationRecord as InstallationSchema,
  OrganizationRecord as OrganizationSchema,
  WebsiteRecord as WebsiteSchema,
  GeneratedPagesRecord,
  PurgeRecord as PurgeSchema,
} from '../schemas/records.js'
import { SitePasswordRecord } from '../schemas/passwords.js'

/**
 * The record tables by name, with the schema each record is validated against when read (its `v` is
 * the table's schema version). Backups record these versions and check every record against them.
 */
export const RECORD_SCHEMAS = {
  organizations: OrganizationSchema,
  persons: Identity.PersonRecord,
  memberships: Identity.MembershipRecord,
  collaborators: Identity.CollaboratorRecord,
  invitations: Identity.InvitationRecord,
  sessions: Identity.SessionRecord,
  'one-time': Identity.OneTimeRecord,
  'oauth-clients': Identity.OAuthClientRecord,
  'oauth-grants': Identity.OAuthGrantRecord,
  'oauth-codes': Identity.OAuthCodeRecord,
  'oauth-tokens': Identity.OAuthTokenRecord,
  transfers: Identity.TransferRecord,
  plans: Identity.PlanRecord,
  feedback: Identity.FeedbackRecord,
  'analytics-shares': AnalyticsShareRecord,
  'site-passwords': SitePasswordRecord,
  'function-variables': FunctionVariableRecord,
  'function-kv': FunctionKvRecord,
  'storage-objects': StorageObjectRecord,
  'storage-uploads': StorageUploadRecord,
  'cms-collections': CollectionRecord,
  'cms-items': ItemRecord,
  'generated-pages': GeneratedPagesRecord,
  'legacy-pages': LegacyPageRecord,
  assets: AssetRecord,
  'webhook-secrets': Forms.WebhookSecretRecord,
  domains: DomainSchema,
  namespaces: NamespaceSchema,
  'form-submissions': Forms.SubmissionRecord,
  'form-stats': Forms.FormStatsRecord,
  'form-notify': Forms.FormNotifyRecord,
  'webhook-deliveries': Forms.WebhookDeliveryRecord,
  'mail-messages': MailMessageRecord,
  'anon-credentials': Anonymous.AnonymousCredentialRecord,
  'claim-codes': Anonymous.ClaimCodeRecord,
  'anon-invites': Anonymous.AnonymousInviteRecord,
  'api-keys': ApiKeySchema,
  websites: WebsiteSchema,
  audit: AuditSchema,
  meta: InstallationSchema,
  versions: VersionSchema,
  leases: LeaseSchema,
  purges: PurgeSchema,
  builds: BuildSchema,
} as const satisfies Record<string, TSchema>

/** The tables counting what names each blob file (files, and manifest entries): a replica releases what an entry's writes there leave unnamed. */
export const FILE_REFS = 'file-refs'
export const BLOB_REFS = 'blob-refs'
/** The table of content bytes by SHA-256. */
export const BLOBS = 'blobs'

/** Tables whose values are raw bytes (content, precompressed variants, secrets, salts), not msgpack. */
export const BINARY_TABLES: ReadonlySet<string> = new Set(['blobs', 'variants', 'secrets', 'tracker-salts'])

/** The schema version of each record table this build writes and reads. */
export function schemaVersions(): Record<string, number> {
  return Object.fromEntries(
    Object.entries(RECORD_SCHEMAS).map(([name, schema]) => [
      name,
      (schema as unknown as { properties: { v: { const: number } } }).properties.v.const,
    ]),
  )
}
