import { ApiError } from './errors.js'
import { SITE_PATH_MAX_BYTES } from './limits.js'

/**
 * Site file paths are relative to the site root, `/`-separated, e.g. `index.html` or
 * `blog/post/index.html`. `./` segments are dropped and text is NFC-normalised; anything that could
 * name a place outside the site, or two files with one name, is refused with a 400 naming the path.
 */
export function normalizeSitePath(raw: string, field: string): string {
  const fail = (why: string): never => {
    throw new ApiError('validation', `${field} ${JSON.stringify(raw)} ${why}`, { field, path: raw })
  }
  if (typeof raw !== 'string' || raw.length === 0) fail('is empty')
  if (raw.includes('\0')) fail('contains a NUL character')
  if (/[\u0001-\u001f\u007f]/.test(raw)) fail('contains a control character')
  if (raw.includes('\\')) fail('contains a backslash; use / between folders')
  if (raw.startsWith('/') || /^[A-Za-z]:/.test(raw)) fail('is absolute; give it relative to the site root, e.g. "index.html"')
  const segments = raw.normalize('NFC').split('/')
  const kept: string[] = []
  for (const [i, segment] of segments.entries()) {
    if (segment === '.' && i < segments.length - 1) continue
    if (segment === '..') fail('contains ".."; paths may not leave the site')
    if (segment === '' || segment === '.') fail('has an empty segment (a doubled, leading or trailing /)')
    kept.push(segment)
  }
  const path = kept.join('/')
  if (Buffer.byteLength(path) > SITE_PATH_MAX_BYTES) fail(`is longer than ${SITE_PATH_MAX_BYTES} bytes`)
  return path
}

/** Normalises a list of paths (`fieldOf(i)` names each); a path listed twice is a 400 naming it. */
export function normalizeSitePaths(raw: readonly string[], fieldOf: (index: number) => string): string[] {
  const seen = new Set<string>()
  return raw.map((text, i) => {
    const field = fieldOf(i)
    const path = normalizeSitePath(text, field)
    if (seen.has(path)) throw new ApiError('validation', `${field} "${path}" appears twice in this request`, { field, path })
    seen.add(path)
    return path
  })
}
