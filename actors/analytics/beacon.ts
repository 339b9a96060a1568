import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { isbot } from 'isbot'
import { Flusher } from './flusher.js'
import type { Clock } from '../../core/clock.js'
import { BEACON_BUFFER_MAX, BEACON_FLUSH_MS, REFERRERS_PER_HOUR } from '../../core/limits.js'
import type { Logger } from '../../core/log.js'
import type { Store } from '../../core/store/store.js'

const MINUTE = 60 * 1000
const HOUR = 60 * MINUTE
/** Per-minute counts are kept this long (realtime reads the trailing 30 minutes). */
const REALTIME_KEEP_MS = HOUR
const DAY = 24 * HOUR

/** The dimensions the edge beacon knows (spec: `source: beacon`); '' is the page-view total. */
export const BEACON_DIMENSIONS = ['path', 'referrer', 'country', 'device', 'hostname'] as const
export type BeaconDimension = (typeof BEACON_DIMENSIONS)[number]

/**
 * What served page views leave: raw header text in parallel arrays (no object per view, so the
 * serving path allocates nothing of its own), looked at only when flushed.
 */
class Hits {
  websiteIds: string[] = []
  hosts: string[] = []
  paths: string[] = []
  referers: string[] = []
  userAgents: string[] = []
  countries: string[] = []
  at: number[] = []
  get length(): number {
    return this.at.length
  }
}

interface MinuteCounts {
  views: number
  visits: number
  countries: Map<string, number>
}

/** Page views folded per flush step before the flush yields to the event loop (serving waits at most that long). */
const FLUSH_SLICE = 4_096

/** Phones, tablets, everything else: from the user agent, the way analytics tools group them. */
export function deviceOf(userAgent: string): 'mobile' | 'tablet' | 'desktop' {
  if (/iPad|Tablet|PlayBook|Silk|(Android(?!.*Mobile))/i.test(userAgent)) return 'tablet'
  if (/Mobi|iPhone|iPod|Android.*Mobile|Windows Phone|BlackBerry|Opera Mini/i.test(userAgent)) return 'mobile'
  return 'desktop'
}

/** The referring site's host; a visit from the same host, or none, is direct. */
export function referrerOf(referer: string, host: string): string {
  if (referer === '') return '(direct)'
  try {
    const from = new URL(referer).hostname
    if (from === '' || from === host) return '(direct)'
    // Whatever a visitor sends becomes a stored key: only a plausible host name is kept as itself.
    return from.length <= 253 && /^[a-z0-9.:[\]-]+$/.test(from) ? from : '(invalid)'
  } catch {
    return '(direct)'
  }
}

/**
 * Whether a page view begins a visit, as Cloudflare's Web Analytics counts visits: it arrived from
 * another site or from none (typed, bookmarked, an app); a view whose Referer is this same host
 * continues a visit already counted.
 */
export function beginsVisit(referer: string, host: string): boolean {
  if (referer === '') return true
  try {
    return new URL(referer).hostname !== host
  } catch {
    return true
  }
}

/** The pseudo-dimension of the rollups that counts visits begun (value ''). */
export const VISIT_DIMENSION = 'visit'

/** A path as a stored dimension value: at most 300 characters, so no key can outgrow LMDB's limit. */
function pathValue(path: string): string {
  return path.length <= 300 ? path : `${path.slice(0, 299)}…`
}

/**
 * The edge beacon (spec: Analytics): counts every published HTML page view the hosting plane serves
 * (not drafts, not 304s, not HEAD; bots, recognised by `isbot`, are left out when flushed). The
 * serving path only appends raw header text to an in-memory buffer; once a second the buffer is
 * folded into hourly and daily rollups per dimension and written to LMDB in one commit. A full buffer
 * drops (and counts) what does not fit rather than slowing serving down.
 */
