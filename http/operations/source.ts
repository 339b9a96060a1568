import { auditActor } from '../../actors/organization/audit.js'
import { fileTooLarge, LARGE_STATIC_FILES_HINT, tooManyFiles } from '../../actors/website/commits.js'
import { decodeContent, prepareUploads, type RawFile } from '../../actors/website/static-files.js'
import type { WebsiteActor } from '../../actors/website/actor.js'
import { diffManifests } from '../../actors/website/versions.js'
import { utf8OrNull } from '../../core/content.js'
import { isTextual } from '../../core/content-type.js'
import { cursorBelow, pageByKey, pageDescending } from '../../core/cursor.js'
import { ApiError } from '../../core/errors.js'
import { DEPLOY_BODY_MAX_BYTES, LIST_LIMIT_DEFAULT, STATIC_FILE_MAX_BYTES, STATIC_FILES_MAX } from '../../core/limits.js'
import { normalizeSitePath, normalizeSitePaths } from '../../core/site-paths.js'
import { ListQuery, Page } from '../../core/schemas/common.js'
import type { VersionRecord } from '../../core/schemas/records.js'
import {
  ChangesQuery,
  ChangesResult,
  CommitResult,
  DeleteFilesBody,
  DeployBody,
  FileContent,
  FileEntry,
  ListFilesQuery,
  MultipartDeployBody,
  MultipartDeployDoc,
  ReadFileQuery,
  ReadFilesBody,
  ReadFilesResult,
  RestoreHeadBody,
  SourceSummary,
  VersionEntry,
} from '../../core/schemas/source.js'
import { Type } from '@sinclair/typebox'
import { defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'
import { multipartParser } from '../body.js'
import { commitResult, functionsOf, siteUrls, versionEntry } from '../resources.js'

const tag = 'Source'

function fileContent(website: WebsiteActor, version: VersionRecord, path: string, store: OperationContext['registry']['reads']) {
  const entry = version.files[path]
  if (entry.size > STATIC_FILE_MAX_BYTES)
    // A large file of a ticket deploy (video, images): streamed from the site, never through the API.
    throw new ApiError(
      'validation',
      `${path} is a large file (${entry.size} bytes) sent with a ticket deploy; it is not read through the API. Download it from the site at /${path}`,
      { field: 'query.path' },
    )
  const bytes = store.getBlob(entry.hash)
  if (bytes === undefined) throw new Error(`blob ${entry.hash} of ${website.id} v${version.version} is missing`)
  const text = isTextual(entry.contentType) ? utf8OrNull(bytes) : null
  return {
    path,
    content: text ?? bytes.toString('base64'),
    encoding: text === null ? ('base64' as const) : ('utf8' as const),
    contentType: entry.contentType,
    size: entry.size,
    hash: entry.hash,
    version: version.version,
  }
}

/** A multipart deploy: repeated "files" parts (the filename is the path) and the JSON deploy's fields. */
const parseDeployMultipart = multipartParser({
  files: 'files',
  fields: { replace: 'boolean', expectedHeadVersion: 'integer', message: 'string', deletes: 'strings' },
  limits: { fileBytes: STATIC_FILE_MAX_BYTES, files: STATIC_FILES_MAX },
  fileTooLarge: (filename) => fileTooLarge(JSON.stringify(filename), null, filename, LARGE_STATIC_FILES_HINT),
  tooManyFiles: () => tooManyFiles('this deploy sends more'),
})

async function deploy(
  ctx: OperationContext,
  raw: RawFile[],
  body: { deletes?: string[]; replace?: boolean; expectedHeadVersion?: number; message?: string },
) {
  const website = ctx.website!
  if (body.replace === true && body.deletes !== undefined && body.deletes.length > 0) {
    throw new ApiError('validation', 'deletes has no meaning with replace: true (the new version holds only the sent files)', {
      field: 'body.deletes',
    })
  }
  website.checkDeploy(body.expectedHeadVersion)
  const uploads = await prepareUploads(ctx.registry.reads, raw, 'body.files')
  const deletes = normalizeSitePaths(body.deletes ?? [], (i) => `body.deletes[${i}]`)
  const written = new Set(uploads.map((u) => u.path))
  const both = deletes.findIndex((path) => written.has(path))
  if (both !== -1) {
    const path = deletes[both]
    throw new ApiError('validation', `body.deletes[${both}] "${path}" is also in files: a deploy either writes or deletes a path`, {
      field: `body.deletes[${both}]`,
      path,
    })
  }
  const result = await website.deploy(auditActor(ctx.principal), {
    uploads,
    deletes,
    replace: body.replace === true,
    expectedHeadVersion: body.expectedHeadVersion,
    message: body.message,
  })
  return commitResult(ctx.website!, ctx.urls, result)
}

/** 201 when the deploy made a new version, 200 when its content equals the head. */
const createdOrUnchanged = { values: [200, 201], of: (out: { changed: boolean }) => (out.changed ? 201 : 200) }

export const sourceOperations = [
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/deploy/json',
    operationId: 'source.deploy',
    capability: 'source.write',
    rateClass: 'expensive',
    tool: 'deploy_files',
    tag,
    summary: 'Deploy static files (JSON)',
    description:
      'Static websites only: adds or replaces files in the draft head as one new version (replace: true keeps only the sent files; deletes removes paths). Nothing goes live until publish_website; identical content returns changed: false.',
    params: WebsitePathParams,
    body: DeployBody,
    response: CommitResult,
    bodyLimitBytes: DEPLOY_BODY_MAX_BYTES,
    status: createdOrUnchanged,
    handle: (ctx, { body }) =>
      deploy(
        ctx,
        body.files.map((f, i) => ({
          path: f.path,
          bytes: decodeContent(f.content, f.encoding, `body.files[${i}].content`),
          contentType: f.contentType,
        })),
        body,
      ),
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/deploy',
    operationId: 'source.deployMultipart',
    capability: 'source.write',
    rateClass: 'expensive',
    tool: null,
    tag,
    summary: 'Deploy static files (multipart)',
    description:
      'Static websites only: the same deploy as deploy/json, as multipart/form-data with repeated "files" parts whose filenames are the paths (UTF-8, or RFC 5987 filename*=UTF-8\'\'…), and optional replace, expectedHeadVersion and message fields.',
    params: WebsitePathParams,
    body: MultipartDeployBody,
    bodyMedia: { type: 'multipart/form-data', parse: parseDeployMultipart, docSchema: MultipartDeployDoc },
    response: CommitResult,
    bodyLimitBytes: DEPLOY_BODY_MAX_BYTES,
    status: createdOrUnchanged,
    handle: (ctx, { body }) => deploy(ctx, body.files, body),
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/source/summary',
    operationId: 'source.summary',
    capability: 'source.read',
    rateClass: 'standard',
    tool: 'get_source_summary',
    tag,
    summary: 'Head, published version and file count',
    description:
      'Returns the head and published versions, whether the head has unpublished changes, the file count and the draft and live URLs. Use it to see where a website stands before editing or publishing.',
    params: WebsitePathParams,
    response: SourceSummary,
    handle(ctx) {
      const website = ctx.website!
      return {
        websiteId: website.id,
        kind: website.record.kind,
        headVersion: website.head.version,
        publishedVersion: website.record.publishedVersion,
        hasUnpublishedChanges: website.hasUnpublishedChanges,
        fileCount: website.head.fileCount,
        totalBytes: website.head.totalBytes,
        urls: siteUrls(website, ctx.urls),
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/source/files',
    operationId: 'source.listFiles',
    capability: 'source.read',
    rateClass: 'standard',
    tool: 'list_files',
    tag,
    summary: 'List files of a version',
    description:
      'Lists the files (path, size, content type, hash) of the head, the published version or a given version, in path order, optionally under a prefix. Paginated with cursor.',
    params: WebsitePathParams,
    query: ListFilesQuery,
    response: Page(FileEntry),
    handle(ctx, { query }) {
      const version = ctx.website!.selectVersion(query)
      const prefix = query.prefix ?? ''
      const paths = Object.keys(version.files)
        .filter((p) => p.startsWith(prefix))
        .sort()
      const page = pageByKey(paths, (p) => p, query.limit ?? LIST_LIMIT_DEFAULT, query.cursor)
      return { items: page.items.map((path) => ({ path, ...version.files[path] })), nextCursor: page.nextCursor }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/source/files/read',
    operationId: 'source.readFile',
    capability: 'source.read',
    rateClass: 'standard',
    tool: 'read_file',
    tag,
    summary: 'Read one file',
    description: 'Returns one file of the head (or target/version): text as utf8, binary as base64, with its content type, size and hash.',
    params: WebsitePathParams,
    query: ReadFileQuery,
    response: FileContent,
    handle(ctx, { query }) {
      const website = ctx.website!
      const version = website.selectVersion(query)
      const path = normalizeSitePath(query.path, 'query.path')
      if (version.files[path] === undefined) throw new ApiError('not_found', `No file "${path}" in version ${version.version}`)
      return fileContent(website, version, path, ctx.registry.reads)
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/source/files/read',
    operationId: 'source.readFiles',
    readOnly: true,
    capability: 'source.read',
    rateClass: 'standard',
    tool: 'read_files',
    tag,
    summary: 'Read up to 50 files',
    description:
      'Returns up to 50 files of one version in a single call; paths not in that version are listed under missing, and files over 1 MiB (large files of ticket deploys) under large with their size, instead of failing the call.',
    params: WebsitePathParams,
    body: ReadFilesBody,
    response: ReadFilesResult,
    handle(ctx, { body }) {
      const website = ctx.website!
      const version = website.selectVersion(body)
      const paths = body.paths.map((p, i) => normalizeSitePath(p, `body.paths[${i}]`))
      const found = paths.filter((p) => version.files[p] !== undefined)
      const large = found.filter((p) => version.files[p]!.size > STATIC_FILE_MAX_BYTES)
      return {
        version: version.version,
        files: found.filter((p) => !large.includes(p)).map((p) => fileContent(website, version, p, ctx.registry.reads)),
        missing: paths.filter((p) => version.files[p] === undefined),
        ...(large.length === 0 ? {} : { large: large.map((path) => ({ path, ...version.files[path]! })) }),
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/source/versions',
    operationId: 'source.listVersions',
    capability: 'source.read',
    rateClass: 'standard',
    tool: 'list_versions',
    tag,
    summary: 'Version history',
    description:
      "Lists versions newest first, each with isHead, isPublished, its message, author key and time, and urls.preview: the version's own address (v{N}--{subdomain}), which serves it exactly as it is while it exists. Use a version number with rollback_website or restore_head.",
    params: WebsitePathParams,
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Page(VersionEntry),
    handle(ctx, { query }) {
      const website = ctx.website!
      const below = Math.min(cursorBelow(query.cursor), website.head.version + 1)
      return pageDescending(ctx.registry.reads.versionsOf(website.id, below), {
        numberOf: (v) => v.version,
        below,
        limit: query.limit ?? LIST_LIMIT_DEFAULT,
        map: (v) => versionEntry(website, ctx.urls, v),
      })
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/source/changes',
    operationId: 'source.changes',
    capability: 'source.read',
    rateClass: 'standard',
    tool: 'list_changes',
    tag,
    summary: 'Files changed between two versions',
    description:
      'Lists files added, removed or modified between two versions, by default from the published version to the head: what publishing would change.',
    params: WebsitePathParams,
    query: ChangesQuery,
    response: ChangesResult,
    handle(ctx, { query }) {
      const website = ctx.website!
      const { from, fromNumber, to } = website.compareVersions(query)
      const page = pageByKey(diffManifests(from?.files ?? {}, to.files), (c) => c.path, query.limit ?? LIST_LIMIT_DEFAULT, query.cursor)
      return { from: fromNumber, to: to.version, ...page }
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/source/files',
    operationId: 'source.deleteFiles',
    capability: 'source.write',
    rateClass: 'standard',
    tool: 'delete_files',
    tag,
    summary: 'Delete files from the head',
    description:
      'Static websites: removes the given paths from the draft head as one new version. A path that is not in the head is a 400 naming it.',
    params: WebsitePathParams,
    body: DeleteFilesBody,
    response: CommitResult,
    async handle(ctx, { body }) {
      const paths = normalizeSitePaths(body.paths, (i) => `body.paths[${i}]`)
      return commitResult(
        ctx.website!,
        ctx.urls,
        await ctx.website!.deleteFiles(auditActor(ctx.principal), paths, body.expectedHeadVersion, body.message),
      )
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/head/restore',
    operationId: 'source.restoreHead',
    capability: 'source.write',
    rateClass: 'standard',
    tool: 'restore_head',
    tag,
    summary: 'Restore the head to an earlier state',
    description:
      'Makes a new head version with the content of the published version (to: "published") or of a version number, to throw away draft changes. Nothing is published.',
    params: WebsitePathParams,
    body: RestoreHeadBody,
    response: CommitResult,
    async handle(ctx, { body }) {
      const website = ctx.website!
      const result = await website.restoreHead(auditActor(ctx.principal), body.to)
      return {
        ...result,
        urls: siteUrls(website, ctx.urls),
        next: result.changed
          ? { message: `Version ${result.version} is the new head; preview it, then publish when ready.`, actions: ['preview', 'publish'] }
          : { message: `The head already has that content (version ${result.version}).`, actions: [] },
        warnings: website.ruleProblems(website.head),
        ...functionsOf(website),
      }
    },
  }),
]
