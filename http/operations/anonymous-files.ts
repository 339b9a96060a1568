// The files of an anonymous create or update: their body schema, and their checks against the kind and the anonymous limits.
import { Type } from '@sinclair/typebox'
import type { AnonymousFiles } from '../../actors/anonymous/credentials.js'
import { fileTooLarge } from '../../actors/website/commits.js'
import { decodeContent } from '../../actors/website/static-files.js'
import { ApiError } from '../../core/errors.js'
import { ANON_FILE_MAX_BYTES, ANON_FILES_MAX, ANON_TREE_MAX_BYTES } from '../../core/limits.js'
import { StringEnum } from '../../core/schemas/common.js'
import { FileIdSchema } from '../../core/schemas/code.js'
import { checkFileId, fileLabel } from '../../core/typed-files.js'
import { check } from '../pipeline.js'

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
/** The `files` of a create or update body, checked per kind by `readFiles`. */
export const Files = Type.Array(Type.Unknown(), {
  description: `Static: {path, content, encoding?, contentType?}; framework: {file: {type, name?}, content}; at most ${ANON_FILES_MAX} files, 1 MiB each, 5 MiB in all`,
})

/** The files of a create or update, checked against the kind and the anonymous limits; with their decoded size. */
export function readFiles(
  kind: 'static' | 'framework' | 'storage',
  files: unknown[] | undefined,
): { files: AnonymousFiles; bytes: number } {
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
