import { setImmediate as yieldToLoop } from 'node:timers/promises'
import { isbot } from 'isbot'
import { Flusher } from './flusher.js'
import { BOT, countryOfSlot, countrySlot, DEVICES, reportOf, Tally, tallyOf, type CountedPages, type TallyReport } from './beacon-tally.js'
import type { Clock } from '../../core/clock.js'
import { BEACON_BUFFER_MAX, BEACON_FLUSH_MS, REFERRERS_PER_HOUR } from '../../core/limits.js'
import type { Logger } from '../../core/log.js'
import type { AnalyticsStore } from './tables.js'

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
export class Hits {
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

  /** One view as raw text; false when the buffer is full (BEACON_BUFFER_MAX) and the view was not kept. */
  push(websiteId: string, host: string, path: string, referer: string, userAgent: string, country: string, at: number): boolean {
    if (this.at.length >= BEACON_BUFFER_MAX) return false
    this.websiteIds.push(websiteId)
    this.hosts.push(host)
    this.paths.push(path)
    this.referers.push(referer)
    this.userAgents.push(userAgent)
    this.countries.push(country)
    this.at.push(at)
    return true
  }
}

/**
 * Remembers how a user agent was judged (bounded: past AGENTS_JUDGED the memory starts again), so its
 * next views are counted by a serving path; a made-up header longer than AGENT_REMEMBERED_MAX is not
 * kept in memory, and its views stay on the raw path.
 */
export function rememberAgent(agents: Map<string, number>, userAgent: string, device: number): void {
  if (userAgent.length > AGENT_REMEMBERED_MAX) return
  if (agents.size >= AGENTS_JUDGED) agents.clear()
  agents.set(userAgent, device)
}

interface MinuteCounts {
  views: number
  visits: number
  countries: Map<string, number>
}

/** User agents the serving path remembers as judged (past this, the memory starts again), each at most this long. */
const AGENTS_JUDGED = 10_000
const AGENT_REMEMBERED_MAX = 512

/** Page views folded per flush step before the flush yields to the event loop (serving waits at most that long). */
const FLUSH_SLICE = 4_096

/** Phones, tablets, everything else: from the user agent, the way analytics tools group them. */
export function deviceOf(userAgent: string): 'mobile' | 'tablet' | 'desktop' {
  if (/iPad|Tablet|PlayBook|Silk|(Android(?!.*Mobile))/i.test(userAgent)) return 'tablet'
  if (/Mobi|iPhone|iPod|Android.*Mobile|Windows Phone|BlackBerry|Opera Mini/i.test(userAgent)) return 'mobile'
  return 'desktop'
}

/** A user agent's device code (DEVICES), or BOT for a bot or no user agent at all. */
export function judgeAgent(userAgent: string): number {
  return userAgent === '' || isbot(userAgent) ? BOT : (DEVICES as readonly string[]).indexOf(deviceOf(userAgent))
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
 * (not drafts, not 304s, not HEAD; bots, recognised by `isbot`, are left out). The serving path
 * bumps counters prepared ahead in the snapshot's tally for the minute (beacon-tally.ts: no
 * allocation, no string keys); only a user agent not judged yet (or a fifth host of one site) is
 * pushed as raw header text, judged when folded and remembered. Once a second the tallies (work per
 * site, not per view) and the raw buffer are folded into hourly and daily rollups per dimension and
 * written to LMDB in one commit. A full raw buffer drops (and counts) what does not fit rather than
 * slowing serving down.
 */
export class Beacon {
  #buffer = new Hits()
  #dropped = 0
  /** Since start: page views taken to be folded (raw ones before bots are judged), and those dropped (for /metrics). */
  #counted = 0
  #droppedTotal = 0
  /** Per website and hour, the referrer hosts stored so far (bounded; older hours dropped). */
  readonly #referrers = new Map<string, Set<string>>()
  /** Per website, per minute: page views, visits begun and countries, for realtime (kept an hour). */
  readonly #minutes = new Map<string, Map<number, MinuteCounts>>()
  #lastSweep = 0
  readonly #flusher = new Flusher(() => this.#flush())
  /** Tallies opened since the last fold; each is taken off its snapshot when folded. */
  #tallies: Tally[] = []
  /** The minute views are counted in now, and its end (Unix ms). */
  #minute = 0
  #minuteEnd = 0
  /** User agents judged by the fold (device code, or BOT), so the serving path only looks them up. */
  readonly #agents = new Map<string, number>()
  #lastAgent = ''
  #lastDevice = BOT
  readonly #timer: NodeJS.Timeout | undefined

