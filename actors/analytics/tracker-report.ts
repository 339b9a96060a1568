import { ApiError } from '../../core/errors.js'
import { TRACKER_SCAN_MAX } from '../../core/limits.js'
import type { TrackerEvent } from '../../core/store/store.js'
import type { CounterReader, StoreReader } from '../../core/store/reader.js'
import { labelled, mostRecent, type Truncated } from './report.js'
import { UTM_FIELDS, VISIT_DIMENSIONS, type Metric, type TrackerDimension } from './tracker.js'

const MINUTE = 60 * 1000
const HOUR = 60 * MINUTE
const DAY = 24 * HOUR

/*
 * Reports from the tracker. Unfiltered questions, and a filter on the one dimension asked about, read
 * the rollups (`[websiteId, dimension, metric, bucket, value]`: one dimension's metric over its buckets in
 * order, never raw events); combined filters read the raw events of the range, which are kept for a configurable
 * period, and are refused past TRACKER_SCAN_MAX events with what to narrow.
 */

/** Filters (spec) that are fields of a raw event; segment and cohort (below) are groups made of them. */
export const TRACKER_FILTERS = [
  'path',
  'referrer',
  'title',
  'query',
  'browser',
  'os',
  'device',
  'country',
  'region',
  'city',
  'language',
  'hostname',
  'tag',
  'event',
  'distinctId',
  ...UTM_FIELDS,
] as const
export type TrackerFilter = (typeof TRACKER_FILTERS)[number]

/** How a segment's condition compares a field with its value. */
export const SEGMENT_OPERATORS = ['eq', 'neq', 'contains', 'notContains'] as const

/**
 * A segment (Umami's word: a set of filters used together): conditions on event fields, all or any of
 * which must hold. Plinth keeps none on the server; the query carries it whole.
 */
export interface Segment {
  match: 'all' | 'any'
  filters: { name: TrackerFilter; operator: (typeof SEGMENT_OPERATORS)[number]; value: string }[]
}

/**
 * A cohort: the visitors who did something (viewed a path, or sent a custom event) in a window. A
 * visitor is known for one UTC day (their hash changes daily; no cookies), or for good by the
 * distinctId a page sets with platform.identify.
 */
export interface Cohort {
  action: { type: 'path' | 'event'; value: string }
  startAt: number
  endAt: number
}

export interface Totals {
  pageviews: number
  visitors: number
  visits: number
  bounces: number
  /** Seconds spent in visits (from each visit's first to last page view). */
  totaltime: number
  events: number
}

export interface Row {
  name: string
  pageviews: number
  visitors: number
  visits: number | null
  bounces: number | null
  totaltime: number | null
  events: number
}

interface QueryOptions {
  startAt: number
  endAt: number
  dimension: TrackerDimension | null
  limit: number
  filters: Partial<Record<TrackerFilter, string>>
  segment?: Segment
  cohort?: Cohort
}

/** Hours for ranges up to two days, days beyond. */
function grain(from: number, to: number): { table: 'trackerHourly' | 'trackerDaily'; size: number } {
  return to - from <= 2 * DAY ? { table: 'trackerHourly', size: HOUR } : { table: 'trackerDaily', size: DAY }
}

function bucketsOf(from: number, to: number, size: number): [number, number] {
  return [Math.floor(from / size) * size, Math.floor((to - 1) / size) * size]
}

type Sums = Map<string, Record<Metric, number>>
const zero = (): Record<Metric, number> => ({ v: 0, u: 0, s: 0, b: 0, t: 0, e: 0 })

/** One metric of one dimension ('' : the total) per value, summed over the buckets [first, last]. */
function metricSums(
  table: CounterReader,
  websiteId: string,
  dimension: string,
  metric: Metric,
  first: number,
  last: number,
): Map<string, number> {
  const out = new Map<string, number>()
  for (const { key, value } of table.range({
    start: [websiteId, dimension, metric, first],
    end: [websiteId, dimension, metric, last + 1],
  })) {
    const name = (key as [string, string, Metric, number, string])[4]
    out.set(name, (out.get(name) ?? 0) + value)
  }
  return out
}

