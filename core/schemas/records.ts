import { Type, type Static } from '@sinclair/typebox'
import { Access } from './api-key.js'
import { AuditActor, AUDIT_EVENT_TYPES, AUDIT_RESOURCE_TYPES } from './audit.js'
import { WebsiteKindSchema } from './website.js'
import { GateResultSchema } from './code.js'
import { StringEnum } from './common.js'

/**
 * Records as stored in LMDB. Each carries `v`, its schema version; a reader that meets a version it
 * does not know refuses it rather than guessing. Times are epoch milliseconds.
 */

/** Epoch milliseconds, as every stored record keeps times. */
export const Ms = Type.Integer({ minimum: 0 })
export const NullableMs = Type.Union([Ms, Type.Null()])

export const OrganizationRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  name: Type.String(),
  createdAt: Ms,
  /** `anonymous`: the hidden organization that holds one anonymous credential's sites until a claim. */
  kind: Type.Optional(Type.Literal('anonymous')),
})
export type OrganizationRecord = Static<typeof OrganizationRecord>

export const ApiKeyRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  orgId: Type.String(),
  seq: Type.Integer(),
  name: Type.Union([Type.String(), Type.Null()]),
  secretHash: Type.String(),
  secretHint: Type.String(),
  access: Access,
  createdAt: Ms,
  updatedAt: Ms,
  expiresAt: NullableMs,
  revokedAt: NullableMs,
  rotatedAt: NullableMs,
})
export type ApiKeyRecord = Static<typeof ApiKeyRecord>

export const WebsiteRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  orgId: Type.String(),
  seq: Type.Integer(),
  name: Type.String(),
  kind: WebsiteKindSchema,
  slug: Type.String(),
  subdomain: Type.String(),
  description: Type.Union([Type.String(), Type.Null()]),
  headVersion: Type.Integer({ minimum: 1 }),
  publishedVersion: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]),
  createdAt: Ms,
  updatedAt: Ms,
  deletedAt: NullableMs,
  suspendedAt: NullableMs,
  suspendedReason: Type.Union([Type.String(), Type.Null()]),
  /** Published anonymously: the end of its 24-hour preview (kept after a claim, for a held site). */
  previewUntil: Type.Optional(NullableMs),
  /** Claimed onto a plan without room (billing on): takes no slot, offline after its preview, read-only then. */
  held: Type.Optional(Type.Boolean()),
  /** Serving nothing, though not deleted nor taken down: an anonymous preview that ended, or a held claim. */
  offline: Type.Optional(Type.Union([Type.Literal('preview_ended'), Type.Literal('claim_held'), Type.Null()])),
})
export type WebsiteRecord = Static<typeof WebsiteRecord>

export const AuditRecord = Type.Object({
  v: Type.Literal(1),
  id: Type.String(),
  orgId: Type.String(),
  seq: Type.Integer(),
  at: Ms,
  eventType: StringEnum(AUDIT_EVENT_TYPES),
  resourceType: StringEnum(AUDIT_RESOURCE_TYPES),
  resourceId: Type.String(),
  websiteId: Type.Union([Type.String(), Type.Null()]),
  actor: AuditActor,
  metadata: Type.Record(Type.String(), Type.Unknown()),
})
export type AuditRecord = Static<typeof AuditRecord>

/** One file of a version: its content hash (sha256, hex), size in bytes and Content-Type. */
export const ManifestEntry = Type.Object({ hash: Type.String(), size: Type.Integer({ minimum: 0 }), contentType: Type.String() })
export type ManifestEntry = Static<typeof ManifestEntry>

/** Pages a static site serves beside its deployed files, generated from its CMS (the managed blog). */
export const GeneratedPagesRecord = Type.Object({
  v: Type.Literal(1),
  /** Identifies this exact content: new pages, a new key (the snapshot swaps). */
  key: Type.String(),
  files: Type.Record(Type.String(), ManifestEntry),
})
export type GeneratedPagesRecord = Static<typeof GeneratedPagesRecord>

