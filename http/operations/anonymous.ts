import { Type } from '@sinclair/typebox'
import type { AnonymousFiles, AnonymousSite, ClaimOutcome } from '../../actors/anonymous/credentials.js'
import { fileTooLarge } from '../../actors/website/commits.js'
import { decodeContent } from '../../actors/website/static-files.js'
import { auditActor } from '../../actors/audit.js'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import {
  ANON_BODY_MAX_BYTES,
  ANON_FILE_MAX_BYTES,
  ANON_FILES_MAX,
  ANON_BUDGET_BYTES,
  ANON_TREE_MAX_BYTES,
  WEBSITE_NAME_MAX_CHARS,
} from '../../core/limits.js'
import { personOf } from '../../core/principal.js'
import type { PersonRecord } from '../../core/schemas/identity.js'
import { StringEnum, Timestamp } from '../../core/schemas/common.js'
import { FileIdSchema } from '../../core/schemas/code.js'
import { Diagnostic } from '../../core/schemas/source.js'
import { Website } from '../../core/schemas/website.js'
import { checkFileId, fileLabel } from '../../core/typed-files.js'
import { isLive, isSharing } from '../../core/website-state.js'
import { check } from '../pipeline.js'
import { Begin, ChunkResult, objectView, receiveChunk, ResumeResult, StorageObject, UPLOAD_BODY, Upload, uploadView } from './storage.js'
import { folderOf } from '../../actors/storage.js'
import { randomToken } from '../../core/ids.js'
import { defineAnonymousOperation, defineOperation, WebsitePathParams, type AnonymousContext, type OperationContext } from '../operation.js'
import { deploymentStatus, websiteResource } from '../resources.js'

const tag = 'Anonymous'

const StaticFile = Type.Object(
  {
    path: Type.String({ minLength: 1, maxLength: 1024, description: 'Site path; a leading / is fine (/index.html)' }),
    content: Type.String(),
    encoding: Type.Optional(StringEnum(['utf8', 'base64'] as const)),
    contentType: Type.Optional(Type.String({ maxLength: 200 })),
  },
  { additionalProperties: false },
)
const FrameworkFile = Type.Object({ file: FileIdSchema, content: Type.String() }, { additionalProperties: false })
const Files = Type.Array(Type.Unknown(), {
  description: `Static: {path, content, encoding?, contentType?}; framework: {file: {type, name?}, content}; at most ${ANON_FILES_MAX} files, 1 MiB each, 5 MiB in all`,
})

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
const SiteParams = Type.Object(
  { id: Type.String({ description: 'The site id, `current` (the website) or `storage`' }) },
  { additionalProperties: false },
)
const AnonymousUploadParams = Type.Object(
  {
    id: Type.String({ description: 'The storage site id, or `storage`' }),
    objectId: Type.String({ description: 'An upload id (`upl_…`) or a shared file id (`obj_…`)' }),
  },
  { additionalProperties: false },
)

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

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
  claimPage: Type.String({ description: 'Append #token=<the wa_ token> (never a query string) and give it to the person' }),
  next: Type.Object({ message: Type.String(), actions: Type.Array(StringEnum(['update', 'replace', 'claim'] as const)) }),
  live: Nullable(Type.String({ description: 'One line: where it is live and until when; null when offline' })),
  storage: Type.Optional(
    Type.Object({
      usedBytes: Type.Integer({
        description: "Bytes of the credential's budget spent (website uploads and finished files; deletes do not refund)",
      }),
      limitBytes: Type.Integer({ description: 'The budget: 500 MiB' }),
      sharedBytes: Type.Integer({ description: 'Bytes of the files live on the storage site now' }),
    }),
  ),
})

