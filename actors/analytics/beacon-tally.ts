/**
 * The serving path's half of the edge beacon: counters prepared ahead, bumped per page view.
 *
 * A view of a published page is counted into its snapshot's `Tally` for the current minute: typed
 * arrays indexed by the page's route number, the visitor's device, the country's two letters and
 * the host's slot. Nothing is allocated and no string is used as a key per view; the beacon folds
 * each tally (work per site and flush, not per view) into the rollups. What the counters cannot say
 * (a user agent not judged yet, a fifth host) goes to the beacon's raw buffer and is judged when
 * folded.
 */

/** What a tally counts against: a snapshot's pages, each numbered when first served (implemented by Snapshot). */
export interface CountedPages {
  readonly websiteId: string
  /** The beacon's tally of the current flush period, or null; only the beacon sets it. */
  beaconTally: Tally | null
  /** How many pages have a number so far (numbers are 0 up to this, never reused). */
  readonly pageCount: number
  /** The request path of page number `index`, as the visitor asked for it. */
  pagePath(index: number): string
}

/** Devices as the rollups name them, by code; BOT is never counted. */
export const DEVICES = ['desktop', 'mobile', 'tablet'] as const
export const BOT = 3

/** Two letters A to Z (26 times 26 slots), and one slot for every other value. */
const UNKNOWN_COUNTRY = 26 * 26

/** The slot of a country header's value: its two letters in either case, or unknown. */
export function countrySlot(country: string): number {
  if (country.length !== 2) return UNKNOWN_COUNTRY
  const a = (country.charCodeAt(0) | 0x20) - 97
  const b = (country.charCodeAt(1) | 0x20) - 97
  return a >= 0 && a < 26 && b >= 0 && b < 26 ? a * 26 + b : UNKNOWN_COUNTRY
}

/** The rollups' value for a country slot: two capital letters, or `unknown`. */
export function countryOfSlot(slot: number): string {
  return slot === UNKNOWN_COUNTRY ? 'unknown' : String.fromCharCode(65 + Math.floor(slot / 26), 65 + (slot % 26))
}

/**
 * Whether a Referer is a page of the same host (`http(s)://host`, a port in digits, then the end,
 * `/`, `?` or `#`), decided without parsing or allocating; anything else is left to the fold, which parses.
 */
export function sameSiteReferer(referer: string, host: string): boolean {
  const at = referer.startsWith('https://') ? 8 : referer.startsWith('http://') ? 7 : -1
  if (at < 0 || !referer.startsWith(host, at)) return false
  let end = at + host.length
  // A port: digits only (`https://host:x@evil.example/` is another site, left to the fold).
  if (referer.charCodeAt(end) === 58) {
    const digits = ++end
    while (end < referer.length && referer.charCodeAt(end) >= 48 && referer.charCodeAt(end) <= 57) end++
    if (end === digits) return false
  }
  if (end === referer.length) return true
  const next = referer.charCodeAt(end)
  return next === 47 || next === 63 || next === 35
}

/** Hosts one tally tells apart (a site's own subdomain and its primary domain, usually); more go raw. */
export const TALLY_HOSTS = 4

/** One snapshot's page views in one minute, until the next fold takes it. */
export class Tally {
  /** Page views (not bots). */
  views = 0
  /** Views that began a visit (no Referer; a Referer of another site is added when folded). */
  visits = 0
  /** Views whose referrer is `(direct)`: none, or the same host. */
  direct = 0
  /** Views without a country header value. */
  noCountry = 0
  /** Views per page number (pages numbered after the tally opened go raw). */
  readonly pages: Int32Array
  /** Views per device code. */
  readonly devices = new Int32Array(DEVICES.length)
  /** Views per country slot; made at the first view that has a country. */
  countries: Int32Array | null = null
  /** Hosts seen and their views, by slot. */
  readonly hosts: string[] = []
  readonly hostViews = new Int32Array(TALLY_HOSTS)
  /** Views from another site's page: their Referer and host slot, judged when folded. */
  readonly foreignReferers: string[] = []
  readonly foreignHosts: number[] = []

  constructor(
    readonly counted: CountedPages,
    /** The minute (Unix ms) every view of this tally falls in. */
    readonly minute: number,
  ) {
    this.pages = new Int32Array(counted.pageCount)
  }

  /** The host's slot, taken if free; -1 when every slot holds another host. */
  hostSlot(host: string): number {
    const hosts = this.hosts
    for (let i = 0; i < hosts.length; i++) if (hosts[i] === host) return i
    if (hosts.length === TALLY_HOSTS) return -1
    return hosts.push(host) - 1
  }

  /** Counts one view of a judged visitor; the caller checked the page number and the host slot. */
  add(page: number, hostSlot: number, referer: string, device: number, country: string): void {
    this.views++
    this.pages[page]++
    this.devices[device]++
    this.hostViews[hostSlot]++
    if (referer === '') {
      this.visits++
      this.direct++
    } else if (sameSiteReferer(referer, this.hosts[hostSlot])) {
      this.direct++
    } else {
      this.foreignReferers.push(referer)
      this.foreignHosts.push(hostSlot)
    }
    if (country === '') {
      this.noCountry++
    } else {
      const countries = (this.countries ??= new Int32Array(UNKNOWN_COUNTRY + 1))
      countries[countrySlot(country)]++
    }
  }
}

/** A tally as a serving thread sends it to the beacon (structured-clone data; its pages by request path). */
export interface TallyReport {
  websiteId: string
  paths: string[]
  pages: Int32Array
  devices: Int32Array
  countries: Int32Array | null
  hosts: string[]
  hostViews: Int32Array
  foreignReferers: string[]
  foreignHosts: number[]
  views: number
  visits: number
  direct: number
  noCountry: number
}

/** A serving thread's tally, for the beacon on the main thread. */
export function reportOf(tally: Tally): TallyReport {
  const paths: string[] = []
  for (let i = 0; i < tally.pages.length; i++) paths.push(tally.counted.pagePath(i))
  return {
    websiteId: tally.counted.websiteId,
    paths,
    pages: tally.pages,
    devices: tally.devices,
    countries: tally.countries,
    hosts: tally.hosts,
    hostViews: tally.hostViews,
    foreignReferers: tally.foreignReferers,
    foreignHosts: tally.foreignHosts,
    views: tally.views,
    visits: tally.visits,
    direct: tally.direct,
    noCountry: tally.noCountry,
  }
}

/** A serving thread's tally as one of the beacon's own for `minute`, ready to fold. */
export function tallyOf(report: TallyReport, minute: number): Tally {
  const counted: CountedPages = {
    websiteId: report.websiteId,
    beaconTally: null,
    pageCount: report.paths.length,
    pagePath: (index) => report.paths[index]!,
  }
  const tally = new Tally(counted, minute)
  tally.pages.set(report.pages.subarray(0, tally.pages.length))
  tally.devices.set(report.devices)
  if (report.countries !== null) tally.countries = report.countries
  tally.hosts.push(...report.hosts)
  tally.hostViews.set(report.hostViews)
  tally.foreignReferers.push(...report.foreignReferers)
  tally.foreignHosts.push(...report.foreignHosts)
  tally.views = report.views
  tally.visits = report.visits
  tally.direct = report.direct
  tally.noCountry = report.noCountry
  return tally
}
