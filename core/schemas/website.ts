import { Type, type Static } from '@sinclair/typebox'
import { SLUG_MAX_CHARS, SUBDOMAIN_LABEL_MAX_CHARS, WEBSITE_DESCRIPTION_MAX_CHARS, WEBSITE_NAME_MAX_CHARS } from '../limits.js'
import { NullableTimestamp, StringEnum, Timestamp, WebsiteId, named } from './common.js'

export const WEBSITE_KINDS = ['framework', 'static', 'storage'] as const
export type WebsiteKind = (typeof WEBSITE_KINDS)[number]

export const WebsiteKindSchema = StringEnum(WEBSITE_KINDS, {
  description: 'framework (default): typed source through the quality gate; static: raw files; storage: file sharing',
})

/** A subdomain label: 1-56 lowercase letters, digits and inner hyphens (spec: Website.subdomain). */
export const SUBDOMAIN_LABEL_PATTERN = `^(?=.{1,${SUBDOMAIN_LABEL_MAX_CHARS}}$)[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`
export const SubdomainLabel = Type.String({
  minLength: 1,
  maxLength: SUBDOMAIN_LABEL_MAX_CHARS,
  pattern: SUBDOMAIN_LABEL_PATTERN,
  description: 'Subdomain label: 1-56 lowercase letters, digits and inner hyphens',
})

export const Slug = Type.String({
  minLength: 1,
  maxLength: SLUG_MAX_CHARS,
  pattern: '^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$',
  description: 'URL-safe identifier: lowercase letters, digits and inner hyphens',
})

const Name = Type.String({ minLength: 1, maxLength: WEBSITE_NAME_MAX_CHARS, pattern: '\\S' })
const Description = Type.String({ maxLength: WEBSITE_DESCRIPTION_MAX_CHARS })

export const Website = named(
  'Website',
  Type.Object({
    id: WebsiteId,
    name: Type.String(),
    kind: WebsiteKindSchema,
    slug: Type.String(),
    subdomain: Type.String(),
    description: Type.Union([Type.String(), Type.Null()]),
    headVersion: Type.Integer({ minimum: 1 }),
    publishedVersion: Type.Union([Type.Integer({ minimum: 1 }), Type.Null()]),
    hasUnpublishedChanges: Type.Boolean(),
    urls: Type.Object({
      draft: Type.Union([Type.String(), Type.Null()], {
        description: 'Draft head preview (noindex, no-store); null for a storage website, which has no draft (its files are live at once)',
      }),
      published: Type.Union([Type.String(), Type.Null()], { description: 'Live site; null while unpublished' }),
      vanity: Type.Union([Type.String(), Type.Null()], {
        description:
          "The live site at its workspace's namespace ({label}.{namespace}.{site domain}); null while unpublished, or without a namespace",
      }),
      primary: Type.Union([Type.String(), Type.Null()], {
        description:
          'The address to share: a live primary custom domain, else the vanity address, else the published one; null while unpublished',
      }),
      all: Type.Array(Type.String(), {
        description: 'Every address the live site answers at (its own, the vanity one, each active custom domain)',
      }),
    }),
    suspendedAt: NullableTimestamp,
    suspendedReason: Type.Union([Type.String(), Type.Null()]),
    analytics: Type.Object({
      provider: Type.Union([Type.Literal('beacon'), Type.Literal('tracker')], {
        description: 'beacon: page views counted at the edge; tracker: the first-party script',
      }),
      tracking: Type.Boolean({
        description:
          'The tracker script is on: website_config.analytics.enabled on a framework site, or a static site that has sent events',
      }),
      trackerId: Type.String({ description: "The id a static site's tracker script names (data-website-id)" }),
      snippet: Type.String({ description: "What a static site adds to each page's head to turn the tracker on: same-origin, no cookies" }),
      dashboardUrl: Type.Union([Type.String(), Type.Null()], {
        description: 'A read-only shareable dashboard (POST /v1/websites/{id}/analytics/share); null while sharing is off',
      }),
    }),
    buildStatus: Type.Union([StringEnum(['building', 'ready', 'failed'] as const), Type.Null()], {
      description:
        'A framework site: the build of its head (building, ready or failed; deployments.status has the diagnostics); null for static and storage sites, or an empty head',
    }),
    claimHeld: Type.Boolean({
      description:
        'A claimed anonymous site on a plan without room: offline after its 24-hour preview and read-only until activated (POST /v1/websites/{id}/activate)',
    }),
    passwordProtected: Type.Boolean({ description: 'Every address of the site asks for a password (set_website_password)' }),
    deletedAt: NullableTimestamp,
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
)
export type WebsiteResource = Static<typeof Website>

export const CreateWebsiteBody = Type.Object(
  {
    name: Name,
    kind: Type.Optional(WebsiteKindSchema),
    slug: Type.Optional(Slug),
    subdomain: Type.Optional(SubdomainLabel),
    description: Type.Optional(Description),
  },
  { additionalProperties: false },
)
export type CreateWebsiteInput = Static<typeof CreateWebsiteBody>

export const UpdateWebsiteBody = Type.Object(
  {
    name: Type.Optional(Name),
    slug: Type.Optional(Slug),
    description: Type.Optional(Type.Union([Description, Type.Null()])),
  },
  { additionalProperties: false, minProperties: 1 },
)
export type UpdateWebsiteInput = Static<typeof UpdateWebsiteBody>

export const RenameSubdomainBody = Type.Object({ label: SubdomainLabel }, { additionalProperties: false })
