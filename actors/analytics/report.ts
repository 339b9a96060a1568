import type { Store } from '../../core/store/store.js'
import { BEACON_DIMENSIONS, type BeaconDimension } from './beacon.js'

const HOUR = 60 * 60 * 1000
const DAY = 24 * HOUR

export interface BeaconReport {
  /** Buckets of the series: hours for ranges up to two days, days beyond. */
  unit: 'hour' | 'day'
  totals: { pageviews: number }
  series: { x: number; y: number }[]
  top: Record<BeaconDimension, { name: string; pageviews: number }[]>
}

/**
 * Reads the edge beacon's rollups for a website between `from` and `to` (ms): hourly rollups for up
 * to two days, daily ones beyond, so a 90-day report reads 90 buckets, never raw hits.
 */
export function beaconReport(store: Store, websiteId: string, from: number, to: number, topN: number): BeaconReport {
  const unit = to - from <= 2 * DAY ? 'hour' : 'day'
  const size = unit === 'hour' ? HOUR : DAY
  const table = unit === 'hour' ? store.analyticsHourly : store.analyticsDaily
  // Every bucket that [from, to] touches, the one holding `to` (now, usually) included.
  const first = Math.floor(from / size) * size
  const last = Math.floor(to / size) * size
  const series = new Map<number, number>()
  for (let x = first; x <= last; x += size) series.set(x, 0)
  const sums = Object.fromEntries(BEACON_DIMENSIONS.map((d) => [d, new Map<string, number>()])) as Record<BeaconDimension, Map<string, number>>
  let total = 0
  for (const { key, value } of table.range({ start: [websiteId, first, '', ''], end: [websiteId, last + 1, '', ''] })) {
    const [, bucket, dimension, name] = key as [string, number, string, string]
    if (dimension === '') {
      total += value
      series.set(bucket, (series.get(bucket) ?? 0) + value)
      continue
    }
    const sum = sums[dimension as BeaconDimension]
    if (sum !== undefined) sum.set(name, (sum.get(name) ?? 0) + value)
  }
  const top = Object.fromEntries(
    BEACON_DIMENSIONS.map((d) => [
      d,
      [...sums[d]]
        .sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]))
        .slice(0, topN)
        .map(([name, pageviews]) => ({ name, pageviews })),
    ]),
  ) as BeaconReport['top']
  return { unit, totals: { pageviews: total }, series: [...series].map(([x, y]) => ({ x, y })), top }
}
