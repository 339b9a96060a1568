import { Type, type Static } from '@sinclair/typebox'
import { READ_FILES_MAX, SITE_PATH_MAX_BYTES, STATIC_FILES_MAX } from '../limits.js'
import { AuditActor } from './audit.js'
import { ListQuery, StringEnum, Timestamp, named } from './common.js'

export const Path = Type.String({
  minLength: 1,
  maxLength: SITE_PATH_MAX_BYTES,
  description: 'File path relative to the site root, e.g. `index.html` or `css/site.css`',
})
const Message = Type.String({ maxLength: 1000, description: 'Describes the change in the version history' })
const VersionNumber = Type.Integer({ minimum: 1, description: 'A version number' })
const ExpectedHead = Type.Integer({ minimum: 1, description: 'Refuse (409) unless the head is still this version' })
export const Target = StringEnum(['head', 'published'] as const, { description: 'head (draft) or published; default head' })

export const StaticFileInput = Type.Object(
  {
    path: Path,
    content: Type.String({ description: 'File content: text for utf8 (default), or base64' }),
    encoding: Type.Optional(StringEnum(['utf8', 'base64'] as const, { description: 'utf8 (default) or base64' })),
    contentType: Type.Optional(Type.String({ minLength: 3, maxLength: 255, description: 'Content-Type; default from the extension' })),
  },
  { additionalProperties: false },
)

export const DeployBody = Type.Object(
  {
    files: Type.Array(StaticFileInput, {
      description: `Files to add or replace (a website holds at most ${STATIC_FILES_MAX} files: 413 beyond that)`,
    }),
    deletes: Type.Optional(Type.Array(Path, { maxItems: STATIC_FILES_MAX, description: 'Paths to remove from the head' })),
    replace: Type.Optional(Type.Boolean({ description: 'true: the new version holds only the sent files' })),
    expectedHeadVersion: Type.Optional(ExpectedHead),
    message: Type.Optional(Message),
  },
  { additionalProperties: false },
)
export type DeployBodyInput = Static<typeof DeployBody>

/** The multipart deploy after parsing: file parts carry their bytes. */
export const MultipartDeployBody = Type.Object(
  {
    files: Type.Array(
      Type.Object(
        { path: Path, bytes: Type.Unsafe<Buffer>({}), contentType: Type.Optional(Type.String()) },
        { additionalProperties: false },
      ),
    ),
    deletes: Type.Optional(Type.Array(Path, { maxItems: STATIC_FILES_MAX })),
    replace: Type.Optional(Type.Boolean()),
    expectedHeadVersion: Type.Optional(ExpectedHead),
    message: Type.Optional(Message),
  },
  { additionalProperties: false },
)

/** How the multipart deploy looks on the wire (OpenAPI only). */
export const MultipartDeployDoc = Type.Object({
  files: Type.Array(Type.String({ format: 'binary' }), { description: 'Repeated `files` parts; each part’s filename is its path' }),
  deletes: Type.Optional(Type.Array(Type.String(), { description: 'Repeated `deletes` fields' })),
  replace: Type.Optional(Type.Boolean()),
  expectedHeadVersion: Type.Optional(Type.Integer()),
  message: Type.Optional(Type.String()),
})

const Urls = Type.Object({
  draft: Type.Union([Type.String(), Type.Null()], { description: 'The draft host; null for a storage website (no draft)' }),
  published: Type.Union([Type.String(), Type.Null()]),
})

export const Next = Type.Object({
  message: Type.String({ description: 'What to do next' }),
  actions: Type.Array(Type.String()),
})

/** What every source write answers about the head: the version after it, and whether it moved. */
export const VersionChange = {
  version: Type.Integer({ description: 'The head version after the call' }),
  changed: Type.Boolean({ description: 'false when the content equalled the head: no new version' }),
}
/** What a source command did to the head (the core of every write's answer). */
export const VersionChangeSchema = Type.Object(VersionChange)
export type VersionChange = Static<typeof VersionChangeSchema>

