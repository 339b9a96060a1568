/** Where a visit came from: its channel, its referring domain and its UTM parameters. */

import type { UtmField } from './tracker-dimensions.js'

const SEARCH = /(^|\.)(google|bing|duckduckgo|yahoo|yandex|baidu|ecosia|qwant|startpage|search\.brave|naver|seznam|kagi)\./
const SOCIAL =
  /(^|\.)(facebook|fb|instagram|t\.co|twitter|x\.com|linkedin|lnkd|reddit|pinterest|tiktok|youtube|mastodon|threads|bsky|news\.ycombinator|quora|vk|weibo|tumblr)(\.|$)/
const EMAIL = /(^|\.)(mail\.|outlook\.|gmail\.|mail\.yahoo\.)/

/** The channel a visit came through, from its UTM medium and referring host (the groups Umami and GA use). */
export function channelOf(referrer: string, utmMedium: string, utmSource: string): string {
  const medium = utmMedium.toLowerCase()
  const paid = /^(cpc|ppc|paid|paidsearch|paid_search|paid-social|paidsocial|display|banner|cpm|cpv|cpa)/.test(medium)
  const search = SEARCH.test(referrer) || /google|bing|duckduckgo/.test(utmSource.toLowerCase())
  const social = SOCIAL.test(referrer) || /facebook|instagram|twitter|linkedin|reddit|tiktok/.test(utmSource.toLowerCase())
  if (medium === 'email' || medium === 'e-mail' || medium === 'newsletter' || EMAIL.test(referrer)) return 'email'
  if (medium === 'sms') return 'sms'
  if (paid) return search ? 'paidSearch' : social ? 'paidSocial' : 'paidAds'
  if (search) return 'organicSearch'
  if (social || medium === 'social') return 'organicSocial'
  if (referrer === '(direct)') return medium === '' ? 'direct' : 'referral'
  return 'referral'
}

/** A referring host's domain: the host without `www.` or `m.`. */
export function domainOf(referrer: string): string {
  return referrer.startsWith('(') ? referrer : referrer.replace(/^(www\d?|m)\./, '')
}

/** The UTM parameters of a page view's query, each at most 100 characters ('' when absent). */
export function utmOf(query: string): Record<UtmField, string> {
  const params = new URLSearchParams(query)
  const get = (name: string) => (params.get(name) ?? '').slice(0, 100)
  return {
    utmSource: get('utm_source'),
    utmMedium: get('utm_medium'),
    utmCampaign: get('utm_campaign'),
    utmContent: get('utm_content'),
    utmTerm: get('utm_term'),
  }
}
