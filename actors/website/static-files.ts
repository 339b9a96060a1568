import { compressVariants, sha256, shouldCompress } from '../../core/content.js'
import { contentTypeFor, withCharset } from '../../core/content-type.js'
import { ApiError } from '../../core/errors.js'
import { STATIC_FILE_MAX_BYTES, STATIC_FILES_MAX } from '../../core/limits.js'
import { normalizeSitePaths } from '../../core/site-paths.js'
import type { StoreReader } from '../../core/store/reader.js'
import { fileTooLarge, LARGE_STATIC_FILES_HINT, tooManyFiles, type Upload } from './commits.js'

export interface RawFile {
  path: string
  bytes: Buffer
  contentType?: string
}

const CONTENT_TYPE = /^[\w!#$&^.+-]+\/[\w!#$&^.+-]+(\s*;.*)?$/

/**
 * Checks, hashes and precompresses files before they enter a website's mailbox: paths normalised
 * (400 naming the path), at most 1 MiB each (413 naming the limit), no path twice, content types
 * from the extension unless given. Content already stored is not compressed again.
 */
export async function prepareUploads(store: StoreReader, files: readonly RawFile[], field: string): Promise<Upload[]> {
  if (files.length > STATIC_FILES_MAX) throw tooManyFiles(`this deploy sends ${files.length}`)
  const paths = normalizeSitePaths(
    files.map((f) => f.path),
    (i) => `${field}[${i}].path`,
  )
  const prepared = files.map((file, i) => {
    const path = paths[i]
    if (file.bytes.length > STATIC_FILE_MAX_BYTES)
      throw fileTooLarge(JSON.stringify(path), file.bytes.length, path, LARGE_STATIC_FILES_HINT)
    if (file.contentType !== undefined && !CONTENT_TYPE.test(file.contentType)) {
      throw new ApiError('validation', `${field}[${i}].contentType "${file.contentType}" is not a media type such as text/html`, {
        field: `${field}[${i}].contentType`,
      })
    }
    const contentType = file.contentType === undefined ? contentTypeFor(path) : withCharset(file.contentType)
    return { path, bytes: file.bytes, hash: sha256(file.bytes), contentType }
  })
  return Promise.all(
    prepared.map(async (file) => {
      // Content stored before keeps its variants; content stored without them (framework source keeps
      // none) gets them now, so every served copy is precompressed.
      const complete = store.hasBlob(file.hash) && (!shouldCompress(file.bytes, file.contentType) || store.hasVariant(file.hash, 'gzip'))
      return complete
        ? { ...file, fresh: false, variants: null }
        : { ...file, fresh: true, variants: await compressVariants(file.bytes, file.contentType) }
    }),
  )
}

/** Standard base64; the final padding may be left out, as many encoders do. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}(?:==)?|[A-Za-z0-9+/]{3}=?)?$/

/** Bytes of a JSON file entry: utf8 text, or base64 (a 400 naming the path otherwise). */
export function decodeContent(content: string, encoding: 'utf8' | 'base64' | undefined, field: string): Buffer {
  if (encoding !== 'base64') return Buffer.from(content, 'utf8')
  const compact = content.replace(/\s+/g, '')
  if (!BASE64.test(compact)) throw new ApiError('validation', `${field} is not valid base64`, { field })
  return Buffer.from(compact, 'base64')
}
