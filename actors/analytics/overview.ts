import type { StoreReader } from '../../core/store/reader.js'
import { beaconReport } from './report.js'
import { trackerReport } from './tracker-report.js'

/** A ranked value of a top list. */
export interface Ranked {
  name: string
  pageviews: number
  visitors?: number
}

/** Where each figure of an overview comes from. */
export interface OverviewSources {
  /** Page views, the series and the top pages, referrers, countries, devices and hostnames. */
  pageviews: 'beacon' | 'tracker'
  /** Visits: the tracker's 30-minute visits, or the beacon's views that arrived from another site or none. */
  visits: 'beacon' | 'tracker'
  /** Visitors, bounces, time on site, browsers and custom events: only a browser running the tracker tells them. */
  visitors: 'tracker' | null
}

/** A website's analytics overview (analytics.get and the shared dashboard). */
export interface Overview {
  sources: OverviewSources
  unit: 'hour' | 'day'
  totals: {
    pageviews: number
    visitors: number | null
    visits: number
    bounces: number | null
    totaltime: number | null
    events: number | null
  }
  series: { x: number; y: number }[]
  pages: Ranked[]
  referrers: Ranked[]
  countries: Ranked[]
  devices: Ranked[]
  hostnames: Ranked[]
  browsers: Ranked[] | null
  events: { name: string; events: number; visitors: number }[] | null
}

/**
 * The overview of [from, to). Page views are every published HTML page the platform served, as the
 * edge beacon counted them (spec: analytics.get, "counts all published HTML responses"): a site's
 * tracker adds what only a browser tells (visitors, bounces, time, browsers, custom events), it never
 * hides views the beacon saw (a visitor without JavaScript, a blocked script). With the beacon off
 * (PLINTH_ANALYTICS_BEACON=off) the tracker's own page views stand in.
 */
export function overview(
  store: StoreReader,
  options: { websiteId: string; from: number; to: number; topN: number; beacon: boolean; tracker: boolean },
): Overview {
  const { websiteId, from, to, topN } = options
  const tracker = options.tracker ? trackerReport(store, websiteId, from, to, topN) : null
  const extras = tracker === null ? { browsers: null, events: null } : { browsers: tracker.browsers, events: tracker.events }
  const people =
    tracker === null
      ? { visitors: null, bounces: null, totaltime: null, events: null }
      : {
          visitors: tracker.totals.visitors,
          bounces: tracker.totals.bounces,
          totaltime: tracker.totals.totaltime,
          events: tracker.totals.events,
        }
  if (!options.beacon && tracker !== null) {
    const { unit, totals, series, pages, referrers, countries, devices, hostnames } = tracker
    return {
      sources: { pageviews: 'tracker', visits: 'tracker', visitors: 'tracker' },
      unit,
      totals: { pageviews: totals.pageviews, visits: totals.visits, ...people },
      series,
      pages,
      referrers,
      countries,
      devices,
      hostnames,
      ...extras,
    }
  }
  const beacon = beaconReport(store, websiteId, from, to, topN)
  return {
    sources: { pageviews: 'beacon', visits: tracker === null ? 'beacon' : 'tracker', visitors: tracker === null ? null : 'tracker' },
    unit: beacon.unit,
    totals: { pageviews: beacon.totals.pageviews, visits: tracker?.totals.visits ?? beacon.totals.visits, ...people },
    series: beacon.series,
    pages: beacon.top.path,
    referrers: beacon.top.referrer,
    countries: beacon.top.country,
    devices: beacon.top.device,
    hostnames: beacon.top.hostname,
    ...extras,
  }
}
