import { sha256 } from '../../core/content.js'
import { isHtml } from '../../core/content-type.js'
import type { Routing } from '../../render/gate.js'
import type { ManifestEntry } from '../../core/schemas/records.js'
import type { Content, ContentCache, ContentEntry } from '../content-cache.js'
import { siteRoutes } from './routes.js'

/** What a snapshot serves: a version's files (static) or a build's output (framework). */
export interface ServedFiles {
  version: number
  /** Identifies this exact content: a rebuilt version gets a new key. */
  key: string
  files: Readonly<Record<string, ManifestEntry>>
  /** website_config redirects and extra HTML headers (framework builds). */
  routing?: Routing
}

/** A prepared redirect: status line, headers and a small body. */
export interface PreparedRedirect {
  readonly status: Buffer
  readonly headers: HeaderBlock
  readonly body: Buffer
}

const REDIRECT_TEXT: Record<number, string> = { 301: 'Moved Permanently', 302: 'Found', 303: 'See Other', 307: 'Temporary Redirect', 308: 'Permanent Redirect' }

function redirectResponse(status: number, location: string, channel: ChannelKind): PreparedRedirect {
  return {
    status: Buffer.from(`${status} ${REDIRECT_TEXT[status]}`),
    headers: packHeaders(['location', location, 'content-type', 'text/plain; charset=utf-8', ...CACHE[channel]]),
    body: Buffer.from(`Redirecting to ${location}\n`),
  }
}

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

/**
 * A file ready to serve: every header list computed when the snapshot is prepared; the bytes come
 * from the content cache (`read`), resident or read from LMDB's memory map on the spot.
 */
export interface PreparedFile {
  readonly path: string
  readonly size: number
  readonly contentType: string
  readonly html: boolean
  /** A gzip variant exists. */
  readonly gzip: boolean
  /** A brotli variant exists. */
  readonly br: boolean
  /** The bytes and variants (synchronous; no I/O when resident). */
  read(): Content
  /** The strong ETag of the content; variants carry `-gz` / `-br` after the hash. */
  readonly etag: string
  /** The ETag without quotes or suffix: any If-None-Match holding it names this content. */
  readonly etagTag: string
  readonly headers: { readonly identity: HeaderBlock; readonly gzip: HeaderBlock | null; readonly br: HeaderBlock | null }
  /** Headers of a 304, per variant. */
  readonly notModified: { readonly identity: HeaderBlock; readonly gzip: HeaderBlock | null; readonly br: HeaderBlock | null }
  /** Headers of a 206 or 416 (identity encoding, without Content-Type for 416). */
  readonly rangeHeaders: HeaderBlock
}

/** Platform header defaults for HTML (spec: website_config headers, platform defaults). */
const HTML_DEFAULTS = ['referrer-policy', 'strict-origin-when-cross-origin', 'permissions-policy', 'camera=(), microphone=(), geolocation=(), browsing-topics=()']
const HSTS = ['strict-transport-security', 'max-age=31536000']
const CACHE = {
  draft: ['cache-control', 'no-store', 'x-robots-tag', 'noindex'],
  published: ['cache-control', 'public, max-age=0, must-revalidate'],
}

function prepare(path: string, size: number, contentType: string, content: ContentEntry, contents: ContentCache, channel: ChannelKind, extra: readonly string[]): PreparedFile {
  const html = isHtml(contentType)
  // The validator covers what a 304 does not resend: the bytes, their type and the site's extra
  // headers. Same bytes under a new Content-Type must not revalidate to the old type.
  const tag = sha256(`${content.hash}\n${contentType}\n${html ? extra.join('\n') : ''}`).slice(0, 32)
  const etag = `"${tag}"`
  const varies = content.gzip || content.br
  // Hashed assets never change under their name: cached for a year on the live host.
  const cache = channel === 'published' && path.startsWith('_platform/assets/') ? ['cache-control', 'public, max-age=31536000, immutable'] : CACHE[channel]
  const policy = [...cache, ...(html ? HTML_DEFAULTS : []), ...(html && channel === 'published' ? HSTS : []), ...(html ? extra : [])]
  const base = (variantTag: string) => ['etag', variantTag, ...(varies ? ['vary', 'Accept-Encoding'] : []), 'x-content-type-options', 'nosniff', ...policy]
  // RFC 9110 15.4.5: a 304 carries the fields that guide caches, not the representation's others.
  const revalidated = (variantTag: string) => ['etag', variantTag, ...(varies ? ['vary', 'Accept-Encoding'] : []), ...CACHE[channel]]
  const full = (variantTag: string, encoding: string | null) => [
    'content-type',
    contentType,
    ...base(variantTag),
    ...(encoding === null ? ['accept-ranges', 'bytes'] : ['content-encoding', encoding]),
  ]
  return {
    path,
    size,
    contentType,
    html,
    gzip: content.gzip,
    br: content.br,
    read: () => contents.read(content),
    etag,
    etagTag: tag,
    headers: {
      identity: packHeaders(full(etag, null)),
      gzip: content.gzip ? packHeaders(full(`"${tag}-gz"`, 'gzip')) : null,
      br: content.br ? packHeaders(full(`"${tag}-br"`, 'br')) : null,
    },
    notModified: {
      identity: packHeaders(revalidated(etag)),
      gzip: content.gzip ? packHeaders(revalidated(`"${tag}-gz"`)) : null,
      br: content.br ? packHeaders(revalidated(`"${tag}-br"`)) : null,
    },
    rangeHeaders: packHeaders(['content-type', contentType, ...base(etag), 'accept-ranges', 'bytes']),
  }
}