const ClaimResult = Type.Object({
  website: Nullable(Type.Intersect([Website, Type.Object({ claimHeld: Type.Boolean() })])),
  storage: Type.Optional(Website),
  workspace: Type.Object({ id: Type.String(), name: Type.String() }),
  dashboardUrl: Type.String(),
  billingUrl: Type.Optional(Type.String({ description: 'Present when the website is held: where to upgrade' })),
  alreadyClaimed: Type.Boolean(),
  message: Type.String(),
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
    claimPage: ctx.urls.app('/claim'),
    next,
    live: published === null ? null : `Live at ${published} until ${iso(until)} unless claimed`,
    // The credential's budget covers website uploads and finished files together.
    ...(storage
      ? {
          storage: {
            usedBytes: site.credential.bytesUsed,
            limitBytes: ANON_BUDGET_BYTES,
            sharedBytes: ctx.registry.files.usage(record.id),
          },
        }
      : {}),
  }
}

/** The files of a create or update, checked against the kind and the anonymous limits; with their decoded size. */
function readFiles(kind: 'static' | 'framework' | 'storage', files: unknown[] | undefined): { files: AnonymousFiles; bytes: number } {
  if (kind === 'storage') {
    if (files !== undefined && files.length > 0)
      throw new ApiError('validation', 'A storage site is created without files (shared-file uploads are not offered on this server yet)', {
        field: 'body.files',
      })
    return { files: { kind: 'storage' }, bytes: 0 }
  }
  if (files === undefined || files.length === 0)
    throw new ApiError(
      'validation',
      `A ${kind} site needs files: at least one (an index.html for a static site, a page for a framework site)`,
      { field: 'body.files' },
    )
  if (files.length > ANON_FILES_MAX)
    throw new ApiError(
      'payload_too_large',
      `An anonymous site holds at most ${ANON_FILES_MAX} files; this request sends ${files.length}. Sign in for larger sites`,
      { limit: 'files per anonymous site', limitFiles: ANON_FILES_MAX },
    )
  let bytes = 0
  const add = (size: number, name: string) => {
    if (size > ANON_FILE_MAX_BYTES) throw fileTooLarge(name, size)
    bytes += size
    if (bytes > ANON_TREE_MAX_BYTES)
      throw new ApiError(
        'payload_too_large',
        `The files add up to more than ${ANON_TREE_MAX_BYTES} bytes (5 MiB), the anonymous per-site limit`,
        { limit: 'anonymous site size', limitBytes: ANON_TREE_MAX_BYTES },
      )
  }
  if (kind === 'static') {
    const raw = files.map((entry, i) => {
      const file = check(StaticFile, entry, `body.files[${i}]`) as {
        path: string
        content: string
        encoding?: 'utf8' | 'base64'
        contentType?: string
      }
      const data = decodeContent(file.content, file.encoding, `body.files[${i}].content`)
      add(data.length, JSON.stringify(file.path))
      // Clients send `/index.html`; the site's paths are relative to its root.
      return {
        path: file.path.replace(/^\/+/, ''),
        bytes: data,
        ...(file.contentType === undefined ? {} : { contentType: file.contentType }),
      }
    })
    return { files: { kind: 'static', files: raw }, bytes }
  }
  const typed = files.map((entry, i) => {
    const file = check(FrameworkFile, entry, `body.files[${i}]`) as { file: { type: string; name?: string }; content: string }
    const id = checkFileId(file.file, `body.files[${i}].file`)
    add(Buffer.byteLength(file.content), fileLabel(id))
    return { file: id, content: file.content }
  })
  const seen = new Set<string>()
  for (const [i, { file }] of typed.entries()) {
    const label = fileLabel(file)
    if (seen.has(label)) throw new ApiError('validation', `body.files[${i}]: ${label} is given twice`, { field: `body.files[${i}].file` })
    seen.add(label)
  }
  return { files: { kind: 'framework', files: typed }, bytes }
}

