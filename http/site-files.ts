// A snapshot's files answered: redirects, routes, the site's 404, encodings, validators, ranges, streamed large files and the page-view count.
import { createReadStream } from 'node:fs'
import type { Logger } from '../core/log.js'
import { packHeaders, type Channel, type Encoding, type PreparedFile, type Snapshot } from '../actors/website/snapshot.js'
import type { CountedPages } from '../actors/analytics/beacon-tally.js'
import type { Exchange } from './uws.js'
import { parseRange } from './range.js'

export const platformPage = (title: string, text: string) =>
  Buffer.from(
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">' +
      `<meta name="viewport" content="width=device-width,initial-scale=1"><title>${title}</title></head>` +
      '<body style="font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem">' +
      `<main><h1>${title}</h1><p>${text}</p></main></body></html>`,
  )
/** Unknown host, or a site that serves nothing now: says nothing about whether a site exists. */
export const NOT_FOUND_PAGE = platformPage('Site not found', 'There is no published site at this address.')
/** A live site's draft host with nothing to show yet (Channel.waiting). */
export const EMPTY_DRAFT_PAGE = platformPage(
  'Nothing here yet',
  'This draft has no files yet. Deploy files or write a page through the API (or MCP), then reload.',
)
export const UNBUILT_DRAFT_PAGE = platformPage(
  'Not built yet',
  'No build of this draft is ready yet: the first build is still running, or it failed. The deployment status in the API says which; reload once it is ready.',
)
/** A path the serving site does not have, when it brings no 404.html of its own. */
const PAGE_NOT_FOUND_PAGE = platformPage('Page not found', 'This site has no page at this address.')
export const NOT_FOUND_HEADERS = packHeaders([
  'content-type',
  'text/html; charset=utf-8',
  'cache-control',
  'no-store',
  'x-content-type-options',
  'nosniff',
  'x-robots-tag',
  'noindex',
])

export const S404 = Buffer.from('404 Not Found')
const S200 = Buffer.from('200 OK')
const S206 = Buffer.from('206 Partial Content')
const S304 = Buffer.from('304 Not Modified')
const S416 = Buffer.from('416 Range Not Satisfiable')

/** What counts a published page view (the beacon; on a serving thread, its own tallies sent to the beacon). */
export interface PageViews {
  readonly enabled: boolean
  /** The header a trusted proxy sets to the visitor's country; '' when none. */
  readonly countryHeader: string
  count(pages: CountedPages, page: number, host: string, referer: string, userAgent: string, country: string): void
}

/**
 * Picks the variant for an Accept-Encoding header: brotli, then gzip, then identity. The common
 * header (no q-values) is decided by substring; q-values are parsed only when present.
 */
export function pickEncoding(acceptEncoding: string, file: PreparedFile): Encoding {
  if (acceptEncoding === '' || (!file.br && !file.gzip)) return null
  if (!acceptEncoding.includes(';')) {
    if (file.br && acceptEncoding.includes('br')) return 'br'
    if (file.gzip && acceptEncoding.includes('gzip')) return 'gzip'
    return null
  }
  let br = 0
  let gzip = 0
  for (const part of acceptEncoding.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';')
    const qParam = params.find((p) => p.trim().startsWith('q='))
    const q = qParam === undefined ? 1 : Number(qParam.trim().slice(2)) || 0
    if (name === 'br' || name === '*') br = Math.max(br, q)
    if (name === 'gzip' || name === '*') gzip = Math.max(gzip, q)
  }
  if (file.br && br > 0 && br >= gzip) return 'br'
  if (file.gzip && gzip > 0) return 'gzip'
  return null
}

/**
 * The files of a snapshot, for a GET or HEAD whose path is not one of the platform's own routes:
 * one map lookup finds the prepared file, everything else was computed when it was prepared. The
 * hosting plane calls it on the main thread and each serving thread calls its own (serve-thread.ts).
 */
export class SiteFiles {
  constructor(
    private readonly views: PageViews,
    private readonly log: Logger,
  ) {}