export class Beacon {
  #buffer = new Hits()
  #dropped = 0
  /** Since start: page views taken from the buffer to be folded, and those dropped (for /metrics). */
  #counted = 0
  #droppedTotal = 0
  /** Per website and hour, the referrer hosts stored so far (bounded; older hours dropped). */
  readonly #referrers = new Map<string, Set<string>>()
  /** Per website, per minute: page views, visits begun and countries, for realtime (kept an hour). */
  readonly #minutes = new Map<string, Map<number, MinuteCounts>>()
  #lastSweep = 0
  readonly #flusher = new Flusher(() => this.#flush())
  readonly #timer: NodeJS.Timeout | undefined

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** The header a trusted proxy sets to the visitor's country (CF-IPCountry); '' when none. */
    readonly countryHeader: string,
    flushMs = BEACON_FLUSH_MS,
    /** Off: count nothing (PLINTH_ANALYTICS_BEACON=off; benchmarks compare). */
    readonly enabled = true,
    /** Per-minute counts older than this many days are deleted (PLINTH_ANALYTICS_RETENTION_DAYS). */
    readonly retentionDays = 90,
  ) {
    if (flushMs > 0) {
      this.#timer = setInterval(() => {
        this.flush().catch((error: unknown) =>
          this.log.error('analytics beacon flush failed; these page views were not counted', {
            error: (error as Error)?.stack ?? String(error),
          }),
        )
      }, flushMs).unref()
    }
  }

  /** The hot path's part: one push. The headers are read by the caller while the request is live. */
  count(websiteId: string, host: string, path: string, referer: string, userAgent: string, country: string): void {
    const hits = this.#buffer
    if (hits.at.length >= BEACON_BUFFER_MAX) {
      this.#dropped++
      return
    }
    hits.websiteIds.push(websiteId)
    hits.hosts.push(host)
    hits.paths.push(path)
    hits.referers.push(referer)
    hits.userAgents.push(userAgent)
    hits.countries.push(country)
    hits.at.push(this.clock.now())
  }

  /** Page views counted since start (folded, or waiting in the buffer) and those dropped for want of room. */
  stats(): { events: number; dropped: number } {
    return { events: this.#counted + this.#buffer.length, dropped: this.#droppedTotal + this.#dropped }
  }

  /** Page views and visits begun of the trailing `windowMs` (30 minutes: realtime), from the per-minute counts kept in memory. */
  recent(websiteId: string, now: number, windowMs: number): MinuteCounts {
    const out: MinuteCounts = { views: 0, visits: 0, countries: new Map<string, number>() }
    for (const [minute, counts] of this.#minutes.get(websiteId) ?? []) {
      if (minute <= now - windowMs || minute > now) continue
      out.views += counts.views
      out.visits += counts.visits
      for (const [country, n] of counts.countries) out.countries.set(country, (out.countries.get(country) ?? 0) + n)
    }
    return out
  }

  /**
   * A referrer host as stored: each site keeps at most REFERRERS_PER_HOUR distinct ones an hour, the
   * rest counted as `(other)`, so made-up Referer headers cannot grow the rollups without bound.
   */
  #bounded(websiteId: string, hour: number, referrer: string): string {
    const key = `${websiteId} ${hour}`
    let seen = this.#referrers.get(key)
    if (seen === undefined) {
      for (const old of this.#referrers.keys()) if (Number(old.slice(old.lastIndexOf(' ') + 1)) < hour - HOUR) this.#referrers.delete(old)
      this.#referrers.set(key, (seen = new Set()))
    }
    if (seen.has(referrer)) return referrer
    if (seen.size >= REFERRERS_PER_HOUR) return '(other)'
    seen.add(referrer)
    return referrer
  }

  /** The in-memory count of one minute of a website (older than the realtime window: dropped as new ones come). */
  #minute(websiteId: string, minute: number): MinuteCounts {
    let minutes = this.#minutes.get(websiteId)
    if (minutes === undefined) this.#minutes.set(websiteId, (minutes = new Map()))
    let counts = minutes.get(minute)
    if (counts === undefined) {
      minutes.set(minute, (counts = { views: 0, visits: 0, countries: new Map() }))
      for (const old of minutes.keys()) if (old < minute - REALTIME_KEEP_MS) minutes.delete(old)
    }
    return counts
  }

  /** Writes what the buffer holds as rollups (one at a time; the next waits). */
  flush(): Promise<void> {
    return this.#flusher.flush()
  }

  close(): void {
    clearInterval(this.#timer)
  }

  async #flush(): Promise<void> {
    const hits = this.#buffer
    const now = this.clock.now()
    const sweepDue = now - this.#lastSweep >= MINUTE
    if (hits.length === 0 && this.#dropped === 0 && !sweepDue) return
    this.#buffer = new Hits()
    this.#counted += hits.length
    if (this.#dropped > 0) {
      this.log.error('analytics beacon buffer was full; page views were not counted', { dropped: this.#dropped })
      this.#droppedTotal += this.#dropped
      this.#dropped = 0
    }
    // First the distinct views and how many of each, in nested maps (no key strings built per view):
    // site, minute, host, path, referer, user agent, country.
    type Level = Map<string, unknown>
    const tree: Level = new Map()
    const child = (level: Level, key: string): Level => {
      let next = level.get(key) as Level | undefined
      if (next === undefined) level.set(key, (next = new Map()))
      return next
    }
    for (let start = 0; start < hits.length; start += FLUSH_SLICE) {
      if (start > 0) await yieldToLoop()
      const end = Math.min(hits.length, start + FLUSH_SLICE)
      for (let i = start; i < end; i++) {
        const minute = String(Math.floor(hits.at[i] / MINUTE) * MINUTE)
        const leaf = child(
          child(child(child(child(child(tree, hits.websiteIds[i]), minute), hits.hosts[i]), hits.paths[i]), hits.referers[i]),
          hits.userAgents[i],
        )
        const country = hits.countries[i]
        leaf.set(country, ((leaf.get(country) as number | undefined) ?? 0) + 1)
      }
    }
    // Then each distinct view, with its count, into the rollups; user agents judged once each.
    const hourly = new Map<string, { key: [string, string, number, string]; n: number }>()
    const add = (websiteId: string, bucket: number, dimension: string, value: string, n: number) => {
      const id = `${websiteId}\u0000${dimension}\u0000${bucket}\u0000${value}`
      const entry = hourly.get(id)
      if (entry === undefined) hourly.set(id, { key: [websiteId, dimension, bucket, value], n })
      else entry.n += n
    }
    // Page views ('') and visits begun per minute, for unit=minute.
    const minutely = new Map<string, { key: [number, string, string, number]; n: number }>()
    const addMinute = (websiteId: string, minute: number, dimension: string, n: number) => {
      const id = `${websiteId}\u0000${dimension}\u0000${minute}`
      const entry = minutely.get(id)
      if (entry === undefined) minutely.set(id, { key: [Math.floor(minute / DAY), websiteId, dimension, minute], n })
      else entry.n += n
    }
    const agents = new Map<string, string | null>()
    for (const [websiteId, hours] of tree as Map<string, Level>) {
      for (const [minuteText, hosts] of hours as Map<string, Level>) {
        const minute = Number(minuteText)
        const hour = Math.floor(minute / HOUR) * HOUR
        const recent = this.#minute(websiteId, minute)
        for (const [host, paths] of hosts as Map<string, Level>) {
          for (const [path, referers] of paths as Map<string, Level>) {
            for (const [referer, userAgents] of referers as Map<string, Level>) {
              const referrer = this.#bounded(websiteId, hour, referrerOf(referer, host))
              const visit = beginsVisit(referer, host)
              for (const [userAgent, countries] of userAgents as Map<string, Level>) {
                let device = agents.get(userAgent)
                if (device === undefined)
                  agents.set(userAgent, (device = userAgent === '' || isbot(userAgent) ? null : deviceOf(userAgent)))
                if (device === null) continue
                for (const [country, count] of countries as Map<string, number>) {
                  recent.views += count
                  const code = /^[A-Za-z]{2}$/.test(country) ? country.toUpperCase() : 'unknown'
                  recent.countries.set(code, (recent.countries.get(code) ?? 0) + count)
                  add(websiteId, hour, '', '', count)
                  addMinute(websiteId, minute, '', count)
                  if (visit) {
                    recent.visits += count
                    add(websiteId, hour, VISIT_DIMENSION, '', count)
                    addMinute(websiteId, minute, VISIT_DIMENSION, count)
                  }
                  add(websiteId, hour, 'path', pathValue(path), count)
                  add(websiteId, hour, 'referrer', referrer, count)
                  add(websiteId, hour, 'country', code, count)
                  add(websiteId, hour, 'device', device, count)
                  add(websiteId, hour, 'hostname', host.slice(0, 253), count)
                }
              }
            }
          }
        }
      }
    }
    // Once a minute: per-minute counts past the retention go, a day at a time.
    if (sweepDue) this.#lastSweep = now
    const expired = sweepDue
      ? [...this.store.analyticsMinutely.db.getKeys({ end: [Math.floor(now / DAY) - this.retentionDays], limit: 20_000 })]
      : []
    if (hourly.size === 0 && expired.length === 0) return
    await this.store.commit(() => {
      for (const { key, n } of hourly.values()) {
        this.store.analyticsHourly.add(key, n)
        const [websiteId, dimension, hour, value] = key
        this.store.analyticsDaily.add([websiteId, dimension, Math.floor(hour / DAY) * DAY, value], n)
      }
      for (const { key, n } of minutely.values()) this.store.analyticsMinutely.add(key, n)
      for (const key of expired) void this.store.analyticsMinutely.db.remove(key)
    })
  }
}