  constructor(
    private readonly store: AnalyticsStore,
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
      // The timer folds what is here; the serving threads report on their own timer.
      this.#timer = setInterval(() => {
        // Handed on (a cluster's replica: to the primary, which folds them as a serving thread's), or folded here.
        const send = this.sendViews()
        if (send !== null) return void this.#ship(send)
        this.#flusher.flush().catch((error: unknown) =>
          this.log.error('analytics beacon flush failed; these page views were not counted', {
            error: (error as Error)?.stack ?? String(error),
          }),
        )
      }, flushMs).unref()
    }
  }

  /**
   * The serving path's part, for a published HTML page view: counters bumped in the snapshot's
   * tally for this minute (beacon-tally.ts), or, for a user agent not judged yet or a host the
   * tally has no slot for, one push of the raw header text, judged when folded. The headers are
   * read by the caller while the request is live.
   */
  count(pages: CountedPages, page: number, host: string, referer: string, userAgent: string, country: string): void {
    const now = this.clock.now()
    if (now >= this.#minuteEnd || now < this.#minute) {
      this.#minute = Math.floor(now / MINUTE) * MINUTE
      this.#minuteEnd = this.#minute + MINUTE
    }
    let device = this.#lastDevice
    if (userAgent !== this.#lastAgent) {
      const judged = this.#agents.get(userAgent)
      if (judged === undefined) return this.#raw(pages, page, host, referer, userAgent, country, now)
      this.#lastAgent = userAgent
      this.#lastDevice = device = judged
    }
    if (device === BOT) return
    let tally = pages.beaconTally
    if (tally === null || tally.minute !== this.#minute) {
      tally = pages.beaconTally = new Tally(pages, this.#minute)
      this.#tallies.push(tally)
    }
    const slot = page < tally.pages.length ? tally.hostSlot(host) : -1
    if (slot < 0) return this.#raw(pages, page, host, referer, userAgent, country, now)
    tally.add(page, slot, referer, device, country)
  }

  /** A view the counters cannot hold, as raw text (bounded: past BEACON_BUFFER_MAX it is dropped and counted). */
  #raw(pages: CountedPages, page: number, host: string, referer: string, userAgent: string, country: string, now: number): void {
    if (!this.#buffer.push(pages.websiteId, host, pages.pagePath(page), referer, userAgent, country, now)) this.#dropped++
  }

  /**
   * A serving thread's page views of the last second (serve-thread.ts): its tallies join this
   * beacon's, its raw views the buffer (bounded as the serving path's own).
   */
  merge(tallies: readonly TallyReport[], raw: Hits): void {
    // Dated on arrival by this clock: a view counted within the thread's report period (a second) before.
    const now = this.clock.now()
    const minute = Math.floor(now / MINUTE) * MINUTE
    for (const report of tallies) this.#tallies.push(tallyOf(report, minute))
    const hits = this.#buffer
    for (let i = 0; i < raw.at.length; i++)
      if (!hits.push(raw.websiteIds[i]!, raw.hosts[i]!, raw.paths[i]!, raw.referers[i]!, raw.userAgents[i]!, raw.countries[i]!, now))
        this.#dropped++
  }

  /**
   * Where each period's page views go, the composition root's choice, asked each period (a node's role
   * can change): null folds them into this node's counts; a function hands them on (a cluster's
   * replica: one message to the primary, which merges them as a serving thread's).
   */
  sendViews: () => ((views: { tallies: TallyReport[]; raw: Hits }) => void) | null = () => null

  /** The views counted here since the last call, as a serving thread reports them; the snapshots open new tallies from now on. */
  take(): { tallies: TallyReport[]; raw: Hits } {
    const tallies = this.#tallies
    const raw = this.#buffer
    this.#tallies = []
    this.#buffer = new Hits()
    for (const tally of tallies) if (tally.counted.beaconTally === tally) tally.counted.beaconTally = null
    const taken = tallies.filter((t) => t.views > 0)
    for (const tally of taken) this.#counted += tally.views
    this.#counted += raw.length
    return { tallies: taken.map(reportOf), raw }
  }

  async #ship(send: (views: { tallies: TallyReport[]; raw: Hits }) => void): Promise<void> {
    if (this.gather !== null) await this.gather()
    const views = this.take()
    if (views.tallies.length > 0 || views.raw.length > 0) send(views)
  }

  /** Page views counted since start (folded, or waiting in tallies and the buffer) and those dropped for want of room. */
  stats(): { events: number; dropped: number } {
    let open = this.#buffer.length
    for (const tally of this.#tallies) open += tally.views
    return { events: this.#counted + open, dropped: this.#droppedTotal + this.#dropped }
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
  #minuteCounts(websiteId: string, minute: number): MinuteCounts {
    let minutes = this.#minutes.get(websiteId)
    if (minutes === undefined) this.#minutes.set(websiteId, (minutes = new Map()))
    let counts = minutes.get(minute)
    if (counts === undefined) {
      minutes.set(minute, (counts = { views: 0, visits: 0, countries: new Map() }))
      for (const old of minutes.keys()) if (old < minute - REALTIME_KEEP_MS) minutes.delete(old)
    }
    return counts
  }

  /** One tally into the rollups and the realtime minutes: work per page, device, country and host seen, not per view. */
  #foldTally(
    tally: Tally,
    add: (websiteId: string, bucket: number, dimension: string, value: string, n: number) => void,
    addMinute: (websiteId: string, minute: number, dimension: string, n: number) => void,
  ): void {
    const websiteId = tally.counted.websiteId
    const minute = tally.minute
    const hour = Math.floor(minute / HOUR) * HOUR
    const recent = this.#minuteCounts(websiteId, minute)
    let visits = tally.visits
    // Views from other sites' pages: each distinct Referer of each host parsed once.
    const foreign = tally.hosts.map(() => new Map<string, number>())
    for (let i = 0; i < tally.foreignReferers.length; i++) {
      const byReferer = foreign[tally.foreignHosts[i]]
      const referer = tally.foreignReferers[i]
      byReferer.set(referer, (byReferer.get(referer) ?? 0) + 1)
    }
    let direct = tally.direct
    for (let slot = 0; slot < foreign.length; slot++) {
      const host = tally.hosts[slot]
      for (const [referer, n] of foreign[slot]) {
        if (beginsVisit(referer, host)) visits += n
        const referrer = this.#bounded(websiteId, hour, referrerOf(referer, host))
        if (referrer === '(direct)') direct += n
        else add(websiteId, hour, 'referrer', referrer, n)
      }
    }
    if (direct > 0) add(websiteId, hour, 'referrer', this.#bounded(websiteId, hour, '(direct)'), direct)
    recent.views += tally.views
    recent.visits += visits
    add(websiteId, hour, '', '', tally.views)
    addMinute(websiteId, minute, '', tally.views)
    if (visits > 0) {
      add(websiteId, hour, VISIT_DIMENSION, '', visits)
      addMinute(websiteId, minute, VISIT_DIMENSION, visits)
    }
    for (let page = 0; page < tally.pages.length; page++) {
      const n = tally.pages[page]
      if (n > 0) add(websiteId, hour, 'path', pathValue(tally.counted.pagePath(page)), n)
    }
    for (let device = 0; device < DEVICES.length; device++) {
      const n = tally.devices[device]
      if (n > 0) add(websiteId, hour, 'device', DEVICES[device], n)
    }
    for (let slot = 0; slot < tally.hosts.length; slot++)
      add(websiteId, hour, 'hostname', tally.hosts[slot].slice(0, 253), tally.hostViews[slot])
    const country = (code: string, n: number) => {
      add(websiteId, hour, 'country', code, n)
      recent.countries.set(code, (recent.countries.get(code) ?? 0) + n)
    }
    if (tally.noCountry > 0) country('unknown', tally.noCountry)
    const countries = tally.countries
    if (countries !== null)
      for (let slot = 0; slot < countries.length; slot++) if (countries[slot] > 0) country(countryOfSlot(slot), countries[slot])
  }

  /**
   * Asks the serving threads for the page views they counted so far (set when there are threads:
   * a report of the analytics then includes every view served before it was asked for).
   */
  gather: (() => Promise<void>) | null = null

  /** Writes what the buffer holds as rollups (one at a time; the next waits), with the threads' views gathered first. */
  async flush(): Promise<void> {
    if (this.gather !== null) await this.gather()
    return this.#flusher.flush()
  }

  close(): void {
    clearInterval(this.#timer)
  }

  async #flush(): Promise<void> {
    const hits = this.#buffer
    const now = this.clock.now()
    const sweepDue = now - this.#lastSweep >= MINUTE
    const tallies = this.#tallies
    if (hits.length === 0 && tallies.length === 0 && this.#dropped === 0 && !sweepDue) return
    this.#buffer = new Hits()
    this.#tallies = []
    // Views from now on open new tallies; these are only read. Counted as taken (the /metrics total never goes down).
    this.#counted += hits.length
    for (const tally of tallies) {
      if (tally.counted.beaconTally === tally) tally.counted.beaconTally = null
      this.#counted += tally.views
    }
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
    const agents = new Map<string, number>()
    for (const [websiteId, hours] of tree as Map<string, Level>) {
      for (const [minuteText, hosts] of hours as Map<string, Level>) {
        const minute = Number(minuteText)
        const hour = Math.floor(minute / HOUR) * HOUR
        const recent = this.#minuteCounts(websiteId, minute)
        for (const [host, paths] of hosts as Map<string, Level>) {
          for (const [path, referers] of paths as Map<string, Level>) {
            for (const [referer, userAgents] of referers as Map<string, Level>) {
              const referrer = this.#bounded(websiteId, hour, referrerOf(referer, host))
              const visit = beginsVisit(referer, host)
              for (const [userAgent, countries] of userAgents as Map<string, Level>) {
                let code = agents.get(userAgent)
                if (code === undefined) {
                  agents.set(userAgent, (code = judgeAgent(userAgent)))
                  rememberAgent(this.#agents, userAgent, code)
                }
                if (code === BOT) continue
                const device = DEVICES[code]!
                for (const [country, count] of countries as Map<string, number>) {
                  recent.views += count
                  const code = countryOfSlot(countrySlot(country))
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
    for (const tally of tallies) this.#foldTally(tally, add, addMinute)
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
