// A file of a version as the hosting plane sends it: its bytes and variants, and its headers prepared once.
import { sha256 } from '../../core/content.js'
import { isHtml } from '../../core/content-type.js'
import type { Content, ContentCache, ContentEntry } from '../content-cache.js'

/** The header every answer from a version's files carries: which version it came from (a rebuild keeps the number). */
export const VERSION_HEADER = 'x-plinth-version'

export type ChannelKind = 'draft' | 'published'

/**
 * A whole header section as one pre-encoded `[name, value]` pair: the value carries the remaining
 * headers after CRLFs, so the hot path writes every header with one call and no string encoding.
 */
export type HeaderBlock = readonly [Buffer, Buffer]

/** Packs `[name, value, name, value, ...]` into one HeaderBlock. Values are never user-controlled CR/LF. */
export function packHeaders(list: readonly string[]): HeaderBlock {
  for (const part of list) if (/[\r\n]/.test(part)) throw new Error(`header text may not contain CR or LF: ${JSON.stringify(part)}`)
  let value = list[1]
  for (let i = 2; i < list.length; i += 2) value += `\r\n${list[i]}: ${list[i + 1]}`
  return [Buffer.from(list[0], 'latin1'), Buffer.from(value, 'latin1')]
}

/** Platform header defaults for HTML (spec: website_config headers, platform defaults). */
const HTML_DEFAULTS = [
  'referrer-policy',
  'strict-origin-when-cross-origin',
  'permissions-policy',
  'camera=(), microphone=(), geolocation=(), browsing-topics=()',
]
const HSTS = ['strict-transport-security', 'max-age=31536000']
export const CACHE = {
  draft: ['cache-control', 'no-store', 'x-robots-tag', 'noindex'],
  published: ['cache-control', 'public, max-age=0, must-revalidate'],
}
/**
 * Headers of a site's `_headers` the platform keeps on the draft host (noindex, never cached) and
 * behind a password (never kept by a shared cache, no cookie of the site's beside the password's).
 */
const RULES_KEPT = {
  draft: new Set(['cache-control', 'x-robots-tag']),
  published: new Set<string>(),
  locked: new Set(['cache-control', 'x-robots-tag', 'set-cookie']),
}

/** `list` (`[name, value, ...]`) with a site's rule headers on top: a name already there takes the rule's value, unless `kept`. */
function withRuleHeaders(list: readonly string[], rules: readonly string[], kept: ReadonlySet<string>): string[] {
  const out = [...list]
  for (let i = 0; i < rules.length; i += 2) {
    const name = rules[i]!
    if (kept.has(name)) continue
    let at = -1
    for (let j = 0; j < out.length; j += 2) if (out[j] === name) at = j
    if (at === -1) out.push(name, rules[i + 1]!)
    else out[at + 1] = rules[i + 1]!
  }
  return out
}

/** The caching fields of a header list (what a 304 sends again). */
const cachingOf = (list: readonly string[]) =>
  list.flatMap((v, i) => (i % 2 === 0 && (v === 'cache-control' || v === 'x-robots-tag') ? [v, list[i + 1]!] : []))
/** A site behind a password: never kept by a shared cache, whichever channel. */
const LOCKED = {
  draft: ['cache-control', 'private, no-store', 'x-robots-tag', 'noindex'],
  published: ['cache-control', 'private, no-store'],
}

/** The variant a response carries: brotli, gzip, or the identity bytes (null). */
export type Encoding = 'br' | 'gzip' | null

const slot = (encoding: Encoding): number => (encoding === 'br' ? 0 : encoding === 'gzip' ? 1 : 2)

/**
 * A file ready to serve: validators known when it is prepared (on its first request), each header
 * block packed the first time a response needs it, the bytes from the content cache (resident, or
 * read from LMDB's memory map on the spot). A cold site's first request prepares one file, not all.
 */
export class PreparedFile {
  readonly html: boolean
  /** A gzip variant exists. */
  readonly gzip: boolean
  /** A brotli variant exists. */
  readonly br: boolean
  /** The strong ETag of the content; variants carry `-gz` / `-br` after the hash. */
  readonly etag: string
  /** The ETag without quotes or suffix: any If-None-Match holding it names this content. */
  readonly etagTag: string
  /** Header blocks by encoding slot, then the same three for a site behind a password. */
  readonly #full: (HeaderBlock | undefined)[] = [undefined, undefined, undefined, undefined, undefined, undefined]
  readonly #notModified: (HeaderBlock | undefined)[] = [undefined, undefined, undefined, undefined, undefined, undefined]
  readonly #range: (HeaderBlock | undefined)[] = [undefined, undefined]
  readonly #policy: readonly string[]
  readonly #lockedPolicy: readonly string[]
  /** What a 304 repeats of each policy: its Cache-Control (and X-Robots-Tag). */
  readonly #caching: readonly string[]
  readonly #lockedCaching: readonly string[]
  readonly #varies: readonly string[]