/** A bad line of a static site's `_redirects` or `_headers`: the deploy went through, that line does not apply. */
export const RuleWarning = Type.Object({
  file: Type.String({ description: '_redirects or _headers' }),
  line: Type.Integer({ description: 'The line, from 1 (0: the whole file)' }),
  message: Type.String({ description: 'What is wrong with it, and what applies instead' }),
})

/** A route a version's functions answer (static sites with a `functions/` folder). */
export const FunctionRoute = Type.Object({
  route: Type.String({ description: 'The request path pattern, e.g. /api/todos/:id (from [id]) or /files/:path* (from [[path]])' }),
  methods: Type.Array(Type.String(), { description: 'Methods it answers (onRequestGet: GET, …); empty: every method (onRequest)' }),
  file: Type.String({ description: 'The file it comes from, e.g. functions/api/todos/[id].ts' }),
  middleware: Type.Boolean({ description: 'A _middleware file: runs before the routes under its folder' }),
})

/** A type error in a static site's function (its TypeScript against Cloudflare's Workers types): the deploy went through. */
export const FunctionWarning = Type.Object({
  file: Type.String({ description: 'e.g. functions/api/todos/[id].ts' }),
  line: Type.Integer(),
  column: Type.Integer(),
  message: Type.String({ description: "The compiler's message" }),
})

export const CommitResult = named(
  'CommitResult',
  Type.Object({
    ...VersionChange,
    urls: Urls,
    next: Next,
    warnings: Type.Array(RuleWarning, {
      description: "Static sites: each bad line of the head's _redirects and _headers (the rest of those files applies); empty when none",
    }),
    functions: Type.Optional(
      Type.Array(FunctionRoute, {
        description:
          "Static sites with a functions/ folder: the routes the head's functions answer (compiled at deploy); absent when it has none",
      }),
    ),
    functionWarnings: Type.Optional(
      Type.Array(FunctionWarning, {
        description:
          "The head's functions' type errors (TypeScript checked against Cloudflare's Workers types; the code runs anyway, as on Cloudflare): fix them before relying on the code; absent when none",
      }),
    ),
  }),
)

export const SourceSummary = Type.Object({
  websiteId: Type.String(),
  kind: Type.String(),
  headVersion: Type.Integer(),
  publishedVersion: Type.Union([Type.Integer(), Type.Null()]),
  hasUnpublishedChanges: Type.Boolean(),
  fileCount: Type.Integer(),
  totalBytes: Type.Integer(),
  urls: Urls,
})

export const FileEntry = named(
  'SourceFile',
  Type.Object({
    path: Type.String(),
    size: Type.Integer(),
    contentType: Type.String(),
    hash: Type.String({ description: 'sha256 of the content, hex' }),
  }),
)

export const FileContent = named(
  'SourceFileContent',
  Type.Object({
    path: Type.String(),
    content: Type.String(),
    encoding: StringEnum(['utf8', 'base64'] as const, { description: 'utf8 for text, base64 for binary' }),
    contentType: Type.String(),
    size: Type.Integer(),
    hash: Type.String(),
    version: Type.Integer(),
  }),
)

const Selector = {
  target: Type.Optional(Target),
  version: Type.Optional(VersionNumber),
}

export const ListFilesQuery = Type.Object(
  {
    ...ListQuery,
    ...Selector,
    prefix: Type.Optional(Type.String({ maxLength: SITE_PATH_MAX_BYTES, description: 'Only paths starting with this' })),
  },
  { additionalProperties: false },
)

export const ReadFileQuery = Type.Object({ path: Path, ...Selector }, { additionalProperties: false })

export const ReadFilesBody = Type.Object(
  { paths: Type.Array(Path, { minItems: 1, maxItems: READ_FILES_MAX, description: `At most ${READ_FILES_MAX} paths` }), ...Selector },
  { additionalProperties: false },
)

