// The stored shape of one raw tracker event (the store's `trackerEvents` table).

/**
 * One raw tracker event: what the rollups were made of, for queries that combine filters. `visitor`
 * is a hash under a salt of its day; the visit's own values (entry, referrer, country, …) are copied
 * onto each of its events so a filter on them matches the whole visit.
 */
export interface TrackerEvent {
  type: 'p' | 'e'
  visitor: string
  visit: string
  path: string
  title: string
  query: string
  tag: string
  distinctId: string
  entry: string
  referrer: string
  channel: string
  domain: string
  country: string
  region: string
  city: string
  browser: string
  os: string
  device: string
  language: string
  screen: string
  hostname: string
  utmSource: string
  utmMedium: string
  utmCampaign: string
  utmContent: string
  utmTerm: string
  name?: string
  data?: string
}
