import { ApiError } from '../../core/errors.js'
import type { CounterReader, StoreReader } from '../../core/store/reader.js'
import { BEACON_DIMENSIONS, VISIT_DIMENSION, type BeaconDimension } from './beacon.js'

const MINUTE = 60 * 1000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

/*
 * Reports from the edge beacon's rollups. Rollup keys are `[websiteId, dimension, bucket, value]`, so
 * a series reads one dimension's buckets in order and a breakdown one dimension's values: never raw
 * views, never another dimension's rows.
 */

function tableFor(store: StoreReader, unit: 'hour' | 'day'): CounterReader {
  return unit === 'hour' ? store.analyticsHourly : store.analyticsDaily
}

/**
 * Buckets of `size` that [from, to) touches (`to` exclusive), with their page views (dimension '')
 * or visits begun (`visit`).
 */
function totalsByBucket(
  table: CounterReader,
  websiteId: string,
  from: number,
  to: number,
  size: number,
  dimension: '' | typeof VISIT_DIMENSION = '',
): Map<number, number> {
  const first = Math.floor(from / size) * size
  const last = Math.floor((to - 1) / size) * size
  const series = new Map<number, number>()
  for (let x = first; x <= last; x += size) series.set(x, 0)
  for (const { key, value } of table.range({ start: [websiteId, dimension, first, ''], end: [websiteId, dimension, last + 1, ''] })) {
    const bucket = (key as [string, string, number, string])[2]
    series.set(bucket, (series.get(bucket) ?? 0) + value)
  }
  return series
}

/** One dimension's values summed over the buckets [from, to) touches. */
function breakdown(
  table: CounterReader,
  websiteId: string,
  dimension: BeaconDimension,
  from: number,
  to: number,
  size: number,
): Map<string, number> {
  const first = Math.floor(from / size) * size
  const last = Math.floor((to - 1) / size) * size
  const sums = new Map<string, number>()
  for (const { key, value } of table.range({ start: [websiteId, dimension, first, ''], end: [websiteId, dimension, last + 1, ''] })) {
    const name = (key as [string, string, number, string])[3]
    sums.set(name, (sums.get(name) ?? 0) + value)
  }
  return sums
}

function ranked(sums: Map<string, number>, limit: number): { name: string; pageviews: number }[] {
  return [...sums]
    .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
    .slice(0, limit)
    .map(([name, pageviews]) => ({ name, pageviews }))
}

const sum = (values: Iterable<number>): number => {
  let n = 0
  for (const v of values) n += v
  return n
}

export interface BeaconReport {
  /** Buckets of the series: hours for ranges up to two days, days beyond. */
  unit: 'hour' | 'day'
  /** Visits: page views that arrived from another site or none (Cloudflare's definition). */
  totals: { pageviews: number; visits: number }
  series: { x: number; y: number }[]
  top: Record<BeaconDimension, { name: string; pageviews: number }[]>
}

/** The overview (analytics.get): hourly rollups for up to two days, daily ones beyond. */
export function beaconReport(store: StoreReader, websiteId: string, from: number, to: number, topN: number): BeaconReport {
  const unit = to - from <= 2 * DAY ? 'hour' : 'day'
  const size = unit === 'hour' ? HOUR : DAY
  const table = tableFor(store, unit)
  const series = totalsByBucket(table, websiteId, from, to, size)
  const top = Object.fromEntries(
    BEACON_DIMENSIONS.map((d) => [d, ranked(breakdown(table, websiteId, d, from, to, size), topN)]),
  ) as BeaconReport['top']
  const visits = sum(totalsByBucket(table, websiteId, from, to, size, VISIT_DIMENSION).values())
  return { unit, totals: { pageviews: sum(series.values()), visits }, series: [...series].map(([x, y]) => ({ x, y })), top }
}

/** analytics.query from the beacon: totals, or one dimension broken down, filtered by that dimension only. */
export function beaconQuery(
  store: StoreReader,
  websiteId: string,
  options: {
    startAt: number
    endAt: number
    dimension: BeaconDimension | null
    limit: number
    filters: Partial<Record<BeaconDimension, string>>
  },
) {
  const unit = options.endAt - options.startAt <= 2 * DAY ? 'hour' : 'day'
  const size = unit === 'hour' ? HOUR : DAY
  const table = tableFor(store, unit)
  const filtered = Object.entries(options.filters) as [BeaconDimension, string][]
  if (filtered.length > 1 || (filtered.length === 1 && options.dimension !== null && filtered[0][0] !== options.dimension)) {
    throw new ApiError(
      'validation',
      'Beacon data keeps each dimension on its own: filter by the dimension you break down by, or by one dimension without a breakdown (the tracker, when enabled, combines them)',
      { field: 'query' },
    )
  }
  const dimension = options.dimension ?? filtered[0]?.[0] ?? null
  if (dimension === null) {
    const pageviews = sum(totalsByBucket(table, websiteId, options.startAt, options.endAt, size).values())
    return {
      pageviews,
      visits: sum(totalsByBucket(table, websiteId, options.startAt, options.endAt, size, VISIT_DIMENSION).values()),
      rows: null,
    }
  }
  const sums = breakdown(table, websiteId, dimension, options.startAt, options.endAt, size)
  const only = options.filters[dimension]
  if (only !== undefined) for (const name of [...sums.keys()]) if (name !== only) sums.delete(name)
  // Visits are counted for the whole site, not per value of a dimension.
  return { pageviews: sum(sums.values()), visits: null, rows: options.dimension === null ? null : ranked(sums, options.limit) }
}

