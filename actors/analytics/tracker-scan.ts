/** Tracker queries over raw events: combined filters, segments and cohorts, refused past TRACKER_SCAN_MAX events. */

import { ApiError } from '../../core/errors.js'
import { TRACKER_SCAN_MAX } from '../../core/limits.js'
import type { TrackerEvent } from '../../core/store/store.js'
import type { StoreReader } from '../../core/store/reader.js'
import type { TrackerDimension } from './tracker-dimensions.js'
import type { Cohort, QueryOptions, Row, Segment, Totals, TrackerFilter } from './tracker-filters.js'
import { rank } from './tracker-rollups.js'

const DAY = 24 * 60 * 60 * 1000

/** The raw events of a website in [from, to), day by day (keys start with the UTC day). */
export function* events(store: StoreReader, websiteId: string, from: number, to: number): Generator<{ at: number; event: TrackerEvent }> {
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
export function scan(store: StoreReader, websiteId: string, options: QueryOptions): { totals: Totals; rows: Row[] | null } {
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
