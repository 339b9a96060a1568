import compressible from 'compressible'
import mime from 'mime-types'

const FALLBACK = 'application/octet-stream'

/** The Content-Type for a path from its extension, with `charset=utf-8` for text types. */
export function contentTypeFor(path: string): string {
  const type = mime.lookup(path)
  if (type === false) return FALLBACK
  return withCharset(type)
}

/** Adds `charset=utf-8` to textual types that lack a charset. */
export function withCharset(contentType: string): string {
  if (/;\s*charset=/i.test(contentType)) return contentType
  const base = contentType.split(';')[0].trim().toLowerCase()
  const textual = base.startsWith('text/') || mime.charset(base) === 'UTF-8' || /\+(json|xml)$|\/(javascript|json|xml)$/.test(base)
  return textual ? `${contentType}; charset=utf-8` : contentType
}

/** True for types worth compressing (HTML, CSS, JS, JSON, SVG, ...). */
export function isCompressible(contentType: string): boolean {
  return compressible(contentType.split(';')[0].trim()) === true
}

/** True for HTML documents. */
export function isHtml(contentType: string): boolean {
  return /^text\/html\b/i.test(contentType)
}

/** True when a file of this type should read back as UTF-8 text (if its bytes are valid UTF-8). */
export function isTextual(contentType: string): boolean {
  return /;\s*charset=utf-8/i.test(withCharset(contentType))
}
