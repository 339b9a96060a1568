import { createReadStream } from 'node:fs'
import type { Beacon } from '../actors/analytics/beacon.js'
import type { Registry } from '../actors/registry.js'
import { packHeaders, type Channel, type Encoding, type PreparedFile, type Snapshot } from '../actors/website/snapshot.js'
import type { Exchange } from './uws.js'
import { parseRange } from './range.js'
import { formName, type FormEndpoint } from './platform/forms.js'
import { COLLECT_PATH, TRACKER_SCRIPT_PATH, type TrackerEndpoint } from './platform/tracker.js'
import type { SharingPlane } from './platform/storage.js'
import { MediaPlane } from './platform/media.js'
import type { PasswordDoor } from './platform/password.js'

const platformPage = (title: string, text: string) =>
  Buffer.from(
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="robots" content="noindex">' +
      `<meta name="viewport" content="width=device-width,initial-scale=1"><title>${title}</title></head>` +
      '<body style="font-family:system-ui,sans-serif;max-width:32rem;margin:4rem auto;padding:0 1rem">' +
      `<h1>${title}</h1><p>${text}</p></body></html>`,
  )
/** Unknown host, or a site that serves nothing now: says nothing about whether a site exists. */
const NOT_FOUND_PAGE = platformPage('Site not found', 'There is no published site at this address.')
/** A live site's draft host with nothing to show yet (Channel.waiting). */
const EMPTY_DRAFT_PAGE = platformPage(
  'Nothing here yet',
  'This draft has no files yet. Deploy files or write a page through the API (or MCP), then reload.',
)
const UNBUILT_DRAFT_PAGE = platformPage(
  'Not built yet',
  'No build of this draft is ready yet: the first build is still running, or it failed. The deployment status in the API says which; reload once it is ready.',
)
/** A path the serving site does not have, when it brings no 404.html of its own. */
const PAGE_NOT_FOUND_PAGE = platformPage('Page not found', 'This site has no page at this address.')
const NOT_FOUND_HEADERS = packHeaders([
  'content-type',
  'text/html; charset=utf-8',
  'cache-control',
  'no-store',
  'x-content-type-options',
  'nosniff',
  'x-robots-tag',
  'noindex',
])
const METHOD_HEADERS = packHeaders(['allow', 'GET, HEAD', 'content-type', 'text/plain; charset=utf-8', 'cache-control', 'no-store'])