/**
 * An immutable view of one version on one channel: request path to prepared file. A site swaps
 * from one snapshot to another by one pointer assignment, so no request sees a mix of versions.
 */
export class Snapshot {
  readonly version: number
  readonly key: string
  readonly channel: ChannelKind
  /** Decoded request path to file. */
  readonly files: ReadonlyMap<string, PreparedFile>
  /** The site's `404.html`, served with status 404 for missing paths. */
  readonly notFound: PreparedFile | null
  /** Exact-path redirects, and `/prefix/*` splats (longest prefix first). */
  readonly #redirects = new Map<string, PreparedRedirect>()
  readonly #splats: { prefix: string; to: string; status: number }[] = []
  readonly #entries: ContentEntry[]
  #cache: ContentCache | null

  constructor(version: ServedFiles, channel: ChannelKind, cache: ContentCache) {
    this.version = version.version
    this.key = version.key
    this.channel = channel
    this.#cache = cache
    const prepared = new Map<string, PreparedFile>()
    this.#entries = []
    // website_config headers come on top of the platform defaults (they cannot replace them).
    const extra = Object.entries(version.routing?.headers ?? {}).flat()
    for (const [path, entry] of Object.entries(version.files)) {
      const content = cache.acquire(entry.hash)
      this.#entries.push(content)
      prepared.set(path, prepare(path, entry.size, entry.contentType, content, cache, channel, extra))
    }
    for (const redirect of version.routing?.redirects ?? []) {
      if (redirect.from.endsWith('/*')) this.#splats.push({ prefix: redirect.from.slice(0, -1), to: redirect.to, status: redirect.status })
      else if (!this.#redirects.has(redirect.from)) this.#redirects.set(redirect.from, redirectResponse(redirect.status, redirect.to, channel))
    }
    this.#splats.sort((a, b) => b.prefix.length - a.prefix.length)
    const files = new Map<string, PreparedFile>()
    for (const [route, path] of siteRoutes(prepared.keys())) files.set(route, prepared.get(path)!)
    this.files = files
    this.notFound = prepared.get('404.html') ?? null
  }

  /** The redirect for a request path, if website_config declares one (checked before files). */
  redirect(path: string): PreparedRedirect | undefined {
    const exact = this.#redirects.get(path)
    if (exact !== undefined || this.#splats.length === 0) return exact
    for (const splat of this.#splats) {
      // The path was decoded for lookup: encode the remainder again, so no %0D%0A becomes a header line.
      if (path.startsWith(splat.prefix)) return redirectResponse(splat.status, splat.to.replace(':splat', encodeURI(path.slice(splat.prefix.length))), this.channel)
    }
    return undefined
  }

  /** Lets go of the content this snapshot held; call once nothing can reach it any more. */
  dispose(): void {
    const cache = this.#cache
    if (cache === null) return
    this.#cache = null
    for (const entry of this.#entries) cache.release(entry)
  }
}

/**
 * What a hostname points at: swapped, never mutated in place. A channel is pointed at what it will
 * serve (`point`); its snapshot is prepared on its first request (synchronously: content comes from
 * LMDB's memory map), so a site whose draft host nobody visits never prepares a draft snapshot.
 */
export class Channel {
  #snapshot: Snapshot | null = null
  #pending: { served: ServedFiles; cache: ContentCache } | null = null
  /**
   * Why a draft channel of a live site serves nothing (its page says so): the head has no files, or
   * no build of it is ready yet. null otherwise, and always on published channels, whose empty
   * answer must not tell a visitor that a site exists.
   */
  waiting: 'empty' | 'building' | null = null
  /** Served since the registry's last look (its actor is not idle); set by every request. */
  used = true

  constructor(readonly kind: ChannelKind) {}

  /** The snapshot this channel serves, prepared now if it was only pointed at; null: nothing. */
  get snapshot(): Snapshot | null {
    this.used = true
    const pending = this.#pending
    if (pending !== null) {
      this.#pending = null
      this.#snapshot = new Snapshot(pending.served, this.kind, pending.cache)
    }
    return this.#snapshot
  }

  /** The key of what the channel serves or will serve (null: nothing), without preparing it. */
  get key(): string | null {
    return this.#pending?.served.key ?? this.#snapshot?.key ?? null
  }

  /** Points the channel at `served` (prepared on first request), or at nothing; what it held before is let go. */
  point(served: ServedFiles | null, cache: ContentCache): void {
    if (served !== null && served.key === this.key) return
    this.#pending = served === null ? null : { served, cache }
    const previous = this.#snapshot
    this.#snapshot = null
    previous?.dispose()
  }
}
