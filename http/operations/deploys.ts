// Ticket deploys: begin_deploy over MCP, then the folder straight from disk to POST /public/v1/deploys.
import { Type } from '@sinclair/typebox'
import { iso } from '../../core/clock.js'
import { ApiError } from '../../core/errors.js'
import {
  DEPLOY_LARGE_FILE_MAX_BYTES,
  DEPLOY_PART_BYTES,
  STATIC_FILE_MAX_BYTES,
  STATIC_FILES_MAX,
  TICKET_DEPLOY_MAX_BYTES,
} from '../../core/limits.js'
import { actorOf } from '../../core/principal.js'
import { FunctionRoute, FunctionWarning, Path, RuleWarning } from '../../core/schemas/source.js'
import { normalizeSitePaths } from '../../core/site-paths.js'
import type { VersionRecord } from '../../core/schemas/records.js'
import { prepareUploads } from '../../actors/website/static-files.js'
import { tooManyFiles } from '../../actors/website/commits.js'
import { TICKET_DEPLOY_PATH } from '../../actors/website/deploy-tickets.js'
import type { WebsiteActor } from '../../actors/website/actor.js'
import { deployPart, partsFingerprint } from '../../actors/files/large-files.js'
import { pipeInto } from './storage-chunks.js'
import { multipartParser } from '../body.js'
import { fileSink } from './assets.js'
import { defineOperation, WebsitePathParams } from '../operation.js'
import { functionsOf, siteUrls } from '../resources.js'

const tag = 'Source'

/** The path of a large file's PUTs: its website, and the name /uploads answered (`hash`: its SHA-256, or a file in parts' fingerprint). */
const LargeFileParams = {
  websiteId: Type.String({ description: 'Website id (`ws_…`)' }),
  objectId: Type.String({ pattern: '^[0-9a-f]{64}$', description: 'The `hash` /public/v1/deploys/uploads answered for the file' }),
}

const BeginDeployResult = Type.Object({
  ticket: Type.String({ description: 'wd_…: signed, readable claims (websiteId, headVersion); one deploy within 5 minutes' }),
  expiresAt: Type.String({ format: 'date-time' }),
  websiteId: Type.String(),
  headVersion: Type.Integer({ description: 'The head the ticket was issued at; the deploy is refused (409) if it moved' }),
  next: Type.Object({ message: Type.String() }),
})

const TicketDeployBody = Type.Object(
  {
    files: Type.Array(
      Type.Object(
        { path: Path, bytes: Type.Unsafe<Buffer>({}), contentType: Type.Optional(Type.String()) },
        { additionalProperties: false },
      ),
      { minItems: 1 },
    ),
    baseVersion: Type.Optional(Type.Integer({ minimum: 1 })),
    force: Type.Optional(Type.Boolean()),
    uploaded: Type.Optional(Type.String()),
    message: Type.Optional(Type.String({ maxLength: 1000 })),
  },
  { additionalProperties: false },
)

const TicketDeployDoc = Type.Object({
  files: Type.Array(Type.String({ format: 'binary' }), {
    description: 'One `files` part per file; its filename is the site path without the leading slash; no content type needed',
  }),
  baseVersion: Type.Optional(Type.Integer({ description: 'The head version this folder last deployed (the would_revert guard)' })),
  force: Type.Optional(Type.Boolean({ description: '`true`: deploy even when it undoes changes made since baseVersion' })),
  uploaded: Type.Optional(
    Type.String({ description: 'JSON [{path, size, sha256}] of the large files sent first through /public/v1/deploys/uploads' }),
  ),
  message: Type.Optional(
    Type.String({ maxLength: 1000, description: 'Describes the change in the version history (default: "Deployed with a ticket")' }),
  ),
})

