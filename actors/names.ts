import { randomToken } from '../core/ids.js'
import { RANDOM_SUFFIX_CHARS, SLUG_MAX_CHARS, SUBDOMAIN_GENERATED_MAX_CHARS, SUBDOMAIN_LABEL_MAX_CHARS } from '../core/limits.js'
import { ApiError } from '../core/errors.js'
import { isPlatformLabel } from '../core/hostnames.js'

const LABEL = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/

/** Lowercase ASCII words joined by single hyphens, at most `maxChars` long; '' when nothing is left. */
export function slugify(text: string, maxChars: number): string {
  const base = text
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
  return base.slice(0, maxChars).replace(/-+$/g, '')
}

/** `base` with a random suffix, the whole within `maxChars`. */
export function withRandomSuffix(base: string, maxChars: number): string {
  const room = maxChars - RANDOM_SUFFIX_CHARS - 1
  const head = base.slice(0, room).replace(/-+$/g, '')
  const suffix = randomToken(RANDOM_SUFFIX_CHARS)
  return head === '' ? suffix : `${head}-${suffix}`
}

/** The slug derived from a website name (before any collision suffix). */
export function slugFromName(name: string): string {
  return slugify(name, SLUG_MAX_CHARS) || 'site'
}

/** The subdomain label derived from a slug, within the generated-label bound of 40 characters. */
export function labelFromSlug(slug: string): string {
  return slugify(slug, SUBDOMAIN_GENERATED_MAX_CHARS) || 'site'
}

export { SUBDOMAIN_GENERATED_MAX_CHARS, SLUG_MAX_CHARS }

/**
 * Checks a label a caller chose. `draft--` would shadow another site's draft host, and `reserved`
 * holds labels the platform uses itself (the API host when it sits under the site domain).
 */
export function assertUsableLabel(label: string, reserved: ReadonlySet<string>, field: string): void {
  if (label.length < 1 || label.length > SUBDOMAIN_LABEL_MAX_CHARS || !LABEL.test(label)) {
    throw new ApiError('validation', `${field} must be 1-${SUBDOMAIN_LABEL_MAX_CHARS} lowercase letters, digits and inner hyphens`, {
      field,
    })
  }
  if (isPlatformLabel(label)) {
    throw new ApiError(
      'validation',
      `${field} may not start with "draft--" or "v<number>--": those prefixes name draft hosts and versions' own addresses`,
      { field },
    )
  }
  if (reserved.has(label)) {
    throw new ApiError('validation', `${field} "${label}" is reserved by the platform; choose another`, { field })
  }
}

/** Attempts at a free random suffix before giving up (a collision is ~1 in 2 billion per try). */
const SUFFIX_ATTEMPTS = 8

/** `base` if `isFree`, else `base` with random suffixes until one is free. */
export function freeName(base: string, maxChars: number, isFree: (name: string) => boolean): string {
  if (isFree(base)) return base
  for (let i = 0; i < SUFFIX_ATTEMPTS; i++) {
    const candidate = withRandomSuffix(base, maxChars)
    if (isFree(candidate)) return candidate
  }
  throw new ApiError('conflict', 'could not find a free name; pass an explicit slug and subdomain')
}
