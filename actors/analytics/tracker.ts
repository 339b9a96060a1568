import { createHash, randomBytes } from 'node:crypto'
import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { parseUserAgent } from 'detect-browser'
import { isbot } from 'isbot'
import { Flusher } from './flusher.js'
import type { Clock } from '../../core/clock.js'
import { TRACKER_BUFFER_MAX, TRACKER_VALUES_PER_HOUR, TRACKER_VISIT_GAP_MS } from '../../core/limits.js'
import type { TrackerEvent } from '../../core/store/store.js'
import type { AnalyticsStore } from './tables.js'
import { deviceOf, referrerOf } from './beacon.js'
import { B, E, flushCells, METRICS, S, T, U, V, type Visit } from './tracker-cells.js'
import { PAGE_DIMENSIONS } from './tracker-dimensions.js'
import { channelOf, domainOf, utmOf } from './tracker-sources.js'

const MINUTE = 60 * 1000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

/** One collected page view or event, as the collect endpoint checked it. */
export interface Collected {
  websiteId: string
  type: 'pageview' | 'event'
  host: string
  path: string
  query: string
  title: string
  referrer: string
  screen: string
  language: string
  tag: string
  distinctId: string
  /** Custom events: the name and the JSON text of `data` ('' without). */
  name: string
  data: string
  /** Who, only to hash: the client's address and user agent; never stored. */
  address: string
  userAgent: string
  country: string
  region: string
  city: string
}

/** A visitor's day: the page values they have been counted as a visitor of (their hash changes tomorrow). */
interface VisitorDay {
  day: number
  pages: Set<string>
}

/** Per-visitor-day values remembered for `visitors` of page dimensions; a visitor past it counts no more new ones that day. */
const PAGES_PER_VISITOR_DAY = 200

interface Agent {
  browser: string
  os: string
  device: string
}

/**
 * The first-party tracker's store (spec: Analytics): page views and custom events that sites' own
 * `/_platform/a.js` sends to `/_platform/collect`. Collecting is one push to a buffer; a flush every
 * 250 ms hashes each visitor (site, address and user agent under a salt that changes every UTC day,
 * the way Plausible does: no cookie, nothing that names a person is kept), attributes page views to
 * visits (a 30-minute gap starts a new one), and writes in one commit the raw events (kept
 * `retentionDays`) and hourly and daily rollups per dimension (kept for good), which queries read.
 */
export class Tracker {
  #buffer: Collected[] = []
  #at: number[] = []
  #seq = 0
  readonly #salts = new Map<number, Buffer>()
  /** `${websiteId}\0${visitor}` to the visit in progress (ended ones dropped after the gap). */
  readonly #visits = new Map<string, Visit>()
  readonly #visitorDays = new Map<string, VisitorDay>()
  /** Per website, per minute: page views, events, countries (realtime; kept an hour). */
  readonly #minutes = new Map<string, Map<number, { views: number; events: number; countries: Map<string, number> }>>()
  /** `${websiteId} ${hour} ${dimension}` to the values stored so far that hour (bounded). */
  readonly #values = new Map<string, Set<string>>()
  /** Websites known to have tracker data (true once seen; a lookup otherwise). */
  readonly #sites = new Set<string>()
  readonly #flusher = new Flusher(() => this.#flush())
  #flushes = 0
  #lastSweep = 0
  readonly retentionDays: number
  readonly headers: { readonly country: string; readonly region: string; readonly city: string }

  constructor(
    private readonly store: AnalyticsStore,
    private readonly clock: Clock,
    options: {
      /** Raw events older than this many days are deleted (PLINTH_ANALYTICS_RETENTION_DAYS). */
      retentionDays: number
      /** Trusted headers naming the visitor's country, region and city ('' when none). */
      headers: { country: string; region: string; city: string }
    },
  ) {
    this.retentionDays = options.retentionDays
    this.headers = options.headers
  }