  constructor(
    readonly path: string,
    readonly size: number,
    readonly contentType: string,
    readonly entry: ContentEntry,
    private readonly contents: ContentCache,
    channel: ChannelKind,
    extra: readonly string[],
    websiteId: string,
    /** The version these bytes belong to (VERSION_HEADER). */
    readonly version: number,
    /** The site's `_headers` for the request path it answers (`[name, value, ...]`; any content type). */
    ruleHeaders: readonly string[] = [],
  ) {
    const html = isHtml(contentType)
    this.html = html
    this.gzip = entry.gzip
    this.br = entry.br
    // The validator covers what a 304 does not resend: the bytes, their type and the site's extra
    // headers. Same bytes under a new Content-Type must not revalidate to the old type.
    const ruled = ruleHeaders.length === 0 ? '' : `\n${ruleHeaders.join('\n')}`
    this.etagTag = sha256(`${entry.hash}\n${contentType}\n${html ? extra.join('\n') : ''}${ruled}`).slice(0, 32)
    this.etag = `"${this.etagTag}"`
    this.#varies = entry.gzip || entry.br ? ['vary', 'Accept-Encoding'] : []
    // Hashed assets never change under their name: cached for a year on the live host.
    const cache =
      channel === 'published' && path.startsWith('_platform/assets/')
        ? ['cache-control', 'public, max-age=31536000, immutable']
        : CACHE[channel]
    const rest = [...(html ? HTML_DEFAULTS : []), ...(html && channel === 'published' ? HSTS : []), ...(html ? extra : [])]
    // With a cache tier in front, a published file may be kept there until a purge names its website
    // (Surrogate-Control for Varnish and Fastly, CDN-Cache-Control for Cloudflare; browsers still revalidate).
    const tier =
      channel === 'published' && contents.sharedTier
        ? [
            'surrogate-control',
            'max-age=31536000',
            'cdn-cache-control',
            'max-age=31536000',
            'xkey',
            websiteId,
            'surrogate-key',
            websiteId,
            'cache-tag',
            websiteId,
          ]
        : []
    this.#policy = withRuleHeaders([...cache, ...tier, ...rest], ruleHeaders, RULES_KEPT[channel])
    this.#lockedPolicy = withRuleHeaders([...LOCKED[channel], ...rest], ruleHeaders, RULES_KEPT.locked)
    this.#caching = cachingOf(this.#policy)
    this.#lockedCaching = cachingOf(this.#lockedPolicy)
  }

  /** The bytes and variants (synchronous; no I/O when resident). */
  read(): Content {
    return this.contents.read(this.entry)
  }

  /** Headers of a 200 or 404 in `encoding` (which must exist); `locked`: the site is behind a password. */
  headers(encoding: Encoding, locked = false): HeaderBlock {
    const i = slot(encoding) + (locked ? 3 : 0)
    return (this.#full[i] ??= packHeaders([
      'content-type',
      this.contentType,
      ...this.#base(this.#tag(encoding), locked),
      ...(encoding === null ? ['accept-ranges', 'bytes'] : ['content-encoding', encoding]),
    ]))
  }

  /** Where the bytes are when the file is streamed from the blob directory (a large file of a ticket deploy); null: in LMDB. */
  get disk(): string | null {
    return this.entry.disk
  }

  /** Headers of a streamed 200 or 404 (identity), as an object: `headers(null)` unpacked. */
  streamHeaders(locked = false): Record<string, string> {
    const list = ['content-type', this.contentType, ...this.#base(this.etag, locked), 'accept-ranges', 'bytes']
    const out: Record<string, string> = {}
    for (let i = 0; i < list.length; i += 2) out[list[i]!] = list[i + 1]!
    return out
  }

  /** Headers of a 304 for `encoding`: RFC 9110 15.4.5, the fields that guide caches, not the representation's others. */
  notModified(encoding: Encoding, locked = false): HeaderBlock {
    const i = slot(encoding) + (locked ? 3 : 0)
    return (this.#notModified[i] ??= packHeaders([
      'etag',
      this.#tag(encoding),
      ...this.#varies,
      ...(locked ? this.#lockedCaching : this.#caching),
    ]))
  }

  /** Headers of a 206 or 416 (identity encoding; the 416 adds no Content-Type of its own). */
  rangeHeaders(locked = false): HeaderBlock {
    return (this.#range[locked ? 1 : 0] ??= packHeaders([
      'content-type',
      this.contentType,
      ...this.#base(this.etag, locked),
      'accept-ranges',
      'bytes',
    ]))
  }

  #tag(encoding: Encoding): string {
    return encoding === null ? this.etag : `"${this.etagTag}-${encoding === 'gzip' ? 'gz' : 'br'}"`
  }

  #base(variantTag: string, locked: boolean): string[] {
    return [
      'etag',
      variantTag,
      ...this.#varies,
      'x-content-type-options',
      'nosniff',
      VERSION_HEADER,
      String(this.version),
      ...(locked ? this.#lockedPolicy : this.#policy),
    ]
  }
}
