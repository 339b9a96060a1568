import { ApiError } from '../../core/errors.js'
import type { StoreReader } from '../../core/store/reader.js'
import { labelled, mostRecent, type Truncated } from './report.js'
import { VISIT_DIMENSIONS, type Metric, type TrackerDimension } from './tracker-dimensions.js'
import type { QueryOptions, Row, Totals, TrackerFilter } from './tracker-filters.js'
import { bucketsOf, grain, metricSums, pointSums, rank, sums, toRow, toTotals, zero } from './tracker-rollups.js'
import { events, scan } from './tracker-scan.js'

const MINUTE = 60 * 1000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

/*
 * Reports from the tracker. Unfiltered questions, and a filter on the one dimension asked about, read
 * the rollups (`[websiteId, dimension, metric, bucket, value]`: one dimension's metric over its buckets in
 * order, never raw events); combined filters read the raw events of the range, which are kept for a configurable
 * period, and are refused past TRACKER_SCAN_MAX events with what to narrow.
 */

/** Totals and, with a dimension, its rows: from rollups (no filter, or a filter on that dimension alone) or from raw events. */
export function trackerQuery(
  store: StoreReader,
  websiteId: string,
  options: QueryOptions,
): { totals: Totals; rows: Row[] | null; from: 'rollups' | 'events' } {
  const filtered = Object.entries(options.filters) as [TrackerFilter, string][]
  const single = filtered.length === 1 ? filtered[0] : null
  // One filter on a visit's own value (country, referrer, …) has its rollup rows; a page's (path,
  // title, …) has no visits, bounces or time there, so it is answered from raw events, like
  // combinations, segments and cohorts.
  const grouped = options.segment !== undefined || options.cohort !== undefined
  const rollups =
    !grouped &&
    (filtered.length === 0 ||
      (single !== null &&
        (VISIT_DIMENSIONS as readonly string[]).includes(single[0]) &&
        (options.dimension === null || options.dimension === single[0])))
  if (!rollups) return { ...scan(store, websiteId, options), from: 'events' }
  const { table, size } = grain(options.startAt, options.endAt)
  const [first, last] = bucketsOf(options.startAt, options.endAt, size)
  if (single !== null) {
    const [dimension, only] = single
    const values = sums(store[table], websiteId, dimension, first, last)
    const m = values.get(only) ?? zero()
    const totals = toTotals(m)
    return { totals, rows: options.dimension === null ? null : values.has(only) ? [toRow(only, m, dimension)] : [], from: 'rollups' }
  }
  const totals = toTotals(sums(store[table], websiteId, '', first, last).get('') ?? zero())
  if (options.dimension === null) return { totals, rows: null, from: 'rollups' }
  const dimension = options.dimension
  const rows = [...sums(store[table], websiteId, dimension, first, last)].map(([name, m]) => toRow(name, m, dimension))
  return { totals, rows: rank(rows, options.limit), from: 'rollups' }
}

/** Page views and visits ('' total) per hour of [from, to), read from hourly rollups. */
function hourly(
  store: StoreReader,
  websiteId: string,
  from: number,
  to: number,
): { pageviews: Map<number, number>; sessions: Map<number, number> } {
  const [first, last] = bucketsOf(from, to, HOUR)
  const pageviews = new Map<number, number>()
  const sessions = new Map<number, number>()
  for (let x = first; x <= last; x += HOUR) {
    pageviews.set(x, 0)
    sessions.set(x, 0)
  }
  for (const [metric, series] of [
    ['v', pageviews],
    ['s', sessions],
  ] as const) {
    for (const { key, value } of store.trackerHourly.range({
      start: [websiteId, '', metric, first],
      end: [websiteId, '', metric, last + 1],
    })) {
      const bucket = (key as [string, string, Metric, number, string])[3]
      series.set(bucket, (series.get(bucket) ?? 0) + value)
    }
  }
  return { pageviews, sessions }
}

/** Per-minute counts of [from, to) from raw events (unit minute). */
function minutes(
  store: StoreReader,
  websiteId: string,
  from: number,
  to: number,
): { pageviews: Map<number, number>; sessions: Map<number, number>; events: Map<string, Map<number, number>> } {
  const first = Math.floor(from / MINUTE) * MINUTE
  const pageviews = new Map<number, number>()
  const sessions = new Map<number, number>()
  for (let x = first; x < to; x += MINUTE) {
    pageviews.set(x, 0)
    sessions.set(x, 0)
  }
  const named = new Map<string, Map<number, number>>()
  const started = new Set<string>()
  for (const { at, event } of events(store, websiteId, from, to)) {
    const minute = Math.floor(at / MINUTE) * MINUTE
    if (event.type === 'e') {
      let series = named.get(event.name ?? '')
      if (series === undefined) named.set(event.name ?? '', (series = new Map()))
      series.set(minute, (series.get(minute) ?? 0) + 1)
      continue
    }
    pageviews.set(minute, (pageviews.get(minute) ?? 0) + 1)
    if (!started.has(event.visit)) {
      started.add(event.visit)
      sessions.set(minute, (sessions.get(minute) ?? 0) + 1)
    }
  }
  return { pageviews, sessions, events: named }
}

