// Anonymous credentials and sites: issuing a credential, and creating, reading and updating its website or storage site.
import { Type } from '@sinclair/typebox'
import type { AnonymousSite } from '../../actors/anonymous/credentials.js'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import { ANON_BODY_MAX_BYTES, ANON_BUDGET_BYTES, WEBSITE_NAME_MAX_CHARS } from '../../core/limits.js'
import { StringEnum, Timestamp } from '../../core/schemas/common.js'
import { Diagnostic } from '../../core/schemas/source.js'
import { isLive, isSharing } from '../../core/website-state.js'
import { defineAnonymousOperation, type AnonymousContext } from '../operation.js'
import { deploymentStatus } from '../resources.js'
import { Files, readFiles } from './anonymous-files.js'

const tag = 'Anonymous'

const CreateBody = Type.Object(
  {
    name: Type.String({
      minLength: 1,
      maxLength: WEBSITE_NAME_MAX_CHARS,
      description: 'Shown on the claim page and in the dashboard; the address is generated',
    }),
    kind: StringEnum(['static', 'framework', 'storage'] as const),
    files: Type.Optional(Files),
    replace: Type.Optional(
      Type.Boolean({
        description: 'Swap the current website for this new one (first 24 hours only); the old one is purged once the new one is live',
      }),
    ),
  },
  { additionalProperties: false },
)
const UpdateBody = Type.Object(
  {
    expectedHeadVersion: Type.Integer({ minimum: 1, description: 'headVersion from the last status; a stale one is 409' }),
    files: Files,
    name: Type.Optional(
      Type.String({ maxLength: WEBSITE_NAME_MAX_CHARS, description: 'Accepted and ignored: only creation names a site' }),
    ),
  },
  { additionalProperties: false },
)
/** A site of the credential in the path: its id, `current` or `storage`. */
export const SiteParams = Type.Object(
  { id: Type.String({ description: 'The site id, `current` (the website) or `storage`' }) },
  { additionalProperties: false },
)

/** The schema, or null. */
export const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

const AnonymousSiteView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  kind: StringEnum(['static', 'framework', 'storage'] as const),
  status: StringEnum(['building', 'live', 'failed', 'offline', 'claimed', 'suspended'] as const),
  headVersion: Type.Integer(),
  publishedVersion: Nullable(Type.Integer()),
  deployment: Type.Object({
    status: StringEnum(['building', 'ready', 'failed'] as const),
    canPublish: Type.Boolean(),
    diagnostics: Type.Array(Diagnostic),
  }),
  urls: Type.Object({ published: Nullable(Type.String()) }),
  deadlines: Type.Object({
    editUntil: Timestamp,
    liveUntil: Timestamp,
    claimUntil: Timestamp,
  }),
  liveUntil: Type.String({ format: 'date-time', description: 'deadlines.liveUntil, also at the top level (where agents read it)' }),
  claimUntil: Type.String({ format: 'date-time', description: 'deadlines.claimUntil, also at the top level (where agents read it)' }),
  claimPage: Type.String({ description: 'Append #token=<the wa_ token> (never a query string) and give it to the person' }),
  next: Type.Object({ message: Type.String(), actions: Type.Array(StringEnum(['update', 'replace', 'claim'] as const)) }),
  live: Nullable(Type.String({ description: 'One line: where it is live and until when; null when offline' })),
  storage: Type.Object(
    {
      usedBytes: Type.Integer({
        description: "Bytes of the credential's budget spent (website uploads and finished files; deletes do not refund)",
      }),
      limitBytes: Type.Integer({ description: 'The budget: 500 MiB, the website and shared files together' }),
      sharedBytes: Type.Integer({ description: 'Bytes of the files live on the storage site now' }),
    },
    { description: "The credential's byte budget, on every site it has" },
  ),
})

