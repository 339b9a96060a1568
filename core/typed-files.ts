import { ApiError } from './errors.js'

/**
 * Framework source files are typed (spec: Versions and files): `{type, name}` for pages, components
 * and modules; singletons without a name. Each identity maps to one canonical path in a version's
 * manifest (`pages/home.tsx`, `global.css`, ...), so versions, blobs and the file operations are
 * shared with static sites.
 */

export const NAMED_TYPES = ['page', 'component', 'module', 'function'] as const
export const SINGLETON_TYPES = [
  'global_css',
  'not_found',
  'website_config',
  'custom_head_start',
  'custom_head_end',
  'custom_body_start',
  'custom_body_end',
] as const
export const FILE_TYPES = [...NAMED_TYPES, ...SINGLETON_TYPES] as const

export type NamedType = (typeof NAMED_TYPES)[number]
export type SingletonType = (typeof SINGLETON_TYPES)[number]
export type FileType = (typeof FILE_TYPES)[number]

export interface FileId {
  type: FileType
  name?: string
}

/** Typed file names: 1-255 characters (spec: Limits). */
export const TYPED_NAME_MAX_CHARS = 255

/** Extensions of images, media, fonts and documents: those belong in the asset library. */
const ASSET_EXTENSIONS = new Set(
  'png jpg jpeg gif webp avif svg ico bmp tif tiff heic heif mp4 webm mov avi mkv mp3 wav ogg oga flac m4a aac pdf woff woff2 ttf otf eot zip gz tar psd ai'.split(
    ' ',
  ),
)
/** Source extensions: the type already decides the file's language, so a name never carries one. */
const SOURCE_EXTENSIONS = new Set(['ts', 'tsx', 'js', 'jsx', 'mjs', 'cjs', 'mts', 'cts'])
const FORBIDDEN_CHARS = /[<>:"|?*\\#]/

const SINGLETON_PATHS: Record<SingletonType, string> = {
  global_css: 'global.css',
  not_found: 'not_found.tsx',
  website_config: 'website.config.ts',
  custom_head_start: 'custom/head_start.html',
  custom_head_end: 'custom/head_end.html',
  custom_body_start: 'custom/body_start.html',
  custom_body_end: 'custom/body_end.html',
}
const NAMED_PREFIX: Record<NamedType, [string, string]> = {
  page: ['pages/', '.tsx'],
  component: ['components/', '.tsx'],
  module: ['modules/', '.ts'],
  // A function (Cloudflare Pages Functions' conventions): `api/todos/[id]` answers /api/todos/:id, `_middleware` runs first.
  function: ['functions/', '.ts'],
}

/** The file's label in messages and search results: `page:blog/post`, `global_css`. */
export function fileLabel(file: FileId): string {
  return file.name === undefined ? file.type : `${file.type}:${file.name}`
}

/**
 * Checks an identity; anything else is a 400 naming the broken rule. Assets get a message pointing
 * at the asset library.
 */
export function checkFileId(file: { type: string; name?: string }, field: string): FileId {
  const fail = (why: string): never => {
    throw new ApiError('validation', `${field}: ${why}`, { field })
  }
  if (!(FILE_TYPES as readonly string[]).includes(file.type)) {
    fail(`type "${file.type}" is not a source file type; use one of ${FILE_TYPES.join(', ')}`)
  }
  const type = file.type as FileType
  if ((SINGLETON_TYPES as readonly string[]).includes(type)) {
    if (file.name !== undefined) fail(`${type} is a singleton and takes no name`)
    return { type }
  }
  const name = file.name
  if (name === undefined || name === '') return fail(`a ${type} needs a name (1-${TYPED_NAME_MAX_CHARS} characters)`)
  if (name.length > TYPED_NAME_MAX_CHARS) fail(`name is longer than ${TYPED_NAME_MAX_CHARS} characters`)
  if (name.startsWith('/')) fail('name may not start with "/"')
  if (name.split('/').some((s) => s === '.' || s === '..')) fail('name may not contain "." or ".." segments')
  if (name.split('/').some((s) => s === '')) fail('name may not contain empty segments ("//" or a trailing "/")')
  const bad = FORBIDDEN_CHARS.exec(name)
  if (bad !== null) fail(`name may not contain ${JSON.stringify(bad[0])} (none of < > : " | ? * \\ #)`)
  if (/[\u0000-\u001f\u007f]/.test(name)) fail('name may not contain control characters')
  const ext = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase()
  if (ext !== undefined && ASSET_EXTENSIONS.has(ext)) {
    fail(
      `"${name}" looks like an asset (.${ext}); images and other assets live in the asset library (POST /v1/websites/{id}/assets), never in source`,
    )
  }
  // The type fixes the file's language; a source extension in the name would be doubled
  // (pages/foo.tsx.tsx) and imported as @components/Foo.tsx.
  if (ext !== undefined && SOURCE_EXTENSIONS.has(ext)) {
    fail(
      `leave the extension out of the name: "${name.slice(0, -ext.length - 1)}" (the ${type} type already makes it ${NAMED_PREFIX[type as NamedType][1]})`,
    )
  }
  return { type, name }
}

/** The canonical manifest path of a typed file. */
export function filePath(file: FileId): string {
  if (file.name === undefined) return SINGLETON_PATHS[file.type as SingletonType]
  const [prefix, suffix] = NAMED_PREFIX[file.type as NamedType]
  return `${prefix}${file.name}${suffix}`
}

/** The identity behind a manifest path, or null for a path no typed file maps to. */
export function fileIdOf(path: string): FileId | null {
  for (const [type, singleton] of Object.entries(SINGLETON_PATHS)) if (singleton === path) return { type: type as SingletonType }
  for (const [type, [prefix, suffix]] of Object.entries(NAMED_PREFIX)) {
    if (path.startsWith(prefix) && path.endsWith(suffix) && path.length > prefix.length + suffix.length) {
      return { type: type as NamedType, name: path.slice(prefix.length, -suffix.length) }
    }
  }
  return null
}

/** The stored Content-Type of a typed file. */
export function fileContentType(file: FileId): string {
  if (file.type === 'global_css') return 'text/css; charset=utf-8'
  if (file.type.startsWith('custom_')) return 'text/html; charset=utf-8'
  return file.type === 'module' || file.type === 'function' || file.type === 'website_config'
    ? 'text/x-typescript; charset=utf-8'
    : 'text/tsx; charset=utf-8'
}

/** How a write of this type is formatted: TypeScript, CSS, or stored verbatim (raw HTML singletons). */
export function formatterOf(file: FileId): 'typescript' | 'css' | null {
  if (file.type === 'global_css') return 'css'
  if (file.type.startsWith('custom_')) return null
  return 'typescript'
}

/**
 * A page route, normalised: leading slash, no trailing slash, static and `:param` segments, at most one
 * dynamic segment, `/_platform/*` reserved. Throws a 400 naming the rule.
 */
export function normalizeRoute(raw: string, field: string): string {
  const fail = (why: string): never => {
    throw new ApiError('validation', `${field} ${JSON.stringify(raw)}: ${why}`, { field })
  }
  const trimmed = raw.trim()
  if (trimmed === '' || trimmed === '/') return '/'
  if (/[?#\s]/.test(trimmed)) fail('a route is a path only: no spaces, query or fragment')
  const segments = trimmed.split('/').filter((s) => s !== '')
  let dynamic = 0
  for (const segment of segments) {
    if (segment.startsWith(':')) {
      dynamic++
      if (!/^:[A-Za-z_][A-Za-z0-9_]*$/.test(segment)) fail(`"${segment}" is not a parameter: use ":name" (letters, digits, _)`)
    } else if (segment === '.' || segment === '..' || !/^[A-Za-z0-9._~!$&'()*+,;=@%-]+$/.test(segment)) {
      fail(`"${segment}" is not a valid path segment`)
    }
  }
  if (dynamic > 1) fail('a route may have at most one dynamic segment')
  const route = '/' + segments.join('/')
  if (route === '/_platform' || route.startsWith('/_platform/')) fail('/_platform/* is reserved for the platform')
  return route
}
