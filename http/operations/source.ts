import busboy from 'busboy'
import { auditActor } from '../../actors/audit.js'
import { fileTooLarge, tooManyFiles } from '../../actors/website/commits.js'
import { decodeContent, prepareUploads, type RawFile } from '../../actors/website/static-files.js'
import type { WebsiteActor } from '../../actors/website/actor.js'
import { diffManifests } from '../../actors/website/versions.js'
import { iso } from '../../core/clock.js'
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
  SourceSummary,
  VersionEntry,
} from '../../core/schemas/source.js'
import { Type } from '@sinclair/typebox'
import { defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'
import type { PublicUrls } from '../../core/hostnames.js'
import { isLive } from '../../core/website-state.js'

const tag = 'Source'

/** The version named by `target` or `version` (default: head); 404 when it does not exist. */
/**
 * The two versions a comparison reads: `to` (default the head) and `from` (default the published
 * version; 0, or nothing published, is the empty state, null).
 */
export function compareVersions(website: WebsiteActor, query: { from?: number; to?: number }): { from: VersionRecord | null; fromNumber: number; to: VersionRecord } {
  const to = query.to === undefined ? website.head : selectVersion(website, { version: query.to })
  const fromNumber = query.from ?? website.record.publishedVersion ?? 0
  return { from: fromNumber === 0 ? null : selectVersion(website, { version: fromNumber }), fromNumber, to }
}

export function selectVersion(website: WebsiteActor, selector: { target?: 'head' | 'published'; version?: number }): VersionRecord {
  if (selector.target !== undefined && selector.version !== undefined) {
    throw new ApiError('validation', 'Give target or version, not both', { field: 'version' })
  }
  if (selector.version !== undefined) {
    const found = website.version(selector.version)
    if (found === undefined) throw new ApiError('not_found', `Version ${selector.version} does not exist; the head is version ${website.head.version}`)
    return found
  }
  if (selector.target === 'published') {
    const published = website.publishedVersionRecord
    if (published === null) throw new ApiError('not_found', 'Nothing is published yet; read target=head or a version number')
    return published
  }
  return website.head
}

export function siteUrls(website: WebsiteActor, urls: PublicUrls): { draft: string; published: string | null } {
  const r = website.record
  return { draft: urls.draft(r.subdomain), published: isLive(r) ? urls.published(r.subdomain) : null }
}

function commitResult(ctx: OperationContext, result: { version: number; changed: boolean }) {
  const website = ctx.website!
  const urls = siteUrls(website, ctx.urls)
  const next = result.changed
    ? {
        message: `Version ${result.version} is the new head. Preview it at ${urls.draft}, then publish with POST /v1/websites/${website.id}/publish (MCP: publish_website).`,
        actions: ['preview', 'publish'],
      }
    : { message: `Nothing changed: the content equals the head, which stays version ${result.version}.`, actions: [] }
  return { version: result.version, changed: result.changed, urls, next }
}

function fileContent(website: WebsiteActor, version: VersionRecord, path: string, store: OperationContext['registry']['store']) {
  const entry = version.files[path]
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

function versionEntry(website: WebsiteActor, v: VersionRecord) {
  return {
    version: v.version,
    isHead: v.version === website.head.version,
    isPublished: v.version === website.record.publishedVersion,
    source: v.source,
    message: v.message,
    fileCount: v.fileCount,
    totalBytes: v.totalBytes,
    createdAt: iso(v.createdAt),
    createdBy: v.createdBy,
    apiKeyId: v.createdBy?.kind === 'api_key' ? v.createdBy.id : null,
  }
}

/** Parses a multipart deploy into the shape of MultipartDeployBody (files keep their bytes). */
function parseMultipart(bytes: Buffer, contentType: string): Promise<unknown> {
  if (!/^multipart\/form-data\b/i.test(contentType)) {
    return Promise.reject(new ApiError('validation', `Content-Type must be multipart/form-data with repeated "files" parts, got ${contentType || 'none'}`, { field: 'body' }))
  }
  return new Promise((resolve, reject) => {
    const files: { path: string; bytes: Buffer; contentType?: string }[] = []
    const out: Record<string, unknown> = { files }
    const deletes: string[] = []
    let failed = false
    const fail = (error: ApiError) => {
      if (!failed) reject(error)
      failed = true
    }
    let parser: busboy.Busboy
    try {
      parser = busboy({
        headers: { 'content-type': contentType },
        preservePath: true,
        limits: { fileSize: STATIC_FILE_MAX_BYTES, files: STATIC_FILES_MAX, fields: STATIC_FILES_MAX + 10, parts: 2 * STATIC_FILES_MAX + 10 },
      })
    } catch (error) {
      reject(new ApiError('validation', `multipart body cannot be read: ${(error as Error).message}`, { field: 'body' }))
      return
    }
    parser.on('file', (name, stream, info) => {
      if (name !== 'files') {
        stream.resume()
        fail(new ApiError('validation', `multipart part "${name}" is not known; send files as repeated "files" parts`, { field: `body.${name}` }))
        return
      }
      const chunks: Buffer[] = []
      // A body that ends inside a file part (a truncated upload) errors the part's stream.
      stream.on('error', (error: Error) => fail(new ApiError('validation', `multipart body cannot be read: ${error.message} (the body ends inside the part of ${JSON.stringify(info.filename)}); send the whole body`, { field: 'body' })))
      stream.on('data', (chunk: Buffer) => chunks.push(chunk))
      stream.on('limit', () => fail(fileTooLarge(JSON.stringify(info.filename), null, info.filename)))
      stream.on('close', () => {
        const given = info.mimeType
        const specific = given && given !== 'application/octet-stream' && given !== 'text/plain' ? given : undefined
        files.push({ path: info.filename ?? '', bytes: Buffer.concat(chunks), ...(specific && !/\.\w+$/.test(info.filename ?? '') ? { contentType: specific } : {}) })
      })
    })
    parser.on('field', (name, value) => {
      if (name === 'replace') out.replace = value === 'true' ? true : value === 'false' ? false : value
      else if (name === 'expectedHeadVersion') out.expectedHeadVersion = /^\d+$/.test(value) ? Number(value) : value
      else if (name === 'message') out.message = value
      else if (name === 'deletes') deletes.push(value)
      // A part without a filename arrives as a field.
      else if (name === 'files') fail(new ApiError('validation', 'a "files" part needs a filename: the path of the file in the site, e.g. Content-Disposition: form-data; name="files"; filename="index.html"', { field: 'body.files' }))
      else fail(new ApiError('validation', `multipart field "${name}" is not known (replace, expectedHeadVersion, message, deletes)`, { field: `body.${name}` }))
    })
    parser.on('filesLimit', () => fail(tooManyFiles('this deploy sends more')))
    parser.on('error', (error: Error) => fail(new ApiError('validation', `multipart body cannot be read: ${error.message}`, { field: 'body' })))
    parser.on('close', () => {
      if (deletes.length > 0) out.deletes = deletes
      if (!failed) resolve(out)
    })
    parser.end(bytes)
  })
}

async function deploy(ctx: OperationContext, raw: RawFile[], body: { deletes?: string[]; replace?: boolean; expectedHeadVersion?: number; message?: string }) {
  const website = ctx.website!
  if (body.replace === true && body.deletes !== undefined && body.deletes.length > 0) {
    throw new ApiError('validation', 'deletes has no meaning with replace: true (the new version holds only the sent files)', { field: 'body.deletes' })
  }
  website.checkDeploy(body.expectedHeadVersion)
  const uploads = await prepareUploads(ctx.registry.store, raw, 'body.files')
  const deletes = normalizeSitePaths(body.deletes ?? [], (i) => `body.deletes[${i}]`)
  const written = new Set(uploads.map((u) => u.path))
  const both = deletes.findIndex((path) => written.has(path))
  if (both !== -1) {
    const path = deletes[both]
    throw new ApiError('validation', `body.deletes[${both}] "${path}" is also in files: a deploy either writes or deletes a path`, { field: `body.deletes[${both}]`, path })
  }
  const result = await website.deploy(auditActor(ctx.principal), {
    uploads,
    deletes,
    replace: body.replace === true,
    expectedHeadVersion: body.expectedHeadVersion,
    message: body.message,
  })
  return commitResult(ctx, result)
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
        body.files.map((f, i) => ({ path: f.path, bytes: decodeContent(f.content, f.encoding, `body.files[${i}].content`), contentType: f.contentType })),
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
      'Static websites only: the same deploy as deploy/json, as multipart/form-data with repeated "files" parts whose filenames are the paths, and optional replace, expectedHeadVersion and message fields.',
    params: WebsitePathParams,
    body: MultipartDeployBody,
    bodyMedia: { type: 'multipart/form-data', parse: parseMultipart, docSchema: MultipartDeployDoc },
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
    description: 'Returns the head and published versions, whether the head has unpublished changes, the file count and the draft and live URLs. Use it to see where a website stands before editing or publishing.',
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
    description: 'Lists the files (path, size, content type, hash) of the head, the published version or a given version, in path order, optionally under a prefix. Paginated with cursor.',
    params: WebsitePathParams,
    query: ListFilesQuery,
    response: Page(FileEntry),
    handle(ctx, { query }) {
      const version = selectVersion(ctx.website!, query)
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
      const version = selectVersion(website, query)
      const path = normalizeSitePath(query.path, 'query.path')
      if (version.files[path] === undefined) throw new ApiError('not_found', `No file "${path}" in version ${version.version}`)
      return fileContent(website, version, path, ctx.registry.store)
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
    description: 'Returns up to 50 files of one version in a single call; paths not in that version are listed under missing instead of failing the call.',
    params: WebsitePathParams,
    body: ReadFilesBody,
    response: ReadFilesResult,
    handle(ctx, { body }) {
      const website = ctx.website!
      const version = selectVersion(website, body)
      const paths = body.paths.map((p, i) => normalizeSitePath(p, `body.paths[${i}]`))
      return {
        version: version.version,
        files: paths.filter((p) => version.files[p] !== undefined).map((p) => fileContent(website, version, p, ctx.registry.store)),
        missing: paths.filter((p) => version.files[p] === undefined),
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
    description: 'Lists versions newest first, each with isHead, isPublished, its message, author key and time. Use a version number with rollback_website or restore_head.',
    params: WebsitePathParams,
    query: Type.Object(ListQuery, { additionalProperties: false }),
    response: Page(VersionEntry),
    handle(ctx, { query }) {
      const website = ctx.website!
      const below = Math.min(cursorBelow(query.cursor), website.head.version + 1)
      return pageDescending(ctx.registry.store.versionsOf(website.id, below), {
        numberOf: (v) => v.version,
        below,
        limit: query.limit ?? LIST_LIMIT_DEFAULT,
        map: (v) => versionEntry(website, v),
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
    description: 'Lists files added, removed or modified between two versions, by default from the published version to the head: what publishing would change.',
    params: WebsitePathParams,
    query: ChangesQuery,
    response: ChangesResult,
    handle(ctx, { query }) {
      const website = ctx.website!
      const { from, fromNumber, to } = compareVersions(website, query)
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
    description: 'Static websites: removes the given paths from the draft head as one new version. A path that is not in the head is a 400 naming it.',
    params: WebsitePathParams,
    body: DeleteFilesBody,
    response: CommitResult,
    async handle(ctx, { body }) {
      const paths = normalizeSitePaths(body.paths, (i) => `body.paths[${i}]`)
      return commitResult(ctx, await ctx.website!.deleteFiles(auditActor(ctx.principal), paths, body.expectedHeadVersion, body.message))
    },
  }),
]