/** An append-only version of a website's source: never rewritten once committed. */
export const VersionRecord = Type.Object({
  v: Type.Literal(1),
  websiteId: Type.String(),
  version: Type.Integer({ minimum: 1 }),
  /** path to file */
  files: Type.Record(Type.String(), ManifestEntry),
  /** sha256 of the manifest: equal digests mean equal content. */
  digest: Type.String(),
  fileCount: Type.Integer({ minimum: 0 }),
  totalBytes: Type.Integer({ minimum: 0 }),
  source: StringEnum(['create', 'deploy', 'delete', 'restore', 'rollback', 'write'] as const),
  message: Type.Union([Type.String(), Type.Null()]),
  createdAt: Ms,
  createdBy: Type.Union([AuditActor, Type.Null()]),
})
export type VersionRecord = Static<typeof VersionRecord>

/**
 * A website being purged: written in the transaction that removes its record, removed once its
 * shared files, CMS content and assets are gone too. Start-up finishes every purge a crash left, so a
 * website is either whole or, after the restart, entirely gone.
 */
export const PurgeRecord = Type.Object({
  v: Type.Literal(1),
  websiteId: Type.String(),
  orgId: Type.String(),
  at: Ms,
})
export type PurgeRecord = Static<typeof PurgeRecord>

/** A website's edit lease: one at a time; the token is kept only as a hash. */
export const LeaseRecord = Type.Object({
  v: Type.Literal(1),
  websiteId: Type.String(),
  tokenHash: Type.String(),
  acquiredAt: Ms,
  acquiredBy: AuditActor,
})
export type LeaseRecord = Static<typeof LeaseRecord>

/** website_config's redirects and extra headers, checked by the gate. */
/** A form's configuration from website_config.forms: where to send the person after, a webhook, the fields kept. */
export const FormConfig = Type.Object({
  redirect: Type.Optional(Type.String()),
  webhook: Type.Optional(Type.String()),
  fields: Type.Optional(Type.Array(Type.String())),
})
export type FormConfig = Static<typeof FormConfig>

export const SiteRouting = Type.Object({
  redirects: Type.Array(Type.Object({ from: Type.String(), to: Type.String(), status: Type.Integer() })),
  headers: Type.Record(Type.String(), Type.String()),
  /** website_config.forms (framework sites); absent on builds from before forms were read. */
  forms: Type.Optional(Type.Record(Type.String(), FormConfig)),
  /** website_config.analytics.enabled: documents carry the tracker script. */
  analytics: Type.Optional(Type.Boolean()),
})
export type SiteRouting = Static<typeof SiteRouting>

/** The outcome of building one version of a framework website. */
export const BuildRecord = Type.Object({
  v: Type.Literal(1),
  websiteId: Type.String(),
  version: Type.Integer({ minimum: 1 }),
  status: StringEnum(['ready', 'failed'] as const),
  /** The quality gate's result. */
  result: GateResultSchema,
  /** Output path to built file (HTML documents). */
  files: Type.Record(Type.String(), ManifestEntry),
  /** website_config redirects and extra headers, applied on both hosts. */
  routing: Type.Optional(SiteRouting),
  finishedAt: Ms,
  /** The last re-render after a CMS change, when it failed: this build was kept and still serves. */
  rerenderFailure: Type.Optional(Type.Object({ at: Ms, message: Type.String() })),
})
export type BuildRecord = Static<typeof BuildRecord>

/** The instance created on the first start of an empty data directory. */
export const InstallationRecord = Type.Object({
  v: Type.Literal(1),
  orgId: Type.String(),
  ownerId: Type.String(),
  createdAt: Ms,
  /** A cluster's API origin (PLINTH_API_ORIGIN), recorded by the first node that led it: every node must give the same. */
  apiOrigin: Type.Optional(Type.String()),
  /** The schema migrations that ran for it (actors/migrations.ts; a new installation lists every one of its build). */
  migrations: Type.Optional(Type.Array(Type.String())),
})
export type InstallationRecord = Static<typeof InstallationRecord>
