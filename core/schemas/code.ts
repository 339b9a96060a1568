import { Type, type Static } from '@sinclair/typebox'
import { READ_FILES_MAX, SEARCH_CONTEXT_MAX, SEARCH_MATCHES_PER_FILE_MAX, STR_REPLACE_MAX_EDITS, STR_REPLACE_MAX_FILES } from '../limits.js'
import { FILE_TYPES, TYPED_NAME_MAX_CHARS } from '../typed-files.js'
import { ListQuery, StringEnum, named } from './common.js'
import { Diagnostic, Target, VersionChange } from './source.js'

const FileTypeSchema = StringEnum(FILE_TYPES, {
  description: 'page, component, module, function (named) or a singleton: global_css, not_found, website_config, custom_*',
})
const Name = Type.String({
  minLength: 1,
  maxLength: TYPED_NAME_MAX_CHARS,
  description: 'Name of a page, component or module (e.g. home, blog/post, Button)',
})

export const FileIdSchema = named(
  'SourceFileId',
  Type.Object({ type: FileTypeSchema, name: Type.Optional(Name) }, { additionalProperties: false }),
)

const LeaseToken = Type.String({
  minLength: 1,
  maxLength: 200,
  description: 'From acquire_edit_lease; a replaced token is refused with 409 Invalid edit lease',
})
const Message = Type.Optional(Type.String({ maxLength: 1000 }))
const Selector = {
  target: Type.Optional(Target),
  version: Type.Optional(Type.Integer({ minimum: 1 })),
}

export const LeaseResult = Type.Object({ leaseToken: Type.String(), headVersion: Type.Integer() })

export const FileQuery = Type.Object({ type: FileTypeSchema, name: Type.Optional(Name), ...Selector }, { additionalProperties: false })
/** FileQuery as MCP callers send it: the file's identity as `file`, like every other tool. */
export const FileToolQuery = Type.Object({ file: FileIdSchema, ...Selector }, { additionalProperties: false })

export const TreeQuery = Type.Object(
  {
    ...ListQuery,
    ...Selector,
    type: Type.Optional(FileTypeSchema),
    nameGlob: Type.Optional(Type.String({ minLength: 1, maxLength: 300, description: 'Glob on names, e.g. blog/* or **/Card*' })),
    lines: Type.Optional(Type.Boolean({ description: 'Include line counts' })),
  },
  { additionalProperties: false },
)

export const TreeEntry = Type.Object({
  file: FileIdSchema,
  bytes: Type.Integer(),
  lines: Type.Optional(Type.Integer()),
  hash: Type.String(),
})

export const TypedFileContent = named(
  'TypedSourceFile',
  Type.Object({
    file: FileIdSchema,
    content: Type.String(),
    bytes: Type.Integer(),
    lines: Type.Integer(),
    hash: Type.String(),
    version: Type.Integer(),
  }),
)

export const FormatError = Type.Object({
  message: Type.String(),
  line: Type.Union([Type.Integer(), Type.Null()]),
  column: Type.Union([Type.Integer(), Type.Null()]),
})

export const WriteResult = named(
  'SourceWriteResult',
  Type.Object({
    ...VersionChange,
    file: FileIdSchema,
    formatted: Type.Optional(Type.Boolean({ description: 'true when formatting changed the text' })),
    formatError: Type.Optional(FormatError),
  }),
)

export const PutFileBody = Type.Object(
  { leaseToken: LeaseToken, file: FileIdSchema, content: Type.String({ description: 'The whole file' }), message: Message },
  { additionalProperties: false },
)

export const DeleteFileBody = Type.Object({ leaseToken: LeaseToken, file: FileIdSchema, message: Message }, { additionalProperties: false })

export const ReadTypedFilesBody = Type.Object(
  { files: Type.Array(FileIdSchema, { minItems: 1, maxItems: READ_FILES_MAX }), ...Selector },
  { additionalProperties: false },
)

export const ReadTypedFilesResult = Type.Object({
  version: Type.Integer(),
  files: Type.Array(TypedFileContent),
  missing: Type.Array(FileIdSchema),
})

