import { createTwoFilesPatch } from 'diff'
import picomatch from 'picomatch'
import { auditActor } from '../../actors/organization/audit.js'
import type { TypedWriteResult } from '../../actors/website/framework-files.js'
import type { WebsiteActor } from '../../actors/website/actor.js'
import { pageByKey } from '../../core/cursor.js'
import { ApiError } from '../../core/errors.js'
import { LIST_LIMIT_DEFAULT, SEARCH_MATCHES_MAX, SEARCH_MATCHES_PER_FILE_DEFAULT, STR_REPLACE_MAX_EDITS } from '../../core/limits.js'
import { Page } from '../../core/schemas/common.js'
import type { VersionRecord } from '../../core/schemas/records.js'
import {
  DeleteFileBody,
  DiffQuery,
  DiffToolQuery,
  DiffResult,
  GateResultSchema,
  FileQuery,
  FileToolQuery,
  LeaseResult,
  PutFileBody,
  ReadTypedFilesBody,
  ReadTypedFilesResult,
  RouteResult,
  SearchBody,
  SearchResult,
  SetMetadataBody,
  SetRouteBody,
  StrReplaceBody,
  StrReplaceResult,
  TreeEntry,
  TreeQuery,
  TypedFileContent,
  WriteResult,
} from '../../core/schemas/code.js'
import { checkFileId, FILE_TYPES, fileIdOf, fileLabel, filePath, normalizeRoute, type FileId } from '../../core/typed-files.js'
import { defineOperation, WebsitePathParams, type OperationContext } from '../operation.js'

const tag = 'Framework source'

function website(ctx: OperationContext, operation: string): WebsiteActor {
  const w = ctx.website!
  w.requireFramework(operation)
  return w
}

/** Sort and cursor key of a typed file: type order, then name. */
function treeKey(file: FileId): string {
  return `${String(FILE_TYPES.indexOf(file.type)).padStart(2, '0')}/${file.name ?? ''}`
}

/** The typed files of a version in tree order, optionally of one type and matching a name glob. */
function typedFiles(version: VersionRecord, filter: { type?: FileId['type']; nameGlob?: string } = {}): { file: FileId; path: string }[] {
  const glob = filter.nameGlob === undefined ? null : picomatch(filter.nameGlob)
  return Object.keys(version.files)
    .flatMap((path) => {
      const file = fileIdOf(path)
      return file === null ? [] : [{ file, path, key: treeKey(file) }]
    })
    .filter(({ file }) => (filter.type === undefined || file.type === filter.type) && (glob === null || glob(file.name ?? file.type)))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
}

/** What a single-file write answers. */
function writeOutput(result: TypedWriteResult, file: FileId) {
  return {
    version: result.version,
    changed: result.changed,
    file,
    formatted: result.formatted,
    ...(result.formatError ? { formatError: result.formatError } : {}),
  }
}

function readTyped(w: WebsiteActor, version: VersionRecord, file: FileId) {
  const content = w.readText(version, file)
  if (content === undefined) return undefined
  const entry = version.files[filePath(file)]
  return {
    file,
    content,
    bytes: entry.size,
    lines: content === '' ? 0 : content.split('\n').length - (content.endsWith('\n') ? 1 : 0),
    hash: entry.hash,
    version: version.version,
  }
}

/** 201 when a version was created; 200 when nothing changed, or for a dry run (nothing is ever created). */
const writeStatus = {
  values: [200, 201],
  of: (out: { changed: boolean; dryRun?: boolean }) => (out.changed && out.dryRun !== true ? 201 : 200),
}

/** `{file: {type, name}, ...rest}` (the MCP shape) to the REST query's flat `type` and `name`. */
function flattenFile(args: Record<string, unknown>): Record<string, unknown> {
  const { file, ...rest } = args as { file: { type: string; name?: string } }
  return { ...rest, type: file.type, ...(file.name === undefined ? {} : { name: file.name }) }
}