  /** Takes one event; false when the buffer is full (the caller answers 503). Bots are dropped when flushed. */
  collect(event: Collected): boolean {
    if (this.#buffer.length >= TRACKER_BUFFER_MAX) return false
    this.#buffer.push(event)
    this.#at.push(this.clock.now())
    return true
  }

  /** Whether the website has any tracker data (then the analytics operations answer from it). */
  has(websiteId: string): boolean {
    if (this.#sites.has(websiteId)) return true
    for (const _ of this.store.trackerDaily.db.getKeys({ start: [websiteId], end: [`${websiteId}\u0000`], limit: 1 })) {
      this.#sites.add(websiteId)
      return true
    }
    return false
  }

  /** Page views, events, visitors and countries of the trailing `windowMs` (realtime), from memory. */
  recent(
    websiteId: string,
    now: number,
    windowMs: number,
  ): { views: number; events: number; visitors: number; countries: Map<string, number> } {
    const out = { views: 0, events: 0, visitors: 0, countries: new Map<string, number>() }
    for (const [minute, counts] of this.#minutes.get(websiteId) ?? []) {
      if (minute <= now - windowMs || minute > now) continue
      out.views += counts.views
      out.events += counts.events
      for (const [country, n] of counts.countries) out.countries.set(country, (out.countries.get(country) ?? 0) + n)
    }
    const prefix = `${websiteId}\u0000`
    for (const [key, visit] of this.#visits) if (visit.last > now - windowMs && visit.views > 0 && key.startsWith(prefix)) out.visitors++
    return out
  }

  flush(): Promise<void> {
    return this.#flusher.flush()
  }

  /** The salt of a UTC day: random, kept in the store so a restart counts the same visitors, forgotten the day after. */
  #salt(day: number, fresh: Map<number, Buffer>): Buffer {
    let salt = this.#salts.get(day)
    if (salt === undefined) {
      salt = this.store.trackerSalts.get(day) ?? randomBytes(32)
      if (!this.store.trackerSalts.doesExist(day)) fresh.set(day, salt)
      this.#salts.set(day, salt)
    }
    return salt
  }

  /** A value as stored in a rollup: each site keeps at most TRACKER_VALUES_PER_HOUR distinct values a dimension an hour. */
  #bounded(websiteId: string, hour: number, dimension: string, value: string): string {
    const key = `${websiteId} ${hour} ${dimension}`
    let seen = this.#values.get(key)
    if (seen === undefined) this.#values.set(key, (seen = new Set()))
    if (seen.has(value)) return value
    if (seen.size >= TRACKER_VALUES_PER_HOUR) return '(other)'
    seen.add(value)
    return value
  }

  #minute(websiteId: string, minute: number) {
    let minutes = this.#minutes.get(websiteId)
    if (minutes === undefined) this.#minutes.set(websiteId, (minutes = new Map()))
    let counts = minutes.get(minute)
    if (counts === undefined) {
      minutes.set(minute, (counts = { views: 0, events: 0, countries: new Map() }))
      for (const old of minutes.keys()) if (old < minute - HOUR) minutes.delete(old)
    }
    return counts
  }