/** The metrics a dimension's rollups carry (tracker.ts writes no others). */
function metricsOf(dimension: string): readonly Metric[] {
  if (dimension === '') return ['v', 'u', 's', 'b', 't', 'e']
  if (dimension === 'exit') return ['v', 's']
  if (dimension === 'event') return ['e', 'u']
  return (VISIT_DIMENSIONS as readonly string[]).includes(dimension) ? ['v', 'u', 's', 'b', 't'] : ['v', 'u']
}

/** One dimension's values ('' : the total) summed over the buckets [from, to) touches, per metric. */
function sums(table: CounterReader, websiteId: string, dimension: string, first: number, last: number): Sums {
  const out: Sums = new Map()
  for (const metric of metricsOf(dimension)) {
    for (const [name, n] of metricSums(table, websiteId, dimension, metric, first, last)) {
      let row = out.get(name)
      if (row === undefined) out.set(name, (row = zero()))
      row[metric] += n
    }
  }
  return out
}

/** One metric of the given values, read bucket by bucket (a few values of a ranking, not all). */
function pointSums(
  table: CounterReader,
  websiteId: string,
  dimension: string,
  metric: Metric,
  first: number,
  last: number,
  size: number,
  values: string[],
): Map<string, number> {
  const out = new Map<string, number>()
  for (const value of values) {
    let n = 0
    for (let bucket = first; bucket <= last; bucket += size) n += table.get([websiteId, dimension, metric, bucket, value])
    out.set(value, n)
  }
  return out
}

const hasVisits = (dimension: string) =>
  dimension === '' || dimension === 'exit' || (VISIT_DIMENSIONS as readonly string[]).includes(dimension)

function toTotals(m: Record<Metric, number>): Totals {
  return { pageviews: m.v, visitors: m.u, visits: m.s, bounces: m.b, totaltime: Math.round(m.t / 1000), events: m.e }
}

function toRow(name: string, m: Record<Metric, number>, dimension: string): Row {
  const visits = hasVisits(dimension)
  // Exit rows count visits; bounce and time belong to where a visit starts.
  const whole = visits && dimension !== 'exit'
  return {
    name,
    pageviews: m.v,
    visitors: m.u,
    visits: visits ? m.s : null,
    bounces: whole ? m.b : null,
    totaltime: whole ? Math.round(m.t / 1000) : null,
    events: m.e,
  }
}

function rank(rows: Row[], limit: number): Row[] {
  return rows
    .sort((a, b) => b.pageviews - a.pageviews || b.events - a.events || b.visitors - a.visitors || a.name.localeCompare(b.name))
    .slice(0, limit)
}

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

/** The raw events of a website in [from, to), day by day (keys start with the UTC day). */
function* events(store: StoreReader, websiteId: string, from: number, to: number): Generator<{ at: number; event: TrackerEvent }> {
  for (let day = Math.floor(from / DAY); day <= Math.floor((to - 1) / DAY); day++) {
    for (const { key, value } of store.trackerEvents.getRange({ start: [day, websiteId, from], end: [day, websiteId, to] }))
      yield { at: key[2], event: value }
  }
}

function field(event: TrackerEvent, name: TrackerFilter | TrackerDimension): string {
  if (name === 'event') return event.type === 'e' ? (event.name ?? '') : ''
  if (name === 'exit') return ''
  return event[name]
}

function segmentMatches(segment: Segment, event: TrackerEvent): boolean {
  const test = ({ name, operator, value }: Segment['filters'][number]): boolean => {
    const actual = field(event, name)
    if (operator === 'eq') return actual === value
    if (operator === 'neq') return actual !== value
    const has = actual.toLowerCase().includes(value.toLowerCase())
    return operator === 'contains' ? has : !has
  }
  return segment.match === 'any' ? segment.filters.some(test) : segment.filters.every(test)
}