/** The claim answer: where the website went, whether it is held, and what the person does next. */
function claimView(urls: OperationContext['urls'], registry: OperationContext['registry'], outcome: ClaimOutcome) {
  const resource = (record: { id: string } | null) => {
    const actor = record === null ? undefined : registry.website(record.id)
    return actor === undefined ? null : websiteResource(actor, urls, registry)
  }
  const website = resource(outcome.website)
  const storage = resource(outcome.storage)
  const dashboardUrl = urls.app('')
  const held = website?.claimHeld === true
  const where =
    website === null ? 'The shared files' : `“${website.name}”${website.urls.published === null ? '' : ` (${website.urls.published})`}`
  const message = outcome.alreadyClaimed
    ? `Already claimed by you into ${outcome.workspace.name}; nothing changed.`
    : held
      ? `${where} is now in ${outcome.workspace.name}. The plan has no room for it, so it is held: it stays online until its 24-hour preview ends, then goes offline until you upgrade (${urls.app('/billing')}) and activate it.`
      : `${where} is now in ${outcome.workspace.name}, at the same address, with no deadline. Manage it at ${dashboardUrl} or through the API.`
  return {
    website,
    ...(storage === null ? {} : { storage }),
    workspace: { id: outcome.workspace.id, name: outcome.workspace.name },
    dashboardUrl,
    ...(held ? { billingUrl: urls.app('/billing') } : {}),
    alreadyClaimed: outcome.alreadyClaimed,
    message,
  }
}