export const codeOperations = [
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/source/lease',
    operationId: 'code.acquireLease',
    capability: 'source.write',
    rateClass: 'standard',
    tool: 'acquire_edit_lease',
    tag,
    summary: 'Acquire the edit lease',
    description:
      'Takes the one edit lease of a framework website (replacing any previous holder) and returns its token and the head version. Every source write needs the current token; re-read files after acquiring.',
    params: WebsitePathParams,
    response: LeaseResult,
    handle: (ctx) => ctx.website!.framework.acquireLease(auditActor(ctx.principal)),
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/source/tree',
    operationId: 'code.listFiles',
    capability: 'source.read',
    rateClass: 'standard',
    tool: 'list_source_files',
    tag,
    summary: 'List typed source files',
    description:
      'Lists the typed source files (pages, components, modules and singletons) of the head or a version, filtered by type or a name glob, optionally with line counts. Start here before reading or editing.',
    params: WebsitePathParams,
    query: TreeQuery,
    response: Page(TreeEntry),
    handle(ctx, { query }) {
      const w = website(ctx, 'code.listFiles')
      const version = w.selectVersion(query)
      const page = pageByKey(typedFiles(version, query), (e) => treeKey(e.file), query.limit ?? LIST_LIMIT_DEFAULT, query.cursor)
      return {
        items: page.items.map(({ file, path }) => {
          const entry = version.files[path]
          const item: { file: FileId; bytes: number; hash: string; lines?: number } = { file, bytes: entry.size, hash: entry.hash }
          if (query.lines === true) item.lines = readTyped(w, version, file)!.lines
          return item
        }),
        nextCursor: page.nextCursor,
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/source/file',
    operationId: 'code.readFile',
    capability: 'source.read',
    rateClass: 'standard',
    tool: 'read_source_file',
    tag,
    summary: 'Read a typed source file',
    description:
      'Returns one typed source file of the head (or target/version) with its bytes, line count and hash. Read a file before editing it.',
    params: WebsitePathParams,
    query: FileQuery,
    toolQuery: { schema: FileToolQuery, toQuery: flattenFile },
    response: TypedFileContent,
    handle(ctx, { query }) {
      const w = website(ctx, 'code.readFile')
      const file = checkFileId(query, 'query')
      const version = w.selectVersion(query)
      const found = readTyped(w, version, file)
      if (found === undefined)
        throw new ApiError('not_found', `${fileLabel(file)} is not a file of version ${version.version}; list files with list_source_files`)
      return found
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/source/file/read',
    operationId: 'code.readFiles',
    readOnly: true,
    capability: 'source.read',
    rateClass: 'standard',
    tool: 'read_source_files',
    tag,
    summary: 'Read up to 50 typed files',
    description: 'Returns up to 50 typed source files of one version in one call; files not in that version are listed under missing.',
    params: WebsitePathParams,
    body: ReadTypedFilesBody,
    response: ReadTypedFilesResult,
    handle(ctx, { body }) {
      const w = website(ctx, 'code.readFiles')
      const version = w.selectVersion(body)
      const files = body.files.map((f, i) => checkFileId(f, `body.files[${i}]`))
      const found = files.map((file) => ({ file, read: readTyped(w, version, file) }))
      return {
        version: version.version,
        files: found.flatMap((f) => (f.read === undefined ? [] : [f.read])),
        missing: found.filter((f) => f.read === undefined).map((f) => f.file),
      }
    },
  }),
  defineOperation({
    method: 'PUT',
    path: '/v1/websites/{websiteId}/source/file',
    operationId: 'code.putFile',
    capability: 'source.write',
    rateClass: 'standard',
    tool: 'put_source_file',
    tag,
    summary: 'Write a typed source file',
    description:
      'Creates or replaces one typed source file as a new head version (201), formatted with prettier; identical content answers 200 changed: false. Code that does not parse is stored as sent with formatError.',
    params: WebsitePathParams,
    body: PutFileBody,
    response: WriteResult,
    status: writeStatus,
    async handle(ctx, { body }) {
      const w = website(ctx, 'code.putFile')
      const file = checkFileId(body.file, 'body.file')
      return writeOutput(await w.framework.putSource(auditActor(ctx.principal), body.leaseToken, file, body.content, body.message), file)
    },
  }),
  defineOperation({
    method: 'DELETE',
    path: '/v1/websites/{websiteId}/source/file',
    operationId: 'code.deleteFile',
    capability: 'source.write',
    rateClass: 'standard',
    tool: 'delete_source_file',
    tag,
    summary: 'Delete a typed source file',
    description: 'Deletes one typed source file as a new head version. Needs the current lease token.',
    params: WebsitePathParams,
    body: DeleteFileBody,
    response: WriteResult,
    async handle(ctx, { body }) {
      const w = website(ctx, 'code.deleteFile')
      const file = checkFileId(body.file, 'body.file')
      const result = await w.framework.deleteSource(auditActor(ctx.principal), body.leaseToken, file, body.message)
      return { version: result.version, changed: result.changed, file }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/source/str-replace',
    operationId: 'code.strReplace',
    capability: 'source.write',
    rateClass: 'standard',
    tool: 'str_replace',
    tag,
    summary: 'Atomic search-and-replace edits',
    description:
      'Applies exact text edits across up to 50 files (200 edits) as one new version; each oldStr must match exactly once (or once ignoring whitespace) unless replaceAll. If any edit fails nothing is written and details.problems says why; dryRun checks without a lease.',
    params: WebsitePathParams,
    body: StrReplaceBody,
    response: StrReplaceResult,
    status: writeStatus,
    async handle(ctx, { body }) {
      const w = website(ctx, 'code.strReplace')
      const edits = body.files.reduce((n, f) => n + f.edits.length, 0)
      if (edits > STR_REPLACE_MAX_EDITS) {
        throw new ApiError('validation', `At most ${STR_REPLACE_MAX_EDITS} edits per call; this one has ${edits}`, { field: 'body.files' })
      }
      const dryRun = body.dryRun === true
      if (!dryRun && body.leaseToken === undefined)
        throw new ApiError('validation', 'body.leaseToken is required unless dryRun is true', { field: 'body.leaseToken' })
      const files = body.files.map((f, i) => ({ file: checkFileId(f.file, `body.files[${i}].file`), edits: f.edits }))
      return w.framework.strReplace(auditActor(ctx.principal), body.leaseToken, files, dryRun)
    },
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/websites/{websiteId}/source/pages/route',
    operationId: 'code.setPageRoute',
    capability: 'source.write',
    rateClass: 'standard',
    tool: 'set_page_route',
    tag,
    summary: "Set a page's route",
    description:
      "Rewrites the route of a page's definition in its source (an AST edit: the rest of the file is untouched). The route is normalised: leading slash, no trailing slash, :param segments, one dynamic segment at most; /_platform/* is reserved.",
    params: WebsitePathParams,
    body: SetRouteBody,
    response: RouteResult,
    status: writeStatus,
    async handle(ctx, { body }) {
      const w = website(ctx, 'code.setPageRoute')
      const file = checkFileId({ type: 'page', name: body.page }, 'body.page')
      const route = normalizeRoute(body.route, 'body.route')
      const result = await w.framework.editDefinition(
        auditActor(ctx.principal),
        body.leaseToken,
        file,
        'route',
        JSON.stringify(route),
        null,
      )
      return { ...writeOutput(result, file), route }
    },
  }),
  defineOperation({
    method: 'PATCH',
    path: '/v1/websites/{websiteId}/source/metadata',
    operationId: 'code.setMetadata',
    capability: 'source.write',
    rateClass: 'standard',
    tool: 'set_metadata',
    tag,
    summary: 'Set page or site metadata',
    description:
      "Replaces the metadata of a page's definition, or without page the site defaults in website_config (created if missing), by editing the source's AST; unrelated code keeps its bytes.",
    params: WebsitePathParams,
    body: SetMetadataBody,
    response: WriteResult,
    status: writeStatus,
    async handle(ctx, { body }) {
      const w = website(ctx, 'code.setMetadata')
      const expression = JSON.stringify(body.metadata, null, 2)
      const file: FileId =
        body.page === undefined ? { type: 'website_config' } : checkFileId({ type: 'page', name: body.page }, 'body.page')
      const create =
        body.page === undefined
          ? `import { defineWebsiteConfig } from '@platform'\n\nexport default defineWebsiteConfig({ metadata: ${expression} })\n`
          : null
      return writeOutput(
        await w.framework.editDefinition(auditActor(ctx.principal), body.leaseToken, file, 'metadata', expression, create),
        file,
      )
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/source/search',
    operationId: 'code.search',
    readOnly: true,
    capability: 'source.read',
    rateClass: 'standard',
    tool: 'search_source',
    tag,
    summary: 'Search source files',
    description:
      'Searches the typed source of the head (or target/version) for text or a regular expression, line by line, with optional context lines, type and name-glob filters. A pattern that runs too long is stopped and refused with 400.',
    params: WebsitePathParams,
    body: SearchBody,
    response: SearchResult,
    async handle(ctx, { body }) {
      const w = website(ctx, 'code.search')
      const version = w.selectVersion(body)
      if (body.isRegex === true) {
        try {
          new RegExp(body.pattern)
        } catch (error) {
          throw new ApiError('validation', `body.pattern is not a valid regular expression: ${(error as Error).message}`, {
            field: 'body.pattern',
          })
        }
      }
      const files = typedFiles(version, body).map(({ file }) => ({ file, content: w.readText(version, file)! }))
      const byLabel = new Map(files.map((f) => [fileLabel(f.file), f.file]))
      const result = await w.framework.search({
        files: files.map((f) => ({ label: fileLabel(f.file), content: f.content })),
        pattern: body.pattern,
        isRegex: body.isRegex === true,
        caseSensitive: body.caseSensitive === true,
        contextLines: body.contextLines ?? 0,
        maxMatchesPerFile: body.maxMatchesPerFile ?? SEARCH_MATCHES_PER_FILE_DEFAULT,
        filesOnly: body.filesOnly === true,
        maxMatches: SEARCH_MATCHES_MAX,
      })
      return {
        matches: result.matches.map((m) => ({ ...m, file: byLabel.get(m.file)! })),
        files: result.files.map((f) => ({ file: byLabel.get(f.file)!, matches: f.matches })),
        truncated: result.truncated,
      }
    },
  }),
  defineOperation({
    method: 'GET',
    path: '/v1/websites/{websiteId}/source/file/diff',
    operationId: 'code.diffFile',
    capability: 'source.read',
    rateClass: 'standard',
    tool: 'diff_source_file',
    tag,
    summary: 'Unified diff of one file',
    description:
      'Returns a unified diff of one typed file between two versions, by default from the published version to the head: what publishing would change in it.',
    params: WebsitePathParams,
    query: DiffQuery,
    toolQuery: { schema: DiffToolQuery, toQuery: flattenFile },
    response: DiffResult,
    handle(ctx, { query }) {
      const w = website(ctx, 'code.diffFile')
      const file = checkFileId(query, 'query')
      const { from, fromNumber, to } = w.compareVersions(query)
      const before = from === null ? '' : (w.readText(from, file) ?? '')
      const after = w.readText(to, file) ?? ''
      if (from !== null && from.files[filePath(file)] === undefined && to.files[filePath(file)] === undefined) {
        throw new ApiError('not_found', `${fileLabel(file)} is in neither version ${fromNumber} nor version ${to.version}`)
      }
      const path = filePath(file)
      const diff =
        before === after
          ? ''
          : createTwoFilesPatch(`a/${path}`, `b/${path}`, before, after, `version ${fromNumber}`, `version ${to.version}`)
      return { file, from: fromNumber, to: to.version, changed: before !== after, diff }
    },
  }),
  defineOperation({
    method: 'POST',
    path: '/v1/websites/{websiteId}/head/check',
    operationId: 'code.check',
    readOnly: true,
    capability: 'source.read',
    rateClass: 'expensive',
    tool: 'check_head',
    tag,
    summary: 'Run the quality gate on the head',
    description:
      'Runs the quality gate on the draft head without changing anything: lint, typecheck, bundle, global CSS, and a server render of every page in an isolate with placeholder content. Fix what diagnostics and renderFailures report before publishing.',
    params: WebsitePathParams,
    response: GateResultSchema,
    async handle(ctx) {
      const w = website(ctx, 'code.check')
      return w.check()
    },
  }),
]