/** The API view of one of a credential's sites: state, deadlines, and exactly what to do next. */
function siteView(ctx: AnonymousContext, site: AnonymousSite) {
  const { credential, website } = site
  const record = website.record
  const now = ctx.clock.now()
  const storage = record.kind === 'storage'
  const until = (storage ? credential.storageUntil : credential.websiteUntil) ?? now
  const claimUntil = credential.claimUntil ?? until
  const deployment = storage ? { status: 'ready' as const, canPublish: false, diagnostics: [] } : deploymentStatus(website, website.head)
  const published = isLive(record) || isSharing(record) ? ctx.urls.published(record.subdomain) : null
  const status =
    record.suspendedAt !== null
      ? ('suspended' as const)
      : record.offline != null || now >= until
        ? ('offline' as const)
        : // An anonymous site's head goes live by itself: built but not published yet is still on its way.
          deployment.status === 'building' || (!storage && deployment.status === 'ready' && record.publishedVersion !== record.headVersion)
          ? ('building' as const)
          : deployment.status === 'failed'
            ? ('failed' as const)
            : ('live' as const)
  const path = `/public/v1/anonymous/sites/${record.id}`
  const claim = `To keep it, have a person claim it before ${iso(claimUntil)}: open ${ctx.urls.app('/claim')}#token=<your token>, or with a claim code from the create_claim_code MCP tool, POST /api/anonymous/claim {token, code}`
  const next = {
    suspended: {
      message: `This site was taken down by the operator (${record.suspendedReason ?? 'no reason given'}); it cannot be published.`,
      actions: [],
    },
    offline: {
      message: `The 24-hour preview ended at ${iso(until)}: the site is offline and edits are closed. ${claim}; everything is deleted after that.`,
      actions: ['claim'],
    },
    building: {
      message: `Version ${record.headVersion} is building; poll GET ${path} about once a second until status is live or failed. It goes live by itself.`,
      actions: ['update', 'replace', 'claim'],
    },
    failed: {
      message: `Version ${record.headVersion} did not pass the quality gate${record.publishedVersion === null ? '' : ` (version ${record.publishedVersion} stays live)`}: fix deployment.diagnostics, then PUT ${path} with the whole tree and expectedHeadVersion ${record.headVersion}. ${claim}.`,
      actions: ['update', 'replace', 'claim'],
    },
    live: storage
      ? { message: `Storage site ready until ${iso(until)}. ${claim}.`, actions: ['claim'] }
      : {
          message: `Live at ${published ?? '(not yet)'} until ${iso(until)}. Update it with PUT ${path} (the whole tree, expectedHeadVersion ${record.headVersion}), or swap it with POST /public/v1/anonymous/sites and replace: true. ${claim}.`,
          actions: ['update', 'replace', 'claim'],
        },
  }[status] as { message: string; actions: ('update' | 'replace' | 'claim')[] }
  return {
    id: record.id,
    name: record.name,
    kind: record.kind,
    status,
    headVersion: record.headVersion,
    publishedVersion: record.publishedVersion,
    deployment: { status: deployment.status, canPublish: deployment.canPublish, diagnostics: deployment.diagnostics },
    urls: { published },
    deadlines: { editUntil: iso(until), liveUntil: iso(until), claimUntil: iso(claimUntil) },
    liveUntil: iso(until),
    claimUntil: iso(claimUntil),
    claimPage: ctx.urls.app('/claim'),
    next,
    live: published === null ? null : `Live at ${published} until ${iso(until)} unless claimed`,
    // The credential's budget covers website uploads and finished files together.
    storage: {
      usedBytes: site.credential.bytesUsed,
      limitBytes: ANON_BUDGET_BYTES,
      sharedBytes: credential.storageId === null ? 0 : ctx.registry.files.usage(credential.storageId),
    },
  }
}

