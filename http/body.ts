import busboy from 'busboy'
import { ApiError } from '../core/errors.js'
import { parseJsonText } from '../core/json-text.js'

/*
 * Request body parsers, for every operation: JSON (the default) and multipart/form-data (operations
 * that declare `bodyMedia`). They turn bytes into the shape the operation's schema validates, and
 * every malformed body into a 400 that says where.
 */

/** The JSON body, undefined when empty; malformed JSON, or text that is not UTF-8, is a 400 that says where. */
export function parseJsonBody(bytes: Buffer | undefined, contentType: string): unknown {
  if (bytes === undefined || bytes.length === 0) return undefined
  if (contentType !== '' && !/^application\/([\w.+-]*\+)?json\b/i.test(contentType)) {
    throw new ApiError('validation', `Content-Type must be application/json for this operation, got ${contentType}`, { field: 'body' })
  }
  return parseJsonText(bytes, 'body')
}

/**
 * busboy for a multipart/form-data body, the one way every door makes it. Names in a part's
 * Content-Disposition (`name`, `filename`) are UTF-8 (RFC 7578 4.2: browsers, fetch and curl send a
 * name's UTF-8 bytes as they are); busboy would read them as Latin-1, so `‥/x` would arrive as `â\x80¥/x`.
 * `filename*=` (RFC 5987) carries its own charset and busboy decodes it, preferring it to `filename`.
 */
export function multipartReader(
  contentType: string,
  options: Omit<busboy.BusboyConfig, 'headers' | 'defParamCharset'> = {},
): busboy.Busboy {
  return busboy({ ...options, headers: { 'content-type': contentType }, defParamCharset: 'utf8' })
}

/** A file part of a multipart body. `contentType` is set only when the part names a specific one and the path has no extension. */
export interface MultipartFile {
  path: string
  bytes: Buffer
  contentType?: string
}

export interface MultipartShape {
  /** The name of the repeated file parts (`files`). */
  files: string
  /** Text fields and how to read them: a boolean (`true`/`false`), an integer, one string, or every value in order. */
  fields: Record<string, 'boolean' | 'integer' | 'string' | 'strings'>
  limits: { fileBytes: number; files: number }
  /** The error for a file over `limits.fileBytes`. */
  fileTooLarge(filename: string): ApiError
  /** The error for more than `limits.files` files. */
  tooManyFiles(): ApiError
}

/**
 * A parser of multipart/form-data into `{[files]: MultipartFile[], ...fields}`: the shape the
 * operation's body schema then validates (a value that does not read as its kind is passed on as
 * text, so validation names it).
 */
export function multipartParser(shape: MultipartShape): (bytes: Buffer, contentType: string) => Promise<unknown> {
  const known = Object.keys(shape.fields).join(', ')
  return (bytes, contentType) => {
    if (!/^multipart\/form-data\b/i.test(contentType)) {
      return Promise.reject(
        new ApiError(
          'validation',
          `Content-Type must be multipart/form-data with repeated "${shape.files}" parts, got ${contentType || 'none'}`,
          { field: 'body' },
        ),
      )
    }
    return new Promise((resolve, reject) => {
      const files: MultipartFile[] = []
      const out: Record<string, unknown> = { [shape.files]: files }
      const lists = new Map<string, string[]>()
      let failed = false
      const fail = (error: ApiError) => {
        if (!failed) reject(error)
        failed = true
      }
      let parser: busboy.Busboy
      try {
        parser = multipartReader(contentType, {
          preservePath: true,
          limits: {
            fileSize: shape.limits.fileBytes,
            files: shape.limits.files,
            fields: shape.limits.files + 10,
            parts: 2 * shape.limits.files + 10,
          },
        })
      } catch (error) {
        reject(new ApiError('validation', `multipart body cannot be read: ${(error as Error).message}`, { field: 'body' }))
        return
      }
      parser.on('file', (name, stream, info) => {
        if (name !== shape.files) {
          stream.resume()
          fail(
            new ApiError('validation', `multipart part "${name}" is not known; send files as repeated "${shape.files}" parts`, {
              field: `body.${name}`,
            }),
          )
          return
        }
        // Bytes that are not UTF-8 decode to U+FFFD: the file would be stored at some other path.
        if (info.filename?.includes('\uFFFD')) {
          stream.resume()
          fail(
            new ApiError(
              'validation',
              `the filename of a "${name}" part is not UTF-8 (${JSON.stringify(info.filename)}); send paths as UTF-8 (RFC 7578), or as filename*=UTF-8''<percent-encoded path> (RFC 5987)`,
              { field: `body.${name}`, path: info.filename },
            ),
          )
          return
        }
        const chunks: Buffer[] = []
        // A body that ends inside a file part (a truncated upload) errors the part's stream.
        stream.on('error', (error: Error) =>
          fail(
            new ApiError(
              'validation',
              `multipart body cannot be read: ${error.message} (the body ends inside the part of ${JSON.stringify(info.filename)}); send the whole body`,
              { field: 'body' },
            ),
          ),
        )
        stream.on('data', (chunk: Buffer) => chunks.push(chunk))
        stream.on('limit', () => fail(shape.fileTooLarge(info.filename ?? '')))
        stream.on('close', () => {
          const given = info.mimeType
          const specific = given && given !== 'application/octet-stream' && given !== 'text/plain' ? given : undefined
          files.push({
            path: info.filename ?? '',
            bytes: Buffer.concat(chunks),
            ...(specific && !/\.\w+$/.test(info.filename ?? '') ? { contentType: specific } : {}),
          })
        })
      })
      parser.on('field', (name, value) => {
        const kind = shape.fields[name]
        if (kind === 'boolean') out[name] = value === 'true' ? true : value === 'false' ? false : value
        else if (kind === 'integer') out[name] = /^\d+$/.test(value) ? Number(value) : value
        else if (kind === 'string') out[name] = value
        else if (kind === 'strings') lists.set(name, [...(lists.get(name) ?? []), value])
        // A part without a filename arrives as a field.
        else if (name === shape.files) {
          fail(
            new ApiError(
              'validation',
              `a "${name}" part needs a filename: the path of the file in the site, e.g. Content-Disposition: form-data; name="${name}"; filename="index.html"`,
              { field: `body.${name}` },
            ),
          )
        } else fail(new ApiError('validation', `multipart field "${name}" is not known (${known})`, { field: `body.${name}` }))
      })
      parser.on('filesLimit', () => fail(shape.tooManyFiles()))
      parser.on('error', (error: Error) =>
        fail(new ApiError('validation', `multipart body cannot be read: ${error.message}`, { field: 'body' })),
      )
      parser.on('close', () => {
        for (const [name, values] of lists) out[name] = values
        if (!failed) resolve(out)
      })
      parser.end(bytes)
    })
  }
}