export const anonymousOperations = [
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
  defineAnonymousOperation({
    method: 'POST',
    path: '/public/v1/anonymous/sites/{id}/objects/uploads',
    operationId: 'anonymous.beginUploads',
    rateLimits: ['credentialEdits', 'networkEdits'],
    anonymous: 'token',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Announce files to share from the anonymous storage site',
    description:
      "The same body as the signed-in endpoint. Each call is its own folder (its link lists these files). PUT each file's bytes to its uploadUrl with Content-Range, then POST …/objects/finalize. Files stay live until the storage site's 24 hours end; the credential's 500 MiB budget counts them (413 anonymous_storage_limit).",
    params: SiteParams,
    body: Begin,
    status: 201,
    response: Type.Object({ uploads: Type.Array(Upload), folderUrl: Type.String(), next: Type.String() }),
    async handle(ctx, { params, body }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      ctx.limit('credentialEdits')
      ctx.limit('networkEdits')
      const site = ctx.registry.anonymous.storageSite(credential, params.id)
      // Each upload its own folder: an unguessable name, with the caller's folder under it.
      const folder = [randomToken(10), folderOf(body.folder, 'body.folder')].filter((f) => f !== '').join('/')
      const uploads = await ctx.registry.anonymous.beginUploads(credential.id, site.id, body.files, folder)
      const base = (id: string) => ctx.urls.api(`/public/v1/anonymous/sites/${site.id}/objects/${id}`)
      return {
        uploads: uploads.map((u) => uploadView(ctx, u, base(u.id))),
        folderUrl: `${ctx.urls.published(site.subdomain)}/${folder.split('/').map(encodeURIComponent).join('/')}/`,
        next:
          "PUT each file's bytes to its uploadUrl with Authorization: Bearer <token> and Content-Range: bytes 0-<size-1>/<size>, then POST /public/v1/anonymous/sites/" +
          site.id +
          '/objects/finalize {uploadIds}',
      }
    },
  }),
  defineAnonymousOperation({
    method: 'PUT',
    path: '/public/v1/anonymous/sites/{id}/objects/{objectId}/upload',
    operationId: 'anonymous.uploadBytes',
    anonymous: 'token',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Send the bytes of an anonymous upload (resumable)',
    description: 'As the signed-in endpoint: Content-Range: bytes <start>-<end>/<size> from the offset stored; streamed to disk.',
    params: AnonymousUploadParams,
    streamsBody: UPLOAD_BODY,
    response: ChunkResult,
    async handle(ctx, { params, stream }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      const site = ctx.registry.anonymous.storageSite(credential, params.id)
      return receiveChunk(ctx.registry.files, site.id, params.objectId, stream!)
    },
  }),
  defineAnonymousOperation({
    method: 'POST',
    path: '/public/v1/anonymous/sites/{id}/objects/{objectId}/resume',
    operationId: 'anonymous.resumeUpload',
    anonymous: 'token',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'The offset an interrupted anonymous upload continues from',
    description: 'Every byte stored so far counts: send the rest from offset.',
    params: AnonymousUploadParams,
    response: ResumeResult,
    async handle(ctx, { params }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      const site = ctx.registry.anonymous.storageSite(credential, params.id)
      const { upload, offset } = await ctx.registry.files.resume(site.id, params.objectId)
      return {
        uploadId: upload.id,
        offset,
        size: upload.size,
        uploadUrl: ctx.urls.api(`/public/v1/anonymous/sites/${site.id}/objects/${upload.id}/upload`),
      }
    },
  }),
  defineAnonymousOperation({
    method: 'POST',
    path: '/public/v1/anonymous/sites/{id}/objects/finalize',
    operationId: 'anonymous.finalize',
    anonymous: 'token',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Make complete anonymous uploads shared files',
    description:
      "The same body as the signed-in endpoint: the files go live until the storage site's 24 hours end, and their bytes are charged to the credential's budget.",
    params: SiteParams,
    body: Type.Object(
      { uploadIds: Type.Array(Type.String({ minLength: 1, maxLength: 40 }), { minItems: 1, maxItems: 100 }) },
      { additionalProperties: false },
    ),
    response: Type.Object({ objects: Type.Array(StorageObject) }),
    async handle(ctx, { params, body }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      const site = ctx.registry.anonymous.storageSite(credential, params.id)
      const objects = await ctx.registry.anonymous.finalizeUploads(credential.id, site.id, body.uploadIds)
      return { objects: objects.map((o) => objectView(ctx, site.subdomain, o)) }
    },
  }),
  defineAnonymousOperation({
    method: 'DELETE',
    path: '/public/v1/anonymous/sites/{id}/objects/{objectId}',
    operationId: 'anonymous.deleteFile',
    anonymous: 'token',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Delete an anonymous shared file, or cancel an unfinished upload',
    description:
      'A file id: its link stops working at once. An upload id (upl_…, from objects/uploads): cancels that upload, failed or unfinished, and drops the bytes it received, freeing room in the in-progress allowance. Deleting does not refund the byte budget.',
    params: AnonymousUploadParams,
    response: Type.Object({
      deleted: Type.Boolean(),
      kind: StringEnum(['file', 'upload'] as const, { description: 'file: a shared file was deleted; upload: an upload was cancelled' }),
    }),
    async handle(ctx, { params }) {
      const credential = ctx.registry.anonymous.usable(ctx.credential!)
      const site = ctx.registry.anonymous.storageSite(credential, params.id)
      if (params.objectId.startsWith('upl_')) {
        // Spec: "DELETE /public/v1/anonymous/sites/{id}/objects/{objectId} … cancels a failed upload".
        ctx.registry.files.upload(site.id, params.objectId)
        await ctx.registry.files.abort(site.orgId, params.objectId)
        return { deleted: true, kind: 'upload' as const }
      }
      await ctx.registry.files.delete(site, params.objectId)
      return { deleted: true, kind: 'file' as const }
    },
  }),
  defineAnonymousOperation({
    method: 'POST',
    path: '/api/anonymous/claim',
    operationId: 'anonymous.claim',
    rateLimits: ['networkClaims'],
    anonymous: 'claim',
    public: true,
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Claim an anonymous site',
    description:
      'Moves the sites of an anonymous token into a person’s personal workspace, at the same address. Authorized by a dashboard session (trusted Origin), an OAuth token, or {token, code} with a claim code from create_claim_code. The same person retrying gets alreadyClaimed: true.',
    body: Type.Object(
      { token: Type.String({ minLength: 1, maxLength: 200 }), code: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })) },
      { additionalProperties: false },
    ),
    response: ClaimResult,
    async handle(ctx, { body }) {
      ctx.limit('networkClaims')
      let person: PersonRecord
      let actor
      if (ctx.person !== null) {
        person = ctx.person.record
        actor = ctx.person.actor
      } else if (body.code !== undefined) {
        person = ctx.registry.anonymous.claimCodePerson(body.code)
        actor = { kind: 'user' as const, id: person.id, name: person.name }
      } else {
        throw new ApiError(
          'unauthorized',
          'A claim needs a person: sign in at the dashboard (the claim page does this), connect over OAuth, or send {token, code} with a claim code from the create_claim_code MCP tool',
        )
      }
      const outcome = await ctx.registry.anonymous.claim(body.token, person, actor)
      return claimView(ctx.urls, ctx.registry, outcome)
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/claim-codes',
    operationId: 'websites.claimCode',
    capability: 'websites.read',
    personOnly: true,
    rateClass: 'standard',
    tool: 'create_claim_code',
    tag: 'Websites',
    summary: 'Create a claim code',
    description:
      'Use when a site was published anonymously (a wa_ token saved on the machine) and the person wants it in their account: answers a wc_ code valid 10 minutes. Give it to the local helper (webly claim <code>), which sends POST /api/anonymous/claim {token, code}; the token never has to leave the machine. If you hold the token yourself, call claim_website instead.',
    response: Type.Object({ code: Type.String(), expiresAt: Timestamp }),
    status: 201,
    async handle(ctx) {
      const { code, expiresAt } = await ctx.registry.anonymous.createClaimCode(personOf(ctx.principal)!)
      return { code, expiresAt: iso(expiresAt) }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/claims',
    operationId: 'websites.claimAnonymous',
    capability: 'websites.read',
    personOnly: true,
    rateClass: 'standard',
    tool: 'claim_website',
    // A spent token is gone for good (410); the shared files need room in the workspace's storage (402 storage_limit).
    extraErrors: ['gone', 'payment_required'],
    tag: 'Websites',
    summary: 'Claim an anonymous site with its token',
    description:
      'Use when you hold the wa_ token of a site published without an account and the person wants to keep it: moves it into their personal workspace at the same address (held, with a billingUrl, when their plan has no room). The token stops working.',
    body: Type.Object({ token: Type.String({ minLength: 1, maxLength: 200 }) }, { additionalProperties: false }),
    response: ClaimResult,
    async handle(ctx, { body }) {
      const person = ctx.registry.people.person(personOf(ctx.principal)!)
      if (person === undefined) throw new ApiError('unauthorized', 'The person of this credential no longer exists')
      const outcome = await ctx.registry.anonymous.claim(body.token, person, auditActor(ctx.principal))
      return claimView(ctx.urls, ctx.registry, outcome)
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/activate',
    operationId: 'websites.activate',
    capability: 'websites.manage',
    rateClass: 'expensive',
    tool: 'activate_website',
    tag: 'Websites',
    summary: 'Activate a held website',
    description:
      'A claimed anonymous site on a plan without room is held (claimHeld: true). After upgrading to Base or Max, this makes it an ordinary active site at the same address; 402 claim_held while there is no slot.',
    params: WebsitePathParams,
    response: Website,
    mayNeedPlanRoom: true,
    async handle(ctx) {
      const website = ctx.website!
      const record = website.record
      if (record.held !== true) return websiteResource(website, ctx.urls, ctx.registry)
      const { plans } = ctx.registry
      // Inside the transaction: two activations (or a claim) cannot both take the last slot.
      const guard = (current: { orgId: string; kind: string }) => {
        if (!plans.billing.enabled || (plans.record(current.orgId).plan !== 'free' && plans.hasRoom(current.orgId, current.kind))) return
        const view = plans.view(current.orgId)
        throw new ApiError(
          'payment_required',
          `Activating needs a free website slot on the Base or Max plan; this organization is on ${view.plan} with ${view.usage.websites} of ${view.limits.websites} in use. Upgrade at ${ctx.urls.app('/billing')}, then activate again`,
          {
            reason: 'claim_held',
            upgradeUrl: ctx.urls.app('/billing'),
          },
        )
      }
      await website.setAvailability(
        auditActor(ctx.principal),
        { held: false, offline: null, previewUntil: null },
        { eventType: 'website.activated' },
        guard,
      )
      return websiteResource(website, ctx.urls, ctx.registry)
    },
  }),
]
