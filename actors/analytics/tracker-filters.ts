/** What a tracker query is asked and answers: its filters, segments and cohorts, its totals and rows. */

import { UTM_FIELDS, type TrackerDimension } from './tracker-dimensions.js'

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

/** A query's totals over everything it kept. */
export interface Totals {
  pageviews: number
  visitors: number
  visits: number
  bounces: number
  /** Seconds spent in visits (from each visit's first to last page view). */
  totaltime: number
  events: number
}

/** One value of the dimension asked about; visit figures are null where the dimension has none. */
export interface Row {
  name: string
  pageviews: number
  visitors: number
  visits: number | null
  bounces: number | null
  totaltime: number | null
  events: number
}

/** What trackerQuery is asked: the range, the dimension to break down by, how many rows, and what to keep. */
export interface QueryOptions {
  startAt: number
  endAt: number
  dimension: TrackerDimension | null
  limit: number
  filters: Partial<Record<TrackerFilter, string>>
  segment?: Segment
  cohort?: Cohort
}
