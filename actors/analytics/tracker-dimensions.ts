/** The tracker's dimensions and metrics: what a visit and each page view are counted under, and the rollup metric letters. */

/** The spec's dimensions (analytics.query `dimension`), all kept by the tracker. */
export const TRACKER_DIMENSIONS = [
  'path',
  'entry',
  'exit',
  'title',
  'query',
  'referrer',
  'channel',
  'domain',
  'country',
  'region',
  'city',
  'browser',
  'os',
  'device',
  'language',
  'screen',
  'event',
  'hostname',
  'tag',
  'distinctId',
] as const
export type TrackerDimension = (typeof TRACKER_DIMENSIONS)[number]
/** UTM parameters: filters (spec), kept as rollups too so one of them alone reads rollups. */
export const UTM_FIELDS = ['utmSource', 'utmMedium', 'utmCampaign', 'utmContent', 'utmTerm'] as const
export type UtmField = (typeof UTM_FIELDS)[number]

/**
 * What belongs to a visit, taken from its first page view (as Plausible and Umami attribute sources):
 * every page view of the visit counts under these values, and so do its visit, bounce and time.
 */
export const VISIT_DIMENSIONS = [
  'entry',
  'referrer',
  'channel',
  'domain',
  'country',
  'region',
  'city',
  'browser',
  'os',
  'device',
  'language',
  'screen',
  'hostname',
  ...UTM_FIELDS,
] as const
export type VisitDimension = (typeof VISIT_DIMENSIONS)[number]
/** What belongs to each page view (or event) itself. */
export const PAGE_DIMENSIONS = ['path', 'title', 'query', 'tag', 'distinctId'] as const

/**
 * Rollup metrics, in a rollup key `[websiteId, dimension, metric, bucket, value]` (metric before the
 * buckets, so a ranking reads page views alone):
 * page views, visitors, visits, bounces, time in visits (ms), custom events. Dimension '' is the total.
 */
export type Metric = 'v' | 'u' | 's' | 'b' | 't' | 'e'