const EditSchema = Type.Object(
  {
    oldStr: Type.String({ description: 'Text to replace: must match exactly once (or once ignoring whitespace) unless replaceAll' }),
    newStr: Type.String(),
    replaceAll: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
)

export const StrReplaceBody = Type.Object(
  {
    leaseToken: Type.Optional(LeaseToken),
    files: Type.Array(
      Type.Object(
        { file: FileIdSchema, edits: Type.Array(EditSchema, { minItems: 1, maxItems: STR_REPLACE_MAX_EDITS }) },
        { additionalProperties: false },
      ),
      {
        minItems: 1,
        maxItems: STR_REPLACE_MAX_FILES,
      },
    ),
    dryRun: Type.Optional(Type.Boolean({ description: 'Check the edits without a lease and write nothing' })),
  },
  { additionalProperties: false },
)
export type StrReplaceInput = Static<typeof StrReplaceBody>

export const StrReplaceResult = Type.Object({
  version: Type.Integer(),
  changed: Type.Boolean({ description: 'A new version was written; for a dry run, one would be' }),
  dryRun: Type.Boolean(),
  files: Type.Array(Type.Object({ file: FileIdSchema, formatted: Type.Boolean(), formatError: Type.Optional(FormatError) })),
})

export const SetRouteBody = Type.Object(
  { leaseToken: LeaseToken, page: Name, route: Type.String({ minLength: 1, maxLength: 500, description: 'e.g. /blog/:slug' }) },
  { additionalProperties: false },
)

export const Metadata = Type.Object(
  {
    title: Type.Optional(Type.String()),
    titleTemplate: Type.Optional(Type.String()),
    description: Type.Optional(Type.String()),
    language: Type.Optional(Type.String()),
    favicon: Type.Optional(Type.String()),
    openGraph: Type.Optional(
      Type.Object(
        {
          title: Type.Optional(Type.String()),
          description: Type.Optional(Type.String()),
          image: Type.Optional(Type.String()),
          type: Type.Optional(Type.String()),
          siteName: Type.Optional(Type.String()),
        },
        { additionalProperties: false },
      ),
    ),
    twitter: Type.Optional(
      Type.Object(
        {
          card: Type.Optional(StringEnum(['summary', 'summary_large_image'] as const)),
          site: Type.Optional(Type.String()),
          image: Type.Optional(Type.String()),
          title: Type.Optional(Type.String()),
          description: Type.Optional(Type.String()),
        },
        { additionalProperties: false },
      ),
    ),
  },
  // The same fields as @platform's Metadata type: an unknown key is a 400 now, not a typecheck error later.
  { additionalProperties: false, description: 'Strings may use {{ data.x.y }} and {{ params.name }} templates' },
)

export const SetMetadataBody = Type.Object(
  { leaseToken: LeaseToken, page: Type.Optional(Name), metadata: Metadata },
  { additionalProperties: false },
)

export const RouteResult = Type.Composite([WriteResult, Type.Object({ route: Type.String() })])

export const SearchBody = Type.Object(
  {
    pattern: Type.String({ minLength: 1, maxLength: 1000 }),
    isRegex: Type.Optional(Type.Boolean()),
    caseSensitive: Type.Optional(Type.Boolean()),
    nameGlob: Type.Optional(Type.String({ minLength: 1, maxLength: 300 })),
    type: Type.Optional(FileTypeSchema),
    contextLines: Type.Optional(Type.Integer({ minimum: 0, maximum: SEARCH_CONTEXT_MAX })),
    maxMatchesPerFile: Type.Optional(Type.Integer({ minimum: 1, maximum: SEARCH_MATCHES_PER_FILE_MAX })),
    filesOnly: Type.Optional(Type.Boolean()),
    ...Selector,
  },
  { additionalProperties: false },
)

export const SearchResult = Type.Object({
  matches: Type.Array(
    Type.Object({
      file: FileIdSchema,
      line: Type.Integer(),
      column: Type.Integer(),
      text: Type.String(),
      before: Type.Optional(Type.Array(Type.String())),
      after: Type.Optional(Type.Array(Type.String())),
    }),
  ),
  files: Type.Array(Type.Object({ file: FileIdSchema, matches: Type.Integer() })),
  truncated: Type.Boolean(),
})

export const DiffQuery = Type.Object(
  {
    type: FileTypeSchema,
    name: Type.Optional(Name),
    from: Type.Optional(Type.Integer({ minimum: 0, description: 'Default: the published version (0: empty)' })),
    to: Type.Optional(Type.Integer({ minimum: 1, description: 'Default: the head' })),
  },
  { additionalProperties: false },
)

/** DiffQuery as MCP callers send it. */
export const DiffToolQuery = Type.Object(
  {
    file: FileIdSchema,
    from: DiffQuery.properties.from,
    to: DiffQuery.properties.to,
  },
  { additionalProperties: false },
)

export const DiffResult = Type.Object({
  file: FileIdSchema,
  from: Type.Integer(),
  to: Type.Integer(),
  changed: Type.Boolean(),
  diff: Type.String({ description: 'Unified diff; empty when unchanged' }),
})

/** Spec: Quality gate result. `renders` is null when rendering was not attempted (an earlier step failed). */
export const GateResultSchema = named(
  'GateResult',
  Type.Object({
    version: Type.Integer(),
    ok: Type.Boolean(),
    message: Type.Optional(Type.String()),
    diagnostics: Type.Array(Diagnostic),
    renderFailures: Type.Array(
      Type.Object({ pageId: Type.String(), route: Type.Union([Type.String(), Type.Null()]), message: Type.String() }),
    ),
    pages: Type.Array(
      Type.Object({
        name: Type.String(),
        route: Type.Union([Type.String(), Type.Null()]),
        renders: Type.Union([Type.Boolean(), Type.Null()], {
          description: 'Whether the page rendered; null when rendering was not attempted because an earlier step failed',
        }),
      }),
    ),
    timings: Type.Record(Type.String(), Type.Integer(), { description: 'Milliseconds per step, and total' }),
  }),
)
export type GateResult = Static<typeof GateResultSchema>
