/** One flush's rollup cells: the six metrics per website, dimension, hour and value, found once per visit and hour. */

import { VISIT_DIMENSIONS, type Metric, type VisitDimension } from './tracker-dimensions.js'

const HOUR = 60 * 60 * 1000

/** A visit in progress: its first page view's values (`attrs`) and the rollup cells found for it in the current flush. */
export interface Visit {
  id: string
  start: number
  last: number
  views: number
  exit: string | null
  attrs: Record<VisitDimension, string>
  /** The rollup cells of the total and the visit's own values, for one hour of one flush (found once, not per metric). */
  cells: { flush: number; hour: number; cells: Float64Array[] } | null
  startCells: { flush: number; cells: Float64Array[] } | null
}

/** The metrics' places in a rollup cell. */
export const METRICS: readonly Metric[] = ['v', 'u', 's', 'b', 't', 'e']
export const V = 0
export const U = 1
export const S = 2
export const B = 3
export const T = 4
export const E = 5

/**
 * The rollup cells of flush `flushId`, and the ways a flush counts into them. `bounded` stores a value
 * within the hour's limit of distinct values (past it, the value shares the `(other)` cell).
 */
export function flushCells(flushId: number, bounded: (websiteId: string, hour: number, dimension: string, value: string) => string) {
  // Rollup cells of this flush: one Float64Array of the six metrics per [website, dimension, hour, value].
  const cells = new Map<string, { key: [string, string, number, string]; counts: Float64Array }>()
  const cell = (websiteId: string, dimension: string, hour: number, value: string): Float64Array => {
    const id = `${websiteId}\u0000${dimension}\u0000${hour}\u0000${value}`
    let entry = cells.get(id)
    if (entry === undefined) {
      // Bounded once a flush per value: past the hour's limit it shares the (other) cell.
      const stored = dimension === '' ? '' : bounded(websiteId, hour, dimension, value)
      entry = stored === value ? undefined : cells.get(`${websiteId}\u0000${dimension}\u0000${hour}\u0000${stored}`)
      if (entry === undefined) entry = { key: [websiteId, dimension, hour, stored], counts: new Float64Array(METRICS.length) }
      cells.set(id, entry)
      if (stored !== value) cells.set(`${websiteId}\u0000${dimension}\u0000${hour}\u0000${stored}`, entry)
    }
    return entry.counts
  }
  const visitCells = (websiteId: string, visit: Visit, hour: number): Float64Array[] => {
    const found = [cell(websiteId, '', hour, '')]
    for (const dimension of VISIT_DIMENSIONS)
      if (visit.attrs[dimension] !== '') found.push(cell(websiteId, dimension, hour, visit.attrs[dimension]))
    return found
  }
  /** The cells of the visit's values in the hour of `time` (page views, visitors). */
  const atHour = (websiteId: string, visit: Visit, time: number): Float64Array[] => {
    const hour = Math.floor(time / HOUR) * HOUR
    if (visit.cells === null || visit.cells.flush !== flushId || visit.cells.hour !== hour)
      visit.cells = { flush: flushId, hour, cells: visitCells(websiteId, visit, hour) }
    return visit.cells.cells
  }
  /** The cells of the visit's values in the hour it started (visits, bounces, time). */
  const atStart = (websiteId: string, visit: Visit): Float64Array[] => {
    if (visit.startCells === null || visit.startCells.flush !== flushId) {
      const hour = Math.floor(visit.start / HOUR) * HOUR
      visit.startCells = {
        flush: flushId,
        cells:
          visit.cells !== null && visit.cells.flush === flushId && visit.cells.hour === hour
            ? visit.cells.cells
            : visitCells(websiteId, visit, hour),
      }
    }
    return visit.startCells.cells
  }
  const addAll = (found: Float64Array[], metric: number, n: number) => {
    for (const counts of found) counts[metric] += n
  }
  const add = (websiteId: string, dimension: string, time: number, value: string, metric: number, n: number) => {
    cell(websiteId, dimension, Math.floor(time / HOUR) * HOUR, value)[metric] += n
  }
  return { cells, atHour, atStart, addAll, add }
}
