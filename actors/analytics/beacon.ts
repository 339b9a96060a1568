import { isbot } from 'isbot'
import type { Clock } from '../../core/clock.js'
import { BEACON_BUFFER_MAX, BEACON_FLUSH_MS } from '../../core/limits.js'
import type { Logger } from '../../core/log.js'
import type { Store } from '../../core/store/store.js'

const HOUR = 60 * 60 * 1000
const DAY = 24 * HOUR

/** The dimensions the edge beacon knows (spec: `source: beacon`); '' is the page-view total. */
export const BEACON_DIMENSIONS = ['path', 'referrer', 'country', 'device', 'hostname'] as const
export type BeaconDimension = (typeof BEACON_DIMENSIONS)[number]

/** What one served page view leaves in the buffer: raw header text, looked at only when flushed. */
interface Hit {
  websiteId: string
  host: string
  path: string
  referer: string
  userAgent: string
  country: string
  at: number
}

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
    return from === '' || from === host ? '(direct)' : from
  } catch {
    return '(direct)'
  }
}

/**
 * The edge beacon (spec: Analytics): counts every published HTML page view the hosting plane serves
 * (not drafts, not 304s, not HEAD; bots, recognised by `isbot`, are left out when flushed). The
 * serving path only appends raw header text to an in-memory buffer; once a second the buffer is
 * folded into hourly and daily rollups per dimension and written to LMDB in one commit. A full buffer
 * drops (and counts) what does not fit rather than slowing serving down.
 */
export class Beacon {
  #buffer: Hit[] = []
  #dropped = 0
  #flushing: Promise<void> | null = null
  readonly #timer: NodeJS.Timeout | undefined

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly log: Logger,
    /** The header a trusted proxy sets to the visitor's country (CF-IPCountry); '' when none. */
    private readonly countryHeader: string,
    flushMs = BEACON_FLUSH_MS,
    /** Off: count nothing (PLINTH_ANALYTICS_BEACON=off; benchmarks compare). */
    readonly enabled = true,
  ) {
    if (flushMs > 0) this.#timer = setInterval(() => void this.flush(), flushMs).unref()
  }

  /** The hot path's part: one push. The headers are read by the caller while the request is live. */
  count(websiteId: string, host: string, path: string, referer: string, userAgent: string, country: string): void {
    if (this.#buffer.length >= BEACON_BUFFER_MAX) {
      this.#dropped++
      return
    }
    this.#buffer.push({ websiteId, host, path, referer, userAgent, country, at: this.clock.now() })
  }

  get countryHeaderName(): string {
    return this.countryHeader
  }

  /** Writes what the buffer holds as rollups (one at a time; the next waits). */
  flush(): Promise<void> {
    this.#flushing ??= this.#flush().finally(() => (this.#flushing = null))
    return this.#flushing
  }

  close(): void {
    clearInterval(this.#timer)
  }

  async #flush(): Promise<void> {
    const hits = this.#buffer
    if (hits.length === 0 && this.#dropped === 0) return
    this.#buffer = []
    if (this.#dropped > 0) {
      this.log.error('analytics beacon buffer was full; page views were not counted', { dropped: this.#dropped })
      this.#dropped = 0
    }
    const hourly = new Map<string, { key: [string, number, string, string]; n: number }>()
    const daily = new Map<string, { key: [string, number, string, string]; n: number }>()
    const add = (into: typeof hourly, websiteId: string, bucket: number, dimension: string, value: string) => {
      const id = `${websiteId}\u0000${bucket}\u0000${dimension}\u0000${value}`
      const entry = into.get(id)
      if (entry === undefined) into.set(id, { key: [websiteId, bucket, dimension, value], n: 1 })
      else entry.n++
    }
    for (const hit of hits) {
      if (hit.userAgent === '' || isbot(hit.userAgent)) continue
      const values: [string, string][] = [
        ['', ''],
        ['path', hit.path.slice(0, 300)],
        ['referrer', referrerOf(hit.referer, hit.host)],
        ['country', /^[A-Za-z]{2}$/.test(hit.country) ? hit.country.toUpperCase() : 'unknown'],
        ['device', deviceOf(hit.userAgent)],
        ['hostname', hit.host],
      ]
      const hour = Math.floor(hit.at / HOUR) * HOUR
      const day = Math.floor(hit.at / DAY) * DAY
      for (const [dimension, value] of values) {
        add(hourly, hit.websiteId, hour, dimension, value)
        add(daily, hit.websiteId, day, dimension, value)
      }
    }
    if (hourly.size === 0) return
    await this.store.commit(() => {
      for (const { key, n } of hourly.values()) this.store.analyticsHourly.add(key, n)
      for (const { key, n } of daily.values()) this.store.analyticsDaily.add(key, n)
    })
  }
}