  /** Forgets what no longer matters: visits past their gap, visitors of past days, values of past hours. */
  #sweep(now: number): void {
    for (const [key, visit] of this.#visits) if (visit.last < now - TRACKER_VISIT_GAP_MS) this.#visits.delete(key)
    const today = Math.floor(now / DAY)
    for (const [key, record] of this.#visitorDays) if (record.day < today) this.#visitorDays.delete(key)
    for (const key of this.#values.keys()) if (Number(key.split(' ')[1]) < now - 2 * HOUR) this.#values.delete(key)
    for (const day of this.#salts.keys()) if (day < today - 1) this.#salts.delete(day)
  }

  async #flush(): Promise<void> {
    const now = this.clock.now()
    const buffer = this.#buffer
    const at = this.#at
    const sweepDue = now - this.#lastSweep >= MINUTE
    if (buffer.length === 0 && !sweepDue) return
    this.#buffer = []
    this.#at = []
    const flushId = ++this.#flushes
    const { cells, atHour, atStart, addAll, add } = flushCells(flushId, (websiteId, hour, dimension, value) =>
      this.#bounded(websiteId, hour, dimension, value),
    )
    const fresh = new Map<number, Buffer>()
    const agents = new Map<string, Agent | null>()
    const raw: { key: [number, string, number, number]; value: TrackerEvent }[] = []
    for (let i = 0; i < buffer.length; i++) {
      if (i > 0 && i % 4096 === 0) await yieldToLoop()
      const hit = buffer[i]
      const time = at[i]
      let agent = agents.get(hit.userAgent)
      if (agent === undefined) {
        if (hit.userAgent === '' || isbot(hit.userAgent)) agent = null
        else {
          const parsed = parseUserAgent(hit.userAgent)
          agent = { browser: parsed?.name ?? 'unknown', os: parsed?.os ?? 'unknown', device: deviceOf(hit.userAgent) }
        }
        agents.set(hit.userAgent, agent)
      }
      if (agent === null) continue
      const day = Math.floor(time / DAY)
      const visitor = createHash('sha256')
        .update(this.#salt(day, fresh))
        .update(hit.websiteId)
        .update('\u0000')
        .update(hit.address)
        .update('\u0000')
        .update(hit.userAgent)
        .digest('base64url')
        .slice(0, 16)
      const key = `${hit.websiteId}\u0000${visitor}`
      let visit = this.#visits.get(key)
      if (visit === undefined || time - visit.last > TRACKER_VISIT_GAP_MS || Math.floor(visit.start / DAY) !== day) {
        const referrer = referrerOf(hit.referrer, hit.host)
        const utm = utmOf(hit.query)
        visit = {
          id: `${visitor}${time.toString(36)}`,
          start: time,
          last: time,
          views: 0,
          exit: null,
          attrs: {
            entry: hit.path,
            referrer,
            channel: channelOf(referrer, utm.utmMedium, utm.utmSource),
            domain: domainOf(referrer),
            country: hit.country,
            region: hit.region,
            city: hit.city,
            browser: agent.browser,
            os: agent.os,
            device: agent.device,
            language: hit.language,
            screen: hit.screen,
            hostname: hit.host,
            ...utm,
          },
          cells: null,
          startCells: null,
        }
        this.#visits.set(key, visit)
      }
      let visitorDay = this.#visitorDays.get(key)
      const firstToday = visitorDay === undefined || visitorDay.day !== day
      if (firstToday) this.#visitorDays.set(key, (visitorDay = { day, pages: new Set() }))
      const pages = visitorDay!.pages
      const firstFor = (dimension: string, value: string) => {
        const id = `${dimension}\u0000${value}`
        if (pages.has(id) || pages.size >= PAGES_PER_VISITOR_DAY) return false
        pages.add(id)
        return true
      }
      const { websiteId } = hit
      const minute = this.#minute(websiteId, Math.floor(time / MINUTE) * MINUTE)
      if (hit.type === 'pageview') {
        visit.views++
        const start = atStart(websiteId, visit)
        if (visit.views === 1) {
          addAll(start, S, 1)
          addAll(start, B, 1)
        } else {
          if (visit.views === 2) addAll(start, B, -1)
          addAll(start, T, time - visit.last)
        }
        // The exit page is the visit's latest: its visit (counted as page views too, to rank by) moves along.
        for (const metric of [S, V]) {
          if (visit.exit !== null) add(websiteId, 'exit', visit.start, visit.exit, metric, -1)
          add(websiteId, 'exit', visit.start, hit.path, metric, 1)
        }
        visit.exit = hit.path
        visit.last = Math.max(visit.last, time)
        const now = atHour(websiteId, visit, time)
        addAll(now, V, 1)
        if (firstToday) addAll(now, U, 1)
        for (const dimension of PAGE_DIMENSIONS) {
          const value = hit[dimension]
          if (value === '') continue
          add(websiteId, dimension, time, value, V, 1)
          if (firstFor(dimension, value)) add(websiteId, dimension, time, value, U, 1)
        }
        minute.views++
        const country = visit.attrs.country
        minute.countries.set(country, (minute.countries.get(country) ?? 0) + 1)
      } else {
        add(websiteId, '', time, '', E, 1)
        add(websiteId, 'event', time, hit.name, E, 1)
        if (firstFor('event', hit.name)) add(websiteId, 'event', time, hit.name, U, 1)
        minute.events++
      }
      raw.push({
        key: [day, websiteId, time, this.#seq++],
        value: {
          type: hit.type === 'pageview' ? 'p' : 'e',
          visitor,
          visit: visit.id,
          path: hit.path,
          title: hit.title,
          query: hit.query,
          tag: hit.tag,
          distinctId: hit.distinctId,
          ...visit.attrs,
          ...(hit.type === 'event' ? { name: hit.name, data: hit.data } : {}),
        },
      })
      this.#sites.add(websiteId)
    }
    if (sweepDue) {
      this.#lastSweep = now
      this.#sweep(now)
    }
    const cutoffDay = Math.floor(now / DAY) - this.retentionDays
    const expired = sweepDue ? [...this.store.trackerEvents.getKeys({ end: [cutoffDay], limit: 20_000 })] : []
    const oldSalts = sweepDue ? [...this.store.trackerSalts.getKeys({ end: Math.floor(now / DAY) - 1 })] : []
    if (cells.size === 0 && raw.length === 0 && expired.length === 0 && oldSalts.length === 0 && fresh.size === 0) return
    const written = new Set<Float64Array>()
    await this.store.commit(() => {
      for (const [day, salt] of fresh) void this.store.trackerSalts.put(day, salt)
      for (const day of oldSalts) void this.store.trackerSalts.remove(day)
      for (const { key, value } of raw) void this.store.trackerEvents.put(key, value)
      for (const key of expired) void this.store.trackerEvents.remove(key)
      for (const { key, counts } of cells.values()) {
        // A value past the hour's limit shares its (other) cell under two ids: written once.
        if (written.has(counts)) continue
        written.add(counts)
        const [websiteId, dimension, hour, value] = key
        const day = Math.floor(hour / DAY) * DAY
        for (let m = 0; m < METRICS.length; m++) {
          const n = counts[m]
          if (n === 0) continue
          this.store.trackerHourly.add([websiteId, dimension, METRICS[m], hour, value], n)
          this.store.trackerDaily.add([websiteId, dimension, METRICS[m], day, value], n)
        }
      }
    })
  }
}
