import { createHash } from 'node:crypto'
import { brotliCompressSync, gzipSync } from 'node:zlib'
import type { Collected } from '../../actors/analytics/tracker.js'
import type { Registry } from '../../actors/registry.js'
import { packHeaders, type Channel } from '../../actors/website/snapshot.js'
import { TRACKER_BODY_MAX_BYTES, TRACKER_DATA_MAX_BYTES, TRACKER_RATE_LIMIT } from '../../core/limits.js'
import { ApiError, errorBody } from '../../core/errors.js'
import type { Logger } from '../../core/log.js'
import type { RateLimiter } from '../../core/rate-limit.js'
import { networkOf } from '../client-address.js'
import { checkDepth } from '../../core/json-text.js'
import { rateHeaders, rateLimitedError } from '../respond.js'
import type { Exchange } from '../uws.js'

export const TRACKER_SCRIPT_PATH = '/_platform/a.js'
export const COLLECT_PATH = '/_platform/collect'

/**
 * The tracker, as sites load it: `<script defer src="/_platform/a.js" data-website-id="ws_…"></script>`
 * (framework sites get it in every document when website_config.analytics.enabled). A page view on
 * load and on each history navigation, and `window.platform.track(name, data)` for custom events
 * (calls made before it loaded, queued by `@platform`'s `track`, are sent too), all to the same
 * origin's collect endpoint with sendBeacon. No cookies, no storage. `data-tag` tags its events;
 * `platform.identify(id)` sets a distinct id of the site's own choosing.
 */
const SCRIPT = `(function () {
  var d = document, w = window, n = navigator, l = location
  var s = d.currentScript, a = (s && s.dataset) || {}
  var id = a.websiteId, tag = a.tag || '', who = '', last = null
  function body(type) {
    return { type: type, website: id, path: l.pathname, query: l.search, title: d.title, referrer: d.referrer,
      screen: screen.width + 'x' + screen.height, language: n.language || '', tag: tag, id: who }
  }
  function send(p) {
    var text = JSON.stringify(p)
    try { if (n.sendBeacon && n.sendBeacon('/_platform/collect', text)) return } catch (e) {}
    fetch('/_platform/collect', { method: 'POST', body: text, keepalive: true, credentials: 'omit' }).catch(function () {})
  }
  function view() {
    var here = l.pathname + l.search
    if (here === last) return
    last = here
    send(body('pageview'))
  }
  var p = w.platform = w.platform || {}, queued = p.q || []
  p.track = function (name, data) {
    if (typeof name !== 'string' || name === '') return
    var e = body('event')
    e.name = name
    if (data !== undefined) e.data = data
    send(e)
  }
  p.identify = function (value) { who = value == null ? '' : String(value) }
  p.q = []
  var h = history, push = h.pushState, replace = h.replaceState
  h.pushState = function () { var r = push.apply(this, arguments); view(); return r }
  h.replaceState = function () { var r = replace.apply(this, arguments); view(); return r }
  w.addEventListener('popstate', view)
  function start() {
    view()
    for (var i = 0; i < queued.length; i++) p.track(queued[i][0], queued[i][1])
  }
  if (d.visibilityState === 'prerender') d.addEventListener('visibilitychange', function wait() {
    if (d.visibilityState === 'prerender') return
    d.removeEventListener('visibilitychange', wait)
    start()
  })
  else start()
})()
`

const identity = Buffer.from(SCRIPT)
export const TRACKER_SCRIPT = {
  identity,
  gzip: gzipSync(identity, { level: 9 }),
  br: brotliCompressSync(identity),
  etag: `"${createHash('sha256').update(identity).digest('base64url').slice(0, 27)}"`,
}

const S200 = Buffer.from('200 OK')
const S304 = Buffer.from('304 Not Modified')
const SCRIPT_BASE = [
  'content-type',
  'text/javascript; charset=utf-8',
  'cache-control',
  'public, max-age=3600',
  'etag',
  TRACKER_SCRIPT.etag,
  'vary',
  'accept-encoding',
  'x-content-type-options',
  'nosniff',
]
const SCRIPT_HEADERS = {
  identity: packHeaders(SCRIPT_BASE),
  gzip: packHeaders([...SCRIPT_BASE, 'content-encoding', 'gzip']),
  br: packHeaders([...SCRIPT_BASE, 'content-encoding', 'br']),
  notModified: packHeaders(['cache-control', 'public, max-age=3600', 'etag', TRACKER_SCRIPT.etag]),
}

const text = (value: unknown, max: number): string => (typeof value === 'string' ? value.slice(0, max) : '')

/** A header's value when it looks like a place name (region, city from a trusted proxy), else 'unknown'. */
function place(value: string): string {
  const decoded = value.trim()
  return decoded !== '' && decoded.length <= 100 && !/[\u0000-\u001f<>]/.test(decoded) ? decoded : 'unknown'
}

/**
 * `/_platform/a.js` and `POST /_platform/collect` on a site's hosts (spec: Analytics). Collecting reads
 * a small body, checks it and pushes it to the tracker's buffer; nothing is awaited but the body. A
 * draft host's page views are answered alike and never kept (drafts are never tracked).
 */
export class TrackerEndpoint {
  constructor(
    private readonly registry: Registry,
    private readonly limiter: RateLimiter,
    private readonly clientAddress: (exchange: Exchange) => string,
    private readonly log: Logger,
  ) {}