const TicketDeployResult = Type.Object({
  version: Type.Integer({ description: 'The new draft version (the head when nothing changed)' }),
  changed: Type.Boolean(),
  headVersion: Type.Integer(),
  publishedVersion: Type.Union([Type.Integer(), Type.Null()]),
  urls: Type.Object({ draft: Type.Union([Type.String(), Type.Null()]), published: Type.Union([Type.String(), Type.Null()]) }),
  replaced: Type.Optional(
    Type.Object(
      { fromVersion: Type.Integer(), toVersion: Type.Integer() },
      {
        description:
          'The head this deploy replaced (it stays in the history): one made elsewhere since baseVersion, or, with force and no baseVersion, the head the ticket was issued for',
      },
    ),
  ),
  next: Type.Object({ message: Type.String() }),
  warnings: Type.Array(RuleWarning, { description: "Each bad line of the folder's _redirects and _headers; empty when none" }),
  functions: Type.Optional(
    Type.Array(FunctionRoute, { description: "The routes the folder's functions/ answer (compiled at deploy); absent when it has none" }),
  ),
  functionWarnings: Type.Optional(
    Type.Array(FunctionWarning, {
      description: "The functions' type errors (checked against Cloudflare's Workers types; the code runs anyway): absent when none",
    }),
  ),
})

const parseTicketDeploy = multipartParser({
  files: 'files',
  fields: { baseVersion: 'integer', force: 'boolean', uploaded: 'string', message: 'string' },
  limits: { fileBytes: STATIC_FILE_MAX_BYTES, files: STATIC_FILES_MAX },
  // The helper sends files over 1 MiB ahead (/uploads); a client that did not is told where they go.
  fileTooLarge: (filename) => inlineTooLarge(filename),
  tooManyFiles: () => tooManyFiles('this deploy sends more'),
})

/** A file over 1 MiB in a ticket deploy's body: 413 saying where such files go (the ticket stays good). */
function inlineTooLarge(path: string): ApiError {
  return new ApiError(
    'payload_too_large',
    `${path} is over ${STATIC_FILE_MAX_BYTES} bytes (1 MiB), the most a file in the deploy's body may be. Send larger files first through POST ${TICKET_DEPLOY_PATH}/uploads (by SHA-256, then their PUT) and name them in uploaded; this ticket stays good for that`,
    { reason: 'file_too_large', file: path, limit: STATIC_FILE_MAX_BYTES },
  )
}

/** Paths whose content differs between two versions (added, removed or changed). */
function changedPaths(from: VersionRecord, to: VersionRecord): string[] {
  const paths = new Set([...Object.keys(from.files), ...Object.keys(to.files)])
  return [...paths].filter((path) => from.files[path]?.hash !== to.files[path]?.hash).sort()
}

/**
 * The would_revert guard: paths changed on the site since `baseVersion` (by someone else) that this
 * folder would change back or remove. Empty when the folder keeps every one of those changes.
 */
function reverted(website: WebsiteActor, baseVersion: number, head: VersionRecord, tree: Map<string, string>): string[] {
  const base = website.version(baseVersion)
  if (base === undefined)
    throw new ApiError('validation', `baseVersion ${baseVersion} is not a version of this website (the head is ${head.version})`, {
      field: 'body.baseVersion',
    })
  return changedPaths(base, head).filter((path) => tree.get(path) !== head.files[path]?.hash)
}