export type Unit = 'minute' | 'hour' | 'day' | 'month' | 'year'

function points(counts: Map<number, number>, unit: Unit, timezone: string): { x: string; y: number }[] {
  return unit === 'minute' ? [...counts].map(([x, y]) => ({ x: new Date(x).toISOString(), y })) : labelled(counts, unit, timezone)
}

/** analytics.timeseries from the tracker: page views and visits (sessions), or custom events by name. */
export function trackerTimeseries(
  store: StoreReader,
  websiteId: string,
  options: { startAt: number; endAt: number; unit: Unit; timezone: string; maxPoints: number; series: 'pageviews' | 'events' },
):
  | { series: 'pageviews'; pageviews: { x: string; y: number }[]; sessions: { x: string; y: number }[]; truncated: Truncated | null }
  | { series: 'events'; events: { x: string; t: string; y: number }[]; truncated: Truncated | null } {
  const { startAt, endAt, unit, timezone, maxPoints } = options
  if (unit === 'minute' && endAt - startAt > DAY)
    throw new ApiError(
      'validation',
      'unit minute covers at most 24 hours (it reads raw events); narrow startAt and endAt or use unit hour',
      { field: 'query.unit' },
    )
  if (options.series === 'pageviews') {
    const counts = unit === 'minute' ? minutes(store, websiteId, startAt, endAt) : hourly(store, websiteId, startAt, endAt)
    const views = mostRecent(points(counts.pageviews, unit, timezone), maxPoints)
    const sessions = mostRecent(points(counts.sessions, unit, timezone), maxPoints)
    return { series: 'pageviews', pageviews: views.points, sessions: sessions.points, truncated: views.truncated }
  }
  // Events by name and bucket: the buckets (t) are the same for every name; the most recent are kept.
  let byName: Map<string, Map<number, number>>
  if (unit === 'minute') byName = minutes(store, websiteId, startAt, endAt).events
  else {
    byName = new Map()
    const [first, last] = bucketsOf(startAt, endAt, HOUR)
    for (const { key, value } of store.trackerHourly.range({
      start: [websiteId, 'event', 'e', first],
      end: [websiteId, 'event', 'e', last + 1],
    })) {
      const [, , , bucket, name] = key as [string, string, Metric, number, string]
      let series = byName.get(name)
      if (series === undefined) byName.set(name, (series = new Map()))
      series.set(bucket, (series.get(bucket) ?? 0) + value)
    }
  }
  const byLabel = new Map<string, Map<string, number>>()
  for (const [name, counts] of byName) {
    for (const { x, y } of points(counts, unit, timezone)) {
      let row = byLabel.get(x)
      if (row === undefined) byLabel.set(x, (row = new Map()))
      row.set(name, (row.get(name) ?? 0) + y)
    }
  }
  const ordered = [...byLabel.keys()].sort()
  const kept = mostRecent(ordered, maxPoints)
  const out: { x: string; t: string; y: number }[] = []
  for (const t of kept.points)
    for (const [x, y] of [...byLabel.get(t)!].sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))) if (y !== 0) out.push({ x, t, y })
  return { series: 'events', events: out, truncated: kept.truncated }
}

/** The overview (analytics.get) from the tracker: totals, the series and the top values of the usual dimensions. */
export function trackerReport(store: StoreReader, websiteId: string, from: number, to: number, topN: number) {
  const { table, size } = grain(from, to)
  const [first, last] = bucketsOf(from, to, size)
  const totals = toTotals(sums(store[table], websiteId, '', first, last).get('') ?? zero())
  const series: { x: number; y: number }[] = []
  const byBucket = new Map<number, number>()
  for (let x = first; x <= last; x += size) byBucket.set(x, 0)
  for (const { key, value } of store[table].range({ start: [websiteId, '', 'v', first], end: [websiteId, '', 'v', last + 1] })) {
    const bucket = (key as [string, string, Metric, number, string])[3]
    byBucket.set(bucket, (byBucket.get(bucket) ?? 0) + value)
  }
  for (const [x, y] of byBucket) series.push({ x, y })
  // Top lists rank by one metric read whole, then read visitors of the top values only.
  const top = (dimension: TrackerDimension, by: 'v' | 'e') => {
    const ranked = [...metricSums(store[table], websiteId, dimension, by, first, last)]
      .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
      .slice(0, topN)
    const visitors = pointSums(
      store[table],
      websiteId,
      dimension,
      'u',
      first,
      last,
      size,
      ranked.map(([name]) => name),
    )
    return ranked.map(([name, n]) => ({ name, n, visitors: visitors.get(name) ?? 0 }))
  }
  const pagesOf = (dimension: TrackerDimension) => top(dimension, 'v').map(({ name, n, visitors }) => ({ name, pageviews: n, visitors }))
  return {
    unit: size === HOUR ? ('hour' as const) : ('day' as const),
    totals,
    series,
    pages: pagesOf('path'),
    referrers: pagesOf('referrer'),
    countries: pagesOf('country'),
    devices: pagesOf('device'),
    hostnames: pagesOf('hostname'),
    browsers: pagesOf('browser'),
    events: top('event', 'e').map(({ name, n, visitors }) => ({ name, events: n, visitors })),
  }
}