export const ReadFilesResult = Type.Object({
  version: Type.Integer(),
  files: Type.Array(FileContent),
  missing: Type.Array(Type.String(), { description: 'Requested paths that are not in that version' }),
  large: Type.Optional(
    Type.Array(Type.Object({ path: Type.String(), size: Type.Integer(), contentType: Type.String(), hash: Type.String() }), {
      description:
        'Requested files over 1 MiB (the large files of ticket deploys: video, images): not sent inline; read them from the site at /<path>',
    }),
  ),
})

export const VersionEntry = named(
  'Version',
  Type.Object({
    version: Type.Integer(),
    isHead: Type.Boolean(),
    isPublished: Type.Boolean(),
    source: StringEnum(['create', 'deploy', 'delete', 'restore', 'rollback', 'write'] as const),
    message: Type.Union([Type.String(), Type.Null()]),
    fileCount: Type.Integer(),
    totalBytes: Type.Integer(),
    createdAt: Timestamp,
    createdBy: Type.Union([AuditActor, Type.Null()]),
    apiKeyId: Type.Union([Type.String(), Type.Null()]),
    urls: Type.Object({
      preview: Type.Union([Type.String(), Type.Null()], {
        description:
          'This version served exactly as it is, for as long as it exists (v{N}--{subdomain}): never indexed, never cached, behind the site password if any; null while the site serves nothing (trashed, suspended) or for an empty version',
      }),
    }),
  }),
)

export const ChangesQuery = Type.Object(
  {
    ...ListQuery,
    from: Type.Optional(Type.Integer({ minimum: 0, description: 'Version to compare from; default the published one (0: empty)' })),
    to: Type.Optional(VersionNumber),
  },
  { additionalProperties: false },
)

export const ChangesResult = Type.Object({
  from: Type.Integer({ description: '0 stands for an empty site (nothing published)' }),
  to: Type.Integer(),
  items: Type.Array(
    Type.Object({
      path: Type.String(),
      change: StringEnum(['added', 'removed', 'modified'] as const),
      fromSize: Type.Union([Type.Integer(), Type.Null()], { description: 'Bytes in `from` (null: added)' }),
      toSize: Type.Union([Type.Integer(), Type.Null()], { description: 'Bytes in `to` (null: removed)' }),
    }),
  ),
  nextCursor: Type.Union([Type.String(), Type.Null()]),
})

export const DeleteFilesBody = Type.Object(
  {
    paths: Type.Array(Path, { minItems: 1, maxItems: STATIC_FILES_MAX }),
    expectedHeadVersion: Type.Optional(ExpectedHead),
    message: Type.Optional(Message),
  },
  { additionalProperties: false },
)

export const RestoreHeadBody = Type.Object(
  { to: Type.Union([Type.Literal('published'), VersionNumber], { description: '"published" or a version number' }) },
  { additionalProperties: false },
)

export const RollbackBody = Type.Object({ version: VersionNumber }, { additionalProperties: false })

export const TargetBody = Type.Object(Selector, { additionalProperties: false })

export const Diagnostic = Type.Object({
  step: Type.String(),
  severity: StringEnum(['error', 'warning'] as const),
  file: Type.Optional(Type.String()),
  line: Type.Optional(Type.Integer()),
  column: Type.Optional(Type.Integer()),
  message: Type.String(),
})

export const DeploymentStatus = named(
  'DeploymentStatus',
  Type.Object({
    version: Type.Integer(),
    status: StringEnum(['building', 'ready', 'failed'] as const),
    canPublish: Type.Boolean(),
    isHead: Type.Boolean(),
    isPublished: Type.Boolean(),
    routes: Type.Array(Type.String(), { description: 'URL paths this version serves' }),
    createdAt: Timestamp,
    createdBy: Type.Union([AuditActor, Type.Null()]),
    apiKeyId: Type.Union([Type.String(), Type.Null()], { description: 'null for anonymous or background builds' }),
    diagnostics: Type.Array(Diagnostic),
  }),
)

export const DeploymentQuery = Type.Object(Selector, { additionalProperties: false })