export const deployOperations = [
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/deploy/tickets',
    operationId: 'source.beginDeploy',
    capability: 'source.write',
    rateClass: 'standard',
    tool: 'begin_deploy',
    tag,
    summary: 'A ticket to deploy a folder from disk',
    description:
      'Static websites: returns a ticket (5 minutes, one deploy) with which a helper uploads a whole folder to POST /public/v1/deploys (webly deploy <folder> --ticket <ticket>), so no bytes go through a tool call and no API key goes in a shell. The folder becomes a new draft version; publish_website after the person approves. Never echo the ticket to the person.',
    params: WebsitePathParams,
    response: BeginDeployResult,
    status: 201,
    handle(ctx) {
      const website = ctx.website!
      website.checkDeploy(undefined)
      const headVersion = website.head.version
      const { ticket, expiresAt } = ctx.registry.deployTickets.issue(ctx.principal, website.record, headVersion)
      return {
        ticket,
        expiresAt: iso(expiresAt),
        websiteId: website.id,
        headVersion,
        next: {
          message: `Run \`webly deploy <folder> --ticket <ticket>\` now (or POST ${ctx.urls.api(TICKET_DEPLOY_PATH)} with Authorization: Bearer <ticket>, one "files" part per file); it makes a draft, then publish_website once the person approves.`,
        },
      }
    },
  }),
  defineOperation({
    method: 'POST',
    path: TICKET_DEPLOY_PATH,
    operationId: 'source.ticketDeploy',
    ticket: true,
    capability: 'source.write',
    rateClass: 'expensive',
    tool: null,
    tag,
    summary: 'Deploy a folder with a ticket (multipart)',
    description:
      'Authorization: Bearer <ticket from begin_deploy>. multipart/form-data with one "files" part per file (filename: the path without the leading slash, as UTF-8 or as RFC 5987 filename*=UTF-8\'\'…; the type comes from the path), up to 2,000 files, 1 MiB each and 100 MiB a request; optional baseVersion, force and uploaded fields. The folder becomes the whole tree of a new draft version (never published here). With baseVersion, a deploy that would undo changes made since is 409 would_revert (force sends it anyway and says replaced); forced without baseVersion, replaced names the head the ticket was issued for; a head that moved since begin_deploy is 409 with details.expectedHeadVersion; a used, expired or forged ticket is 401.',
    body: TicketDeployBody,
    bodyMedia: { type: 'multipart/form-data', parse: parseTicketDeploy, docSchema: TicketDeployDoc },
    bodyLimitBytes: TICKET_DEPLOY_MAX_BYTES,
    response: TicketDeployResult,
    status: { values: [200, 201], of: (output) => (output.changed ? 201 : 200) },
    async handle(ctx, { body }) {
      const website = ctx.website!
      const expected = ctx.principal.ticket!.headVersion
      if (website.head.version !== expected) {
        throw new ApiError(
          'conflict',
          `The site changed after this ticket was issued (head ${website.head.version}, ticket ${expected}); get a new ticket with begin_deploy and deploy again`,
          { expectedHeadVersion: expected, headVersion: website.head.version },
        )
      }
      const uploaded = parseUploaded(body.uploaded)
      // Kind and trash; the head was checked above, and the commit checks it again in the mailbox
      // (a 409 with details.expectedHeadVersion either way).
      website.checkDeploy(undefined)
      const small = await prepareUploads(ctx.registry.reads, body.files, 'body.files')
      // Large files sent first (/public/v1/deploys/uploads) join the tree by hash.
      const paths = normalizeSitePaths(
        // The helper keeps their leading slash (/media/clip.mp4); the body's files come without it.
        uploaded.map((u) => u.path.replace(/^\/+/, '')),
        (i) => `body.uploaded[${i}].path`,
      )
      const large = ctx.registry.largeFiles.uploads(website.record.orgId, uploaded).map((u, i) => ({ ...u, path: paths[i]! }))
      const taken = new Set(small.map((u) => u.path))
      const twice = large.find((u) => taken.has(u.path))
      if (twice !== undefined)
        throw new ApiError('validation', `${twice.path} is both a file of the body and in uploaded; send it once`, {
          field: 'body.uploaded',
        })
      if (small.length + large.length > STATIC_FILES_MAX) throw tooManyFiles(`this deploy sends ${small.length + large.length}`)
      const uploads = [...small, ...large]
      const tree = new Map(uploads.map((u) => [u.path, u.hash]))
      const head = website.version(expected)!
      const base = body.baseVersion
      if (base !== undefined && base !== expected && body.force !== true) {
        const paths = reverted(website, base, head, tree)
        if (paths.length > 0) {
          throw new ApiError(
            'conflict',
            `This deploy would undo changes made to the site since version ${base} (the head is ${expected}): ${paths.slice(0, 20).join(', ')}${paths.length > 20 ? ` and ${paths.length - 20} more` : ''}. Read them (read_source_files), merge them into the folder and deploy with a new ticket, or deploy with force after the person agrees`,
            { reason: 'would_revert', baseVersion: base, headVersion: expected, paths },
          )
        }
      }
      // Nothing awaited since largeFiles.uploads read the large files: held until the commit names
      // them, so the sweeper cannot let go of their bytes meanwhile.
      const unhold = ctx.registry.largeFiles.hold(large)
      let result: Awaited<ReturnType<typeof website.deploy>>
      try {
        result = await website.deploy(actorOf(ctx.principal), {
          uploads,
          deletes: [],
          replace: true,
          expectedHeadVersion: expected,
          message: body.message ?? 'Deployed with a ticket',
        })
      } finally {
        unhold()
      }
      const urls = siteUrls(website, ctx.urls)
      // The head this deploy replaced: one made since the folder's baseVersion, or, forced without a base
      // (the helper's --force sends none), the head the ticket was issued for, which the force overrode.
      const replaced =
        result.changed && ((base !== undefined && base !== expected) || (base === undefined && body.force === true))
          ? { fromVersion: expected, toVersion: result.version }
          : undefined
      return {
        version: result.version,
        changed: result.changed,
        headVersion: website.head.version,
        publishedVersion: website.record.publishedVersion,
        urls,
        ...(replaced === undefined ? {} : { replaced }),
        warnings: website.ruleProblems(website.head),
        ...functionsOf(website),
        next: {
          message: result.changed
            ? `Version ${result.version} is a draft at ${urls.draft}: show it to the person, then publish_website once they approve.`
            : `Nothing changed: the folder equals version ${result.version}.`,
        },
      }
    },
  }),
  defineOperation({
    method: 'POST',
    path: `${TICKET_DEPLOY_PATH}/uploads`,
    operationId: 'source.ticketUploads',
    ticket: true,
    capability: 'source.write',
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'Large files of a ticket deploy',
    description:
      "Authorization: Bearer <ticket>. JSON {files: [{path, size, sha256, partSha256?}]} of the files over 1 MiB of a ticket deploy. A file up to 100 MiB is named by its SHA-256 and sent in one PUT; a larger one (up to the plan's largest file: 100 MiB on the free plan, 2 GiB on paid plans and with billing off; over it 413 with details.reason file_too_large, details.file and details.limit) in 100 MiB parts: partSha256 lists each part's SHA-256 and sha256 is the SHA-256 of those 32-byte digests in order. Content the organization sent before answers no upload (it is not sent again); a part already received is not asked for again. The plan's storage is checked before any byte moves (402 storage_limit). Answers a fresh ticket for the deploy (5 minutes; handed out only within the 5 minutes of the begin_deploy ticket it came from). Tickets and upload tokens work only while whoever asked for them may still deploy to the website (key not revoked or expired, still a member, website not trashed or suspended).",
    body: Type.Object(
      {
        files: Type.Array(
          Type.Object(
            {
              path: Type.String({ minLength: 1, maxLength: 1024 }),
              size: Type.Integer({ minimum: 0 }),
              sha256: Type.String({ pattern: '^[0-9a-f]{64}$' }),
              partSha256: Type.Optional(Type.Array(Type.String({ pattern: '^[0-9a-f]{64}$' }))),
            },
            { additionalProperties: false },
          ),
          { maxItems: STATIC_FILES_MAX },
        ),
      },
      { additionalProperties: false },
    ),
    response: Type.Object({
      ticket: Type.String({ description: 'A fresh ticket for the deploy (this one was spent)' }),
      files: Type.Array(
        Type.Object({
          path: Type.String({ description: 'As sent' }),
          size: Type.Integer(),
          hash: Type.String({ description: 'The SHA-256 the deploy names it by in uploaded' }),
          upload: Type.Optional(
            Type.Object(
              {
                url: Type.String({ description: 'PUT the whole file here' }),
                headers: Type.Record(Type.String(), Type.String(), { description: 'Send exactly these (an upload token for this file)' }),
              },
              { description: 'Absent when the organization sent this content before: it is not sent again' },
            ),
          ),
          parts: Type.Optional(
            Type.Array(
              Type.Object({
                partNumber: Type.Integer({ minimum: 1 }),
                size: Type.Integer({ description: 'Bytes of this part: the file from (partNumber - 1) * partSize' }),
                url: Type.String({ description: 'PUT exactly these bytes here' }),
                headers: Type.Record(Type.String(), Type.String(), { description: 'Send exactly these (an upload token for this file)' }),
              }),
              { description: 'A file over 100 MiB: the parts still to send (none arrived yet, or those missing after an interruption)' },
            ),
          ),
          partSize: Type.Optional(Type.Integer({ description: 'Bytes of every part but the last' })),
        }),
      ),
    }),
    extraErrors: ['payload_too_large', 'payment_required'],
    async handle(ctx, { body }) {
      const website = ctx.website!
      // First, before anything moves: no fresh ticket once begin_deploy's ticket has expired.
      const ticket = ctx.registry.deployTickets.renew(ctx.principal, website.record)
      const large = ctx.registry.largeFiles
      const orgId = website.record.orgId
      const largest = ctx.registry.files.largestFile(orgId)
      body.files.forEach((file, i) => checkLargeFile(file, i, largest))
      const held = body.files.map((f) => large.held(orgId, f.sha256, f.size))
      // What is not held yet counts against the plan's storage: refused before any byte moves.
      const incoming = body.files.reduce((sum, f, i) => sum + (held[i] ? 0 : f.size), 0)
      ctx.registry.files.assertRoom(orgId, incoming, 'The large files of this deploy', 'deploy again with a new ticket')
      // Held files named again are kept for the deploy that follows (the sweeper lets go of unused ones after a day).
      await large.touch(
        orgId,
        body.files.filter((_, i) => held[i]),
      )
      return {
        ticket,
        files: body.files.map((file, i) => {
          // Content this organization sent before is never sent again.
          if (held[i]) return { path: file.path, size: file.size, hash: file.sha256 }
          const token = ctx.registry.uploadTokens.issue(ctx.principal, { websiteId: website.id, orgId, id: file.sha256 })
          const headers = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/octet-stream' }
          const url = ctx.urls.api(`${TICKET_DEPLOY_PATH}/uploads/${website.id}/${file.sha256}`)
          if (file.partSha256 === undefined) return { path: file.path, size: file.size, hash: file.sha256, upload: { url, headers } }
          return {
            path: file.path,
            size: file.size,
            hash: file.sha256,
            partSize: DEPLOY_PART_BYTES,
            parts: large.missingParts(orgId, file.sha256, file.size, file.partSha256).map((n) => ({
              partNumber: n,
              size: deployPart(file.size, n).length,
              url: `${url}/parts/${n}`,
              headers,
            })),
          }
        }),
      }
    },
  }),
  defineOperation({
    method: 'PUT',
    path: `${TICKET_DEPLOY_PATH}/uploads/{websiteId}/{objectId}`,
    operationId: 'source.ticketUploadBytes',
    uploadToken: true,
    capability: 'source.write',
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'The bytes of a large file of a ticket deploy',
    description:
      'The whole file, with the headers /public/v1/deploys/uploads answered (its upload token). Checked against the SHA-256 and size announced (400 otherwise), then kept for the deploy to name in uploaded.',
    params: Type.Object(LargeFileParams, { additionalProperties: false }),
    streamsBody: { type: 'application/octet-stream', description: 'The whole file' },
    response: Type.Object({ hash: Type.String(), size: Type.Integer(), received: Type.Boolean() }),
    async handle(ctx, { params, stream }) {
      const website = ctx.website!
      const size = stream!.contentLength
      if (size === null || size > DEPLOY_LARGE_FILE_MAX_BYTES)
        throw new ApiError('validation', `Send the whole file with its Content-Length (at most ${DEPLOY_LARGE_FILE_MAX_BYTES} bytes)`, {
          field: 'header.content-length',
        })
      const large = ctx.registry.largeFiles
      const path = large.workPath()
      const out = fileSink(path)
      try {
        await stream!.pipe(size, out.sink)
      } finally {
        await out.close().catch(() => undefined)
      }
      await large.keep(website.record.orgId, params.objectId, size, path)
      return { hash: params.objectId, size, received: true }
    },
  }),
  defineOperation({
    method: 'PUT',
    path: `${TICKET_DEPLOY_PATH}/uploads/{websiteId}/{objectId}/parts/{partNumber}`,
    operationId: 'source.ticketUploadPart',
    uploadToken: true,
    capability: 'source.write',
    rateClass: 'standard',
    tool: null,
    tag,
    summary: 'One part of a large file of a ticket deploy',
    description:
      "Part n of a file over 100 MiB: exactly its bytes (the file from (n - 1) * partSize), with the headers /public/v1/deploys/uploads answered. Checked against that part's SHA-256 (400 otherwise; send it again); parts in any order, two at a time if you like. When the last one is in, the file is kept for the deploy to name in uploaded.",
    params: Type.Object(
      { ...LargeFileParams, partNumber: Type.String({ pattern: '^[1-9][0-9]{0,4}$', description: 'The part, from 1' }) },
      { additionalProperties: false },
    ),
    streamsBody: { type: 'application/octet-stream', description: "The part's bytes" },
    response: Type.Object({ hash: Type.String(), partNumber: Type.Integer(), size: Type.Integer(), received: Type.Boolean() }),
    async handle(ctx, { params, stream }) {
      const n = Number(params.partNumber)
      const { writer, length } = await ctx.registry.largeFiles.openPart(
        ctx.website!.record.orgId,
        params.objectId,
        n,
        stream!.contentLength,
      )
      await pipeInto(stream!, length, writer)
      await writer.done()
      return { hash: params.objectId, partNumber: n, size: length, received: true }
    },
  }),
]