const LABEL_FORMATS = {
  day: { year: 'numeric', month: '2-digit', day: '2-digit' },
  month: { year: 'numeric', month: '2-digit' },
  year: { year: 'numeric' },
} as const

/** Per-minute page views or visits begun of [from, to) (kept PLINTH_ANALYTICS_RETENTION_DAYS), every minute present. */
function minutes(
  store: StoreReader,
  websiteId: string,
  from: number,
  to: number,
  dimension: '' | typeof VISIT_DIMENSION,
): Map<number, number> {
  const first = Math.floor(from / MINUTE) * MINUTE
  const series = new Map<number, number>()
  for (let x = first; x < to; x += MINUTE) series.set(x, 0)
  for (let day = Math.floor(first / DAY); day <= Math.floor((to - 1) / DAY); day++) {
    for (const { key, value } of store.analyticsMinutely.range({
      start: [day, websiteId, dimension, first],
      end: [day, websiteId, dimension, to],
    })) {
      const minute = (key as [number, string, string, number])[3]
      series.set(minute, (series.get(minute) ?? 0) + value)
    }
  }
  return series
}

/**
 * analytics.timeseries from the beacon: page views and visits begun (sessions) per minute (at most
 * 24 hours) or hour, or per day, month or year as they fall in `timezone` (built from UTC hours, so
 * whole-hour zones are exact). The most recent `maxPoints` buckets are kept.
 */
export function beaconTimeseries(
  store: StoreReader,
  websiteId: string,
  options: { startAt: number; endAt: number; unit: 'minute' | 'hour' | 'day' | 'month' | 'year'; timezone: string; maxPoints: number },
) {
  const { startAt, endAt, unit, timezone, maxPoints } = options
  if (unit === 'minute') {
    if (endAt - startAt > DAY)
      throw new ApiError('validation', 'unit minute covers at most 24 hours; narrow startAt and endAt or use unit hour', {
        field: 'query.unit',
      })
    const asPoints = (counts: Map<number, number>) => [...counts].map(([x, y]) => ({ x: new Date(x).toISOString(), y }))
    const views = mostRecent(asPoints(minutes(store, websiteId, startAt, endAt, '')), maxPoints)
    return {
      pageviews: views.points,
      sessions: mostRecent(asPoints(minutes(store, websiteId, startAt, endAt, VISIT_DIMENSION)), maxPoints).points,
      truncated: views.truncated,
    }
  }
  const views = mostRecent(labelled(totalsByBucket(store.analyticsHourly, websiteId, startAt, endAt, HOUR), unit, timezone), maxPoints)
  const sessions = mostRecent(
    labelled(totalsByBucket(store.analyticsHourly, websiteId, startAt, endAt, HOUR, VISIT_DIMENSION), unit, timezone),
    maxPoints,
  )
  return { pageviews: views.points, sessions: sessions.points, truncated: views.truncated }
}

/** Hourly counts as points of `unit`: hours as ISO times; days, months or years as they fall in `timezone`. */
export function labelled(
  hours: Map<number, number>,
  unit: 'hour' | 'day' | 'month' | 'year',
  timezone: string,
): { x: string; y: number }[] {
  if (unit === 'hour') return [...hours].map(([x, y]) => ({ x: new Date(x).toISOString(), y }))
  const format = new Intl.DateTimeFormat('en-CA', { timeZone: timezone, ...LABEL_FORMATS[unit] })
  const buckets = new Map<string, number>()
  for (const [hour, y] of hours) {
    const label = format.format(hour)
    buckets.set(label, (buckets.get(label) ?? 0) + y)
  }
  return [...buckets].map(([x, y]) => ({ x, y }))
}

export interface Truncated {
  shown: number
  total: number
  hint: string
}

/** The most recent `maxPoints` points, and what was left out. */
export function mostRecent<T>(points: T[], maxPoints: number): { points: T[]; truncated: Truncated | null } {
  const total = points.length
  const shown = points.slice(Math.max(0, total - maxPoints))
  return {
    points: shown,
    truncated:
      total > maxPoints
        ? {
            shown: shown.length,
            total,
            hint: `Only the most recent ${shown.length} of ${total} buckets are shown: narrow startAt and endAt, use a coarser unit, or raise maxPoints (at most 500)`,
          }
        : null,
  }
}
