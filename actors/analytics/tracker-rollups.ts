/** Reading the tracker's rollups: a range's grain and buckets, a dimension's metrics summed over them, and rows made and ranked from them. */

import type { CounterReader } from '../../core/store/reader.js'
import type { Row, Totals } from './tracker-filters.js'
import { VISIT_DIMENSIONS, type Metric } from './tracker-dimensions.js'

const HOUR = 60 * 60 * 1000
const DAY = 24 * HOUR

/** Hours for ranges up to two days, days beyond. */
export function grain(from: number, to: number): { table: 'trackerHourly' | 'trackerDaily'; size: number } {
  return to - from <= 2 * DAY ? { table: 'trackerHourly', size: HOUR } : { table: 'trackerDaily', size: DAY }
}

/** The first and last buckets of `size` that [from, to) touches. */
export function bucketsOf(from: number, to: number, size: number): [number, number] {
  return [Math.floor(from / size) * size, Math.floor((to - 1) / size) * size]
}

/** Metrics per value of one dimension. */
type Sums = Map<string, Record<Metric, number>>
/** Every metric at zero. */
export const zero = (): Record<Metric, number> => ({ v: 0, u: 0, s: 0, b: 0, t: 0, e: 0 })

/** One metric of one dimension ('' : the total) per value, summed over the buckets [first, last]. */
export function metricSums(
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

/**
 * One dimension's values ('' : the total) summed over the buckets [from, to) touches, per metric. A
 * value whose counts all sum to nothing is left out: a visit's exit page moves along as it goes on (-1
 * where it was, +1 where it is), and when the two fall in different flushes the old page keeps a cell of 0.
 */
export function sums(table: CounterReader, websiteId: string, dimension: string, first: number, last: number): Sums {
  const out: Sums = new Map()
  for (const metric of metricsOf(dimension)) {
    for (const [name, n] of metricSums(table, websiteId, dimension, metric, first, last)) {
      let row = out.get(name)
      if (row === undefined) out.set(name, (row = zero()))
      row[metric] += n
    }
  }
  for (const [name, row] of out) if (Object.values(row).every((n) => n === 0)) out.delete(name)
  return out
}

/** One metric of the given values, read bucket by bucket (a few values of a ranking, not all). */
export function pointSums(
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

/** Summed metrics as a query's totals (time in seconds). */
export function toTotals(m: Record<Metric, number>): Totals {
  return { pageviews: m.v, visitors: m.u, visits: m.s, bounces: m.b, totaltime: Math.round(m.t / 1000), events: m.e }
}

/** Summed metrics of one value as a row (visit figures only where the dimension has visits). */
export function toRow(name: string, m: Record<Metric, number>, dimension: string): Row {
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

/** The top `limit` rows: by page views, then events, then visitors, then name. */
export function rank(rows: Row[], limit: number): Row[] {
  return rows
    .sort((a, b) => b.pageviews - a.pageviews || b.events - a.events || b.visitors - a.visitors || a.name.localeCompare(b.name))
    .slice(0, limit)
}