/** A large file as announced: within the plan's largest file; over 100 MiB, its parts' digests and the fingerprint they make. */
function checkLargeFile(file: { path: string; size: number; sha256: string; partSha256?: string[] }, i: number, largest: number): void {
  if (file.size > largest)
    // The helper sends these paths with their leading slash (/media/clip.mp4); they are named as sent.
    throw new ApiError(
      'payload_too_large',
      `${file.path} is ${file.size} bytes; a site file is at most ${largest} bytes on this plan${largest <= DEPLOY_LARGE_FILE_MAX_BYTES ? ' (100 MiB; paid plans take 2 GiB)' : ''}. Put it elsewhere and link it. Nothing was sent`,
      { reason: 'file_too_large', file: file.path, limit: largest },
    )
  const field = `body.files.${i}.partSha256`
  if (file.size <= DEPLOY_LARGE_FILE_MAX_BYTES) {
    if (file.partSha256 !== undefined)
      throw new ApiError('validation', `${file.path} is sent in one piece (it is at most 100 MiB): leave out partSha256`, { field })
    return
  }
  const count = Math.ceil(file.size / DEPLOY_PART_BYTES)
  if (file.partSha256?.length !== count)
    throw new ApiError(
      'validation',
      `${file.path} is over 100 MiB: send it in ${count} parts of 100 MiB, with partSha256 listing the SHA-256 of each (${count})`,
      { field },
    )
  if (partsFingerprint(file.partSha256) !== file.sha256)
    throw new ApiError(
      'validation',
      `${file.path}: sha256 of a file in parts is the SHA-256 of its parts' digests (32 bytes each, in order), ${partsFingerprint(file.partSha256)} for these`,
      { field: `body.files.${i}.sha256` },
    )
}

/** The `uploaded` field: JSON [{path, size, sha256}] of large files sent first; [] when absent. */
function parseUploaded(text: string | undefined): { path: string; size: number; sha256: string }[] {
  if (text === undefined || text.trim() === '') return []
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    value = null
  }
  const valid =
    Array.isArray(value) &&
    value.length <= STATIC_FILES_MAX &&
    value.every(
      (u) =>
        u !== null &&
        typeof u === 'object' &&
        typeof (u as { path?: unknown }).path === 'string' &&
        Number.isInteger((u as { size?: unknown }).size) &&
        typeof (u as { sha256?: unknown }).sha256 === 'string' &&
        /^[0-9a-f]{64}$/.test((u as { sha256: string }).sha256),
    )
  if (!valid)
    throw new ApiError('validation', 'uploaded is JSON [{path, size, sha256}] of the files /public/v1/deploys/uploads answered', {
      field: 'body.uploaded',
    })
  return value as { path: string; size: number; sha256: string }[]
}