  serve(exchange: Exchange, channel: Channel, snapshot: Snapshot, locked: boolean): void {
    let path = exchange.path
    if (path.includes('%')) {
      try {
        path = decodeURIComponent(path) // once; the result is only a map key, so it can never leave the site
      } catch {
        path = ''
      }
    }
    let route = snapshot.route(path)
    let file = route?.file
    let status = S200
    // The site's rules (none: nothing to pay): first match in order; without `!`, only where no file is.
    const rules = snapshot.rules
    if (rules !== null) {
      const hit = rules.match(path, route !== undefined, exchange.query)
      if (hit?.kind === 'redirect') {
        const redirect = snapshot.redirectFor(hit)
        return exchange.sendBlock(redirect.status, redirect.headers, redirect.body)
      }
      if (hit?.kind === 'file') {
        // A rewrite serves the target's file under this URL; a 404 rule serves it as this path's not-found page.
        const target = snapshot.routeAs(hit.path, path)
        if (hit.status === 200) route = target
        else if (target !== undefined) {
          route = undefined
          status = S404
        }
        file = target?.file
      }
    }
    // Another spelling of a page's path (`/about.html`, `/blog`): one URL per page (routes.ts).
    if (route?.movedTo != null) {
      const moved = snapshot.movedRedirect(route, exchange.query)
      return exchange.sendBlock(moved.status, moved.headers, moved.body)
    }
    if (file === undefined) {
      const notFound = snapshot.notFound(path)
      if (notFound === null) return exchange.sendBlock(S404, NOT_FOUND_HEADERS, PAGE_NOT_FOUND_PAGE)
      file = notFound
      status = S404
    }
    const encoding = pickEncoding(exchange.header('accept-encoding'), file)
    if (status === S200) {
      const ifNoneMatch = exchange.header('if-none-match')
      if (ifNoneMatch !== '' && (ifNoneMatch.includes(file.etagTag) || ifNoneMatch.trim() === '*')) {
        return exchange.sendBlock(S304, file.notModified(encoding, locked), null)
      }
      const range = exchange.header('range')
      if (range !== '') {
        const ifRange = exchange.header('if-range')
        if (ifRange === '' || ifRange.includes(file.etagTag)) return this.#range(exchange, file, range, locked)
      }
    }
    // The bytes first: a read that fails (content let go a moment ago) leaves the view uncounted for whoever answers instead.
    const content = file.disk === null ? file.read() : null
    // The edge beacon: a published HTML page view, counted into counters prepared ahead (read when
    // folded, off this path). A 404 is not a page view (any path a scanner makes up would become a stored row).
    if (status === S200 && file.html && channel.kind === 'published' && exchange.method === 'GET' && this.views.enabled)
      this.#count(exchange, snapshot, route!.page)
    // A large file of a ticket deploy lives in the blob directory: streamed, off the synchronous path.
    if (content === null) return this.#stream(exchange, status === S404 ? 404 : 200, file.streamHeaders(locked), file, 0, file.size - 1)
    return exchange.sendBlock(
      status,
      file.headers(encoding, locked),
      encoding === 'br' ? content.br! : encoding === 'gzip' ? content.gzip! : content.identity,
    )
  }

  /** A published page view, for the beacon's counters (the headers read while the request is live). */
  #count(exchange: Exchange, snapshot: Snapshot, page: number): void {
    this.views.count(
      snapshot,
      page,
      exchange.host,
      exchange.header('referer'),
      exchange.header('user-agent'),
      this.views.countryHeader === '' ? '' : exchange.header(this.views.countryHeader),
    )
  }

  /** Bytes `start` to `end` of a file in the blob directory, read as a stream with backpressure. */
  #stream(exchange: Exchange, status: number, headers: Record<string, string>, file: PreparedFile, start: number, end: number): void {
    if (end < start) return exchange.send(status, headers, '')
    const path = file.disk!
    // Asynchronous from here: uWS learns of an abort, and only captured headers stay readable.
    exchange.detach()
    void exchange
      .sendStream(status, headers, createReadStream(path, { start, end, highWaterMark: 256 * 1024 }), end - start + 1)
      .catch((error: unknown) => this.log.error('a site file could not be streamed', { path, error: String(error) }))
  }

  #range(exchange: Exchange, file: PreparedFile, header: string, locked: boolean): void {
    const range = parseRange(header, file.size)
    const disk = file.disk !== null
    if (range === null)
      return disk
        ? this.#stream(exchange, 200, file.streamHeaders(locked), file, 0, file.size - 1)
        : exchange.sendBlock(S200, file.headers(null, locked), file.read().identity)
    if (range === 'unsatisfiable') return exchange.sendBlock(S416, file.rangeHeaders(locked), '', ['content-range', `bytes */${file.size}`])
    const [start, end] = range
    if (disk)
      return this.#stream(
        exchange,
        206,
        { ...file.streamHeaders(locked), 'content-range': `bytes ${start}-${end}/${file.size}` },
        file,
        start,
        end,
      )
    exchange.sendBlock(S206, file.rangeHeaders(locked), file.read().identity.subarray(start, end + 1), [
      'content-range',
      `bytes ${start}-${end}/${file.size}`,
    ])
  }
}