/** The credential and site operations, in the order of the operation table. */
export const anonymousSiteOperations = [
  defineAnonymousOperation({
    method: 'POST',
    path: '/public/v1/anonymous/credentials',
    operationId: 'anonymous.createCredential',
    rateLimits: ['networkCredentials'],
    anonymous: 'none',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Issue an anonymous credential',
    description:
      'No account needed: answers a wa_ token (shown once; store it privately, never in a URL) and the claim page. The token publishes one website and one storage site under /public/v1/anonymous/sites. In invite-only mode send X-Invite-Code.',
    response: Type.Object({ token: Type.String({ description: 'wa_ and 43 base64url characters' }), claimPage: Type.String() }),
    status: 201,
    async handle(ctx) {
      // The bucket first: a 429 spends no use of an invite code.
      ctx.limit('networkCredentials')
      if (ctx.config.anonymous === 'invite_only' && (ctx.inviteCode === '' || !(await ctx.registry.anonymous.useInvite(ctx.inviteCode)))) {
        throw new ApiError(
          'unavailable',
          `Anonymous publishing on this server is invite-only: ${ctx.inviteCode === '' ? 'send the X-Invite-Code header with a code from the operator' : 'this invite code is unknown, used up or expired'}, or sign in to publish`,
          { reason: 'invite_only' },
        )
      }
      const { token } = await ctx.registry.anonymous.issue(ctx.network)
      return { token, claimPage: ctx.urls.app('/claim') }
    },
  }),
  defineAnonymousOperation({
    method: 'POST',
    path: '/public/v1/anonymous/sites',
    operationId: 'anonymous.createSite',
    rateLimits: ['credentialCreates', 'networkCreates'],
    anonymous: 'token',
    public: true,
    rateClass: 'expensive',
    tool: null,
    tag,
    summary: 'Publish a site anonymously',
    description:
      'Creates the credential’s website (static or framework) or storage site; it goes live by itself at a generated address (a framework build answers 202: poll the status). A second create is 409 site_already_created unless replace: true (first 24 hours).',
    body: CreateBody,
    response: AnonymousSiteView,
    bodyLimitBytes: ANON_BODY_MAX_BYTES,
    status: { values: [201, 202], of: (out) => (out.status === 'building' ? 202 : 201) },
    async handle(ctx, { body }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      const { files, bytes } = readFiles(body.kind, body.files)
      // Buckets are taken once the create passed its checks: a refused create (409, 410) costs none.
      const charge = () => {
        ctx.limit('credentialCreates')
        ctx.limit('networkCreates')
      }
      const site = await ctx.registry.anonymous.create(credential.id, {
        name: body.name.trim() || 'Website',
        files,
        replace: body.replace === true,
        bytes,
        network: credential.network,
        charge,
      })
      return siteView(ctx, site)
    },
  }),
  defineAnonymousOperation({
    method: 'GET',
    path: '/public/v1/anonymous/sites/{id}',
    operationId: 'anonymous.getSite',
    anonymous: 'token',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Status of an anonymous site',
    description:
      '`current` finds the website (recovers a lost create answer), `storage` the storage site: versions, build, URLs, deadlines and the next step.',
    params: SiteParams,
    response: AnonymousSiteView,
    handle(ctx, { params }) {
      const site = ctx.registry.anonymous.site(ctx.credential!, params.id)
      ctx.registry.anonymous.catchUp(site)
      return siteView(ctx, site)
    },
  }),
  defineAnonymousOperation({
    method: 'PUT',
    path: '/public/v1/anonymous/sites/{id}',
    operationId: 'anonymous.updateSite',
    rateLimits: ['credentialEdits', 'networkEdits'],
    anonymous: 'token',
    public: true,
    rateClass: 'expensive',
    tool: null,
    tag,
    summary: 'Replace an anonymous site’s files',
    description:
      'Replaces the whole tree (files left out are removed) as a new version that goes live by itself; expectedHeadVersion guards against a stale copy (409). Closed after the 24-hour window (410 edit_window_closed).',
    params: SiteParams,
    body: UpdateBody,
    response: AnonymousSiteView,
    bodyLimitBytes: ANON_BODY_MAX_BYTES,
    status: { values: [200, 202], of: (out) => (out.status === 'building' ? 202 : 200) },
    async handle(ctx, { params, body }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      const { website } = ctx.registry.anonymous.site(credential, params.id)
      const { files, bytes } = readFiles(website.record.kind, body.files)
      ctx.limit('credentialEdits')
      ctx.limit('networkEdits')
      const site = await ctx.registry.anonymous.update(credential.id, params.id, {
        files,
        expectedHeadVersion: body.expectedHeadVersion,
        bytes,
      })
      return siteView(ctx, site)
    },
  }),
]