const S200 = Buffer.from('200 OK')
const S206 = Buffer.from('206 Partial Content')
const S304 = Buffer.from('304 Not Modified')
const S404 = Buffer.from('404 Not Found')
const S405 = Buffer.from('405 Method Not Allowed')
const S416 = Buffer.from('416 Range Not Satisfiable')

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
 * The hosting plane: requests whose Host is a site hostname (or any host that is not the API's).
 * One map lookup finds the channel, one more the prepared file; everything else was computed when
 * the snapshot was built. No I/O, no awaits. Sites that are unpublished, deleted or suspended, and
 * unknown hosts, get a small 404 page and nothing of the site.
 */
export class HostingPlane {
  readonly beacon: Beacon
  readonly countryHeader: string

  constructor(
    private readonly registry: Registry,
    /** The /_platform/ routes that are not files of the site: forms, the tracker's script and collect endpoint. */
    private readonly forms: FormEndpoint,
    private readonly tracker: TrackerEndpoint,
    /** Storage websites' hosts: shared files, folder pages, zips. */
    private readonly sharing: SharingPlane,
    /** Assets and resized images under /_platform/media and /_platform/img. */
    private readonly media: MediaPlane,
    /** Sites behind a password: their page, form and Basic credentials. */
    private readonly password: PasswordDoor,
  ) {
    this.beacon = registry.beacon
    this.countryHeader = registry.beacon.countryHeader
  }

  /** The channel for a Host, if it is a site hostname. */
  channel(host: string): Channel | undefined {
    return this.registry.channelForHost(host)
  }

  /** The platform's 404 page: unknown host, or a site that serves nothing now. */
  notFound(exchange: Exchange): void {
    exchange.sendBlock(S404, NOT_FOUND_HEADERS, NOT_FOUND_PAGE)
  }

  serve(exchange: Exchange, channel: Channel): void {
    // A website's non-primary hostname: everything moves to the primary domain, path and query kept.
    if (channel.redirectOrigin !== null) return this.#toPrimary(exchange, channel.redirectOrigin)
    // A site behind a password (one Map lookup, none while no site has one) lets in a visitor with its cookie or Basic credentials.
    const passwords = this.registry.sitePasswords
    const locked = passwords.locked(channel.websiteId)
    if (locked) {
      const admitted = passwords.admits(channel.websiteId, exchange.header('cookie'), exchange.header('authorization'))
      if (admitted !== true) return this.password.handle(exchange, channel, admitted, () => this.serve(exchange, channel))
    }
    if (channel.sharing) return this.sharing.serve(exchange, channel)
    const snapshot = channel.snapshot
    if (snapshot === null)
      return exchange.sendBlock(
        S404,
        NOT_FOUND_HEADERS,
        channel.waiting === null ? NOT_FOUND_PAGE : channel.waiting === 'empty' ? EMPTY_DRAFT_PAGE : UNBUILT_DRAFT_PAGE,
      )
    const method = exchange.method
    if (method !== 'GET' && method !== 'HEAD') {
      // Off the GET path: the platform's own POST routes (forms).
      if (method === 'POST') {
        if (exchange.path === COLLECT_PATH) return this.tracker.collect(exchange, channel)
        const form = formName(exchange.path)
        if (form !== null) return this.forms.handle(exchange, channel, snapshot, form)
      }
      return exchange.sendBlock(
        S405,
        METHOD_HEADERS,
        'Method not allowed: sites answer GET and HEAD (and POST to /_platform/forms/<name> and /_platform/collect)\n',
      )
    }
    let path = exchange.path
    if (path.startsWith('/_platform/')) {
      if (path === TRACKER_SCRIPT_PATH) return this.tracker.script(exchange)
      const media = MediaPlane.matches(path)
      if (media !== null) return this.media.serve(exchange, channel, media)
    }
    if (path.includes('%')) {
      try {
        path = decodeURIComponent(path) // once; the result is only a map key, so it can never leave the site
      } catch {
        path = ''
      }
    }
    const redirect = snapshot.redirect(path)
    if (redirect !== undefined) return exchange.sendBlock(redirect.status, redirect.headers, redirect.body)
    const route = snapshot.route(path)
    let file = route?.file
    let status = S200
    if (file === undefined) {
      const notFound = snapshot.notFound
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
    // The edge beacon: a published HTML page view, counted into counters prepared ahead (read when
    // folded, off this path). A 404 is not a page view (any path a scanner makes up would become a stored row).
    if (status === S200 && file.html && channel.kind === 'published' && method === 'GET' && this.beacon.enabled)
      this.#count(exchange, snapshot, route!.page)
    // A large file of a ticket deploy lives in the blob directory: streamed, off the synchronous path.
    if (file.disk !== null) return this.#stream(exchange, status === S404 ? 404 : 200, file.streamHeaders(locked), file, 0, file.size - 1)
    const content = file.read()
    return exchange.sendBlock(
      status,
      file.headers(encoding, locked),
      encoding === 'br' ? content.br! : encoding === 'gzip' ? content.gzip! : content.identity,
    )
  }

  #toPrimary(exchange: Exchange, origin: string): void {
    const query = exchange.query
    // 308 keeps a POST a POST (a form sent to an old address still arrives); GET and HEAD get 301.
    exchange.send(
      exchange.method === 'GET' || exchange.method === 'HEAD' ? 301 : 308,
      {
        location: `${origin}${exchange.path}${query === '' ? '' : `?${query}`}`,
        'cache-control': 'public, max-age=300',
        'content-type': 'text/plain; charset=utf-8',
      },
      `Moved to ${origin}\n`,
    )
  }

  /** A published page view, for the beacon's counters (the headers read while the request is live). */
  #count(exchange: Exchange, snapshot: Snapshot, page: number): void {
    this.beacon.count(
      snapshot,
      page,
      exchange.host,
      exchange.header('referer'),
      exchange.header('user-agent'),
      this.countryHeader === '' ? '' : exchange.header(this.countryHeader),
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
      .catch((error: unknown) => this.registry.log.error('a site file could not be streamed', { path, error: String(error) }))
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