/** Who belongs to a cohort: the visitor hashes and distinct ids that did its action in its window. */
function cohortMembers(
  store: StoreReader,
  websiteId: string,
  cohort: Cohort,
  read: () => void,
): { visitors: Set<string>; distinctIds: Set<string> } {
  const visitors = new Set<string>()
  const distinctIds = new Set<string>()
  for (const { event } of events(store, websiteId, cohort.startAt, cohort.endAt)) {
    read()
    const did =
      cohort.action.type === 'event'
        ? event.type === 'e' && event.name === cohort.action.value
        : event.type === 'p' && event.path === cohort.action.value
    if (!did) continue
    visitors.add(event.visitor)
    if (event.distinctId !== '') distinctIds.add(event.distinctId)
  }
  return { visitors, distinctIds }
}

/**
 * Combined filters, segments and cohorts over raw events: page views, distinct visitors and visits,
 * bounces and time of the matching page views.
 */
function scan(store: StoreReader, websiteId: string, options: QueryOptions): { totals: Totals; rows: Row[] | null } {
  const filters = Object.entries(options.filters) as [TrackerFilter, string][]
  const dimension = options.dimension
  if (dimension === 'exit')
    throw new ApiError('validation', 'exit rows come from rollups: break down by exit with no filter, or with the filter path only', {
      field: 'query.dimension',
    })
  interface Group {
    pageviews: number
    events: number
    visitors: Set<string>
    visits: Map<string, { views: number; first: number; last: number }>
  }
  const group = (): Group => ({ pageviews: 0, events: 0, visitors: new Set(), visits: new Map() })
  const all = group()
  const groups = new Map<string, Group>()
  let read = 0
  const count = () => {
    if (++read > TRACKER_SCAN_MAX) {
      throw new ApiError(
        'validation',
        `These filters together are answered from raw events, and this range (with the cohort's window) holds more than ${TRACKER_SCAN_MAX.toLocaleString('en')} of them: narrow startAt and endAt, or use one filter (answered from rollups)`,
        { field: 'query.startAt', limit: TRACKER_SCAN_MAX },
      )
    }
  }
  const cohort = options.cohort === undefined ? null : cohortMembers(store, websiteId, options.cohort, count)
  for (const { at, event } of events(store, websiteId, options.startAt, options.endAt)) {
    count()
    let matches = true
    for (const [name, value] of filters) {
      // A filter on event keeps only that custom event; the others apply to page views and events alike.
      if (field(event, name) !== value) {
        matches = false
        break
      }
    }
    if (!matches) continue
    if (options.segment !== undefined && !segmentMatches(options.segment, event)) continue
    if (cohort !== null && !cohort.visitors.has(event.visitor) && !(event.distinctId !== '' && cohort.distinctIds.has(event.distinctId)))
      continue
    const targets = [all]
    if (dimension !== null) {
      const name = field(event, dimension)
      if (name !== '') {
        let g = groups.get(name)
        if (g === undefined) groups.set(name, (g = group()))
        targets.push(g)
      }
    }
    for (const g of targets) {
      g.visitors.add(event.visitor)
      if (event.type === 'e') {
        g.events++
        continue
      }
      g.pageviews++
      const visit = g.visits.get(event.visit)
      if (visit === undefined) g.visits.set(event.visit, { views: 1, first: at, last: at })
      else {
        visit.views++
        visit.last = at
      }
    }
  }
  const summed = (g: Group): Totals => {
    let bounces = 0
    let time = 0
    for (const v of g.visits.values()) {
      if (v.views === 1) bounces++
      time += v.last - v.first
    }
    return {
      pageviews: g.pageviews,
      visitors: g.visitors.size,
      visits: g.visits.size,
      bounces,
      totaltime: Math.round(time / 1000),
      events: g.events,
    }
  }
  const totals = summed(all)
  if (dimension === null) return { totals, rows: null }
  const rows = [...groups].map(([name, g]) => {
    const t = summed(g)
    return {
      name,
      pageviews: t.pageviews,
      visitors: t.visitors,
      visits: t.visits,
      bounces: t.bounces,
      totaltime: t.totaltime,
      events: t.events,
    }
  })
  return { totals, rows: rank(rows, options.limit) }
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
