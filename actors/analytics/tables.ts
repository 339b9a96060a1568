import type { StoreFor } from '../../core/store/reader.js'

/** The tables this concern owns: page views counted by the beacon and the tracker, their rollups, and shared dashboard links. */
export type AnalyticsStoreOwn =
  | 'analyticsDaily'
  | 'analyticsHourly'
  | 'analyticsMinutely'
  | 'analyticsShares'
  | 'trackerDaily'
  | 'trackerEvents'
  | 'trackerHourly'
  | 'trackerSalts'

/** The store as this concern holds it: its own tables writable, every other table read-only. */
export type AnalyticsStore = StoreFor<AnalyticsStoreOwn>