  /** The script: small, cached for an hour and revalidated by ETag; its header blocks packed once, as a static file's. */
  script(exchange: Exchange): void {
    if (exchange.header('if-none-match').includes(TRACKER_SCRIPT.etag)) return exchange.sendBlock(S304, SCRIPT_HEADERS.notModified, null)
    const accept = exchange.header('accept-encoding')
    if (/\bbr\b/.test(accept)) return exchange.sendBlock(S200, SCRIPT_HEADERS.br, TRACKER_SCRIPT.br)
    if (/\bgzip\b/.test(accept)) return exchange.sendBlock(S200, SCRIPT_HEADERS.gzip, TRACKER_SCRIPT.gzip)
    exchange.sendBlock(S200, SCRIPT_HEADERS.identity, TRACKER_SCRIPT.identity)
  }

  collect(exchange: Exchange, channel: Channel): void {
    const address = this.clientAddress(exchange)
    const rate = this.limiter.take(`collect:ip:${networkOf(address)}`, TRACKER_RATE_LIMIT)
    // Every answer says how much of the network's bucket is left (spec: Limits).
    const limits = rateHeaders(rate)
    const done = () => exchange.send(204, { 'cache-control': 'no-store', ...limits })
    const refuse = (error: ApiError, extra: Record<string, string> = {}) =>
      exchange.send(
        error.status,
        { 'cache-control': 'no-store', 'content-type': 'application/json; charset=utf-8', ...limits, ...extra },
        JSON.stringify(errorBody(error)),
      )
    const answer = (status: 400 | 413, message: string) =>
      refuse(new ApiError(status === 400 ? 'validation' : 'payload_too_large', message))
    if (!rate.allowed) return refuse(rateLimitedError(rate, 'Too many analytics events from this network'))
    // What the request says about the visitor is read now, while it is live.
    const host = exchange.host
    const userAgent = exchange.header('user-agent')
    const header = (name: string) => (name === '' ? '' : exchange.header(name))
    const { headers } = this.registry.tracker
    const country = header(headers.country)
    const region = header(headers.region)
    const city = header(headers.city)
    exchange.detach()
    exchange
      .readBody(TRACKER_BODY_MAX_BYTES)
      .then((bytes) => {
        if (exchange.aborted) return
        let body: Record<string, unknown>
        try {
          body = JSON.parse(bytes.toString('utf8')) as Record<string, unknown>
          checkDepth(body, 'body')
        } catch {
          return answer(400, 'Send one event as JSON: {"type": "pageview" | "event", "path": "/", …} (what /_platform/a.js sends)')
        }
        if (body === null || typeof body !== 'object') return answer(400, 'Send one event as a JSON object')
        const type = body.type
        if (type !== 'pageview' && type !== 'event') return answer(400, 'type is "pageview" or "event"')
        if (body.website !== undefined && body.website !== channel.websiteId)
          return answer(
            400,
            `This host serves website ${channel.websiteId}, not ${String(body.website).slice(0, 40)}: use the id in website.analytics`,
          )
        const path = text(body.path, 300)
        if (!path.startsWith('/')) return answer(400, "path is the page's location.pathname, starting with /")
        const name = text(body.name, 50)
        if (type === 'event' && name === '') return answer(400, 'A custom event has a name (1-50 characters): platform.track(name, data)')
        let data = ''
        if (type === 'event' && body.data !== undefined) {
          data = JSON.stringify(body.data)
          if (data.length > TRACKER_DATA_MAX_BYTES)
            return answer(413, `A custom event's data is at most ${TRACKER_DATA_MAX_BYTES} bytes as JSON`)
        }
        // Drafts are never tracked: answered like a kept event, so previews behave the same.
        if (channel.kind !== 'published') return done()
        const screen = text(body.screen, 20)
        const language = text(body.language, 35)
        const tag = text(body.tag, 50)
        const event: Collected = {
          websiteId: channel.websiteId,
          type,
          host: host.slice(0, 253),
          path,
          query: text(body.query, 300).replace(/^\?/, ''),
          title: text(body.title, 300),
          referrer: text(body.referrer, 1000),
          screen: /^\d{1,5}x\d{1,5}$/.test(screen) ? screen : 'unknown',
          language: /^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$/.test(language) ? language : 'unknown',
          tag: /^[\w.-]*$/.test(tag) ? tag : '',
          distinctId: text(body.id, 50),
          name,
          data,
          address,
          userAgent: userAgent.slice(0, 500),
          country: /^[A-Za-z]{2}$/.test(country) ? country.toUpperCase() : 'unknown',
          region: place(region),
          city: place(city),
        }
        if (!this.registry.tracker.collect(event)) {
          this.log.error('analytics tracker buffer is full; an event was refused')
          return refuse(new ApiError('unavailable', 'Analytics is busy; this event was not counted'), { 'retry-after': '1' })
        }
        done()
      })
      .catch((error: unknown) => {
        if (exchange.aborted) return
        if (error instanceof ApiError && error.kind === 'payload_too_large')
          return answer(413, `An analytics event is at most ${TRACKER_BODY_MAX_BYTES} bytes`)
        if (error instanceof ApiError) return refuse(error)
        this.log.error('analytics event could not be read', { error: (error as Error)?.stack ?? String(error) })
      })
  }
}
