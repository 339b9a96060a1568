import assert from 'node:assert/strict'
import { test } from 'node:test'
import { rawPost, rawRequest } from '../helpers/http.js'
import { createWebsite, startServer } from '../helpers/server.js'

const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36'
const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1'
const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'

test('the edge beacon counts published HTML page views (no drafts, bots, 304s, HEADs or assets) by path, referrer, country, device and hostname', async (t) => {
  const server = await startServer(t, { PLINTH_COUNTRY_HEADER: 'CF-IPCountry' })
  const site = await createWebsite(server, { name: 'Stats', kind: 'static', subdomain: 'stats' })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, {
    body: {
      files: [
        { path: 'index.html', content: '<h1>Home</h1>' },
        { path: 'about.html', content: '<h1>About</h1>' },
        { path: 'style.css', content: 'h1{}' },
      ],
    },
  })
  assert.equal((await server.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  const get = (path: string, headers: Record<string, string>, host = 'stats.localhost', method = 'GET') =>
    rawRequest(server.plinth.port, host, path, headers, method)

  const home = await get('/', { 'user-agent': CHROME, referer: 'https://news.example/item?id=1', 'cf-ipcountry': 'de' })
  assert.equal(home.status, 200)
  await get('/about', { 'user-agent': IPHONE })
  await get('/', { 'user-agent': CHROME, referer: 'http://stats.localhost/about.html' })
  // Not counted: a bot, an asset, the draft host, a version's own address, a HEAD, a 304.
  await get('/', { 'user-agent': GOOGLEBOT })
  await get('/style.css', { 'user-agent': CHROME })
  await get('/', { 'user-agent': CHROME }, 'draft--stats.localhost')
  assert.equal((await get('/', { 'user-agent': CHROME }, 'v2--stats.localhost')).status, 200)
  await get('/', { 'user-agent': CHROME }, 'stats.localhost', 'HEAD')
  assert.equal((await get('/', { 'user-agent': CHROME, 'if-none-match': home.headers.etag as string })).status, 304)

  const report = await server.api('GET', `/v1/websites/${site.id}/analytics?period=24h`)
  assert.equal(report.status, 200, JSON.stringify(report.body))
  assert.equal(report.body.source, 'beacon')
  assert.equal(report.body.unit, 'hour')
  // Visits as Cloudflare counts them: a view that arrived from another site or none; the third view came from /about.
  assert.deepEqual(report.body.totals, { pageviews: 3, visitors: null, visits: 2, bounces: null, totaltime: null, events: null })
  assert.deepEqual(report.body.sources, { pageviews: 'beacon', visits: 'beacon', visitors: null })
  assert.deepEqual(report.body.pages, [
    { name: '/', pageviews: 2 },
    { name: '/about', pageviews: 1 },
  ])
  assert.deepEqual(
    report.body.referrers,
    [
      { name: '(direct)', pageviews: 2 },
      { name: 'news.example', pageviews: 1 },
    ],
    'a visit from the same site is direct',
  )
  assert.deepEqual(report.body.countries, [
    { name: 'unknown', pageviews: 2 },
    { name: 'DE', pageviews: 1 },
  ])
  assert.deepEqual(report.body.devices, [
    { name: 'desktop', pageviews: 2 },
    { name: 'mobile', pageviews: 1 },
  ])
  assert.deepEqual(report.body.hostnames, [{ name: 'stats.localhost', pageviews: 3 }])
  assert.equal(report.body.series.length, 25, 'every hour the 24 hours touch, the current one included')
  assert.equal(
    report.body.series.reduce((sum: number, p: any) => sum + p.y, 0),
    3,
  )

  // Two days on, a week's report is in days and still holds those views.
  server.clock.advance(2 * 24 * 60 * 60 * 1000)
  await get('/about', { 'user-agent': CHROME })
  const week = (await server.api('GET', `/v1/websites/${site.id}/analytics`)).body
  assert.deepEqual([week.unit, week.series.length, week.totals.pageviews], ['day', 8, 4], 'every day the week touches')
  assert.equal((await server.api('GET', `/v1/websites/${site.id}/analytics?period=7d&from=2026-01-01T00:00:00Z`)).status, 400)
  assert.equal((await server.api('GET', `/v1/websites/${site.id}/analytics?from=nonsense`)).status, 400)
})

test('analytics.query, timeseries and realtime answer from the beacon (source: beacon) and say what needs the tracker', async (t) => {
  const server = await startServer(t, { PLINTH_COUNTRY_HEADER: 'CF-IPCountry' })
  const site = await createWebsite(server, { name: 'Series', kind: 'static', subdomain: 'series' })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, {
    body: {
      files: [
        { path: 'index.html', content: 'home' },
        { path: 'a.html', content: 'a' },
      ],
    },
  })
  await server.api('POST', `/v1/websites/${site.id}/publish`)
  const view = (path: string, country = 'FR') =>
    rawRequest(server.plinth.port, 'series.localhost', path, { 'user-agent': CHROME, 'cf-ipcountry': country })
  const start = server.clock.now() // 2026-01-01T00:00Z
  // Day 1: 3 views (at 00:00 and 23:00 UTC); day 2: 2 views.
  await view('/')
  await view('/a', 'US')
  server.clock.advance(23 * 60 * 60 * 1000)
  await view('/')
  server.clock.advance(2 * 60 * 60 * 1000)
  await view('/')
  await view('/a')
  // endAt is exclusive: one past the last view.
  const end = server.clock.now() + 1
  const api = (path: string) => server.api('GET', `/v1/websites/${site.id}/analytics/${path}`)

  const totals = (await api(`query?startAt=${start}&endAt=${end}`)).body
  assert.deepEqual(totals, { source: 'beacon', pageviews: 5, visitors: null, visits: 5, bounces: null, totaltime: null, events: null })
  const paths = (await api(`query?startAt=${start}&endAt=${end}&dimension=path&limit=1`)).body
  assert.deepEqual(paths.rows, [{ name: '/', pageviews: 3 }])
  assert.equal((await api(`query?startAt=${start}&endAt=${end}&country=US`)).body.pageviews, 1)
  const refused = await api(`query?startAt=${start}&endAt=${end}&dimension=browser`)
  assert.equal(refused.status, 400)
  assert.match(refused.body.message, /needs the tracker.*path, referrer, country, device, hostname/)
  assert.equal((await api(`query?startAt=${start}&endAt=${end}&dimension=path&country=US`)).status, 400, 'one dimension at a time')

  const days = (await api(`timeseries?startAt=${start}&endAt=${end}&unit=day`)).body
  assert.deepEqual(days.pageviews, [
    { x: '2026-01-01', y: 3 },
    { x: '2026-01-02', y: 2 },
  ])
  // Spec (timeseries): "pageviews: `{pageviews:[{x,y}], sessions:[{x,y}], compare?}`": sessions from the
  // beacon are visits begun (none of these views came from the site itself).
  assert.deepEqual(days.sessions, [
    { x: '2026-01-01', y: 3 },
    { x: '2026-01-02', y: 2 },
  ])
  // In New York (UTC-5) the 23:00 UTC view falls on the first day, and midnight UTC on the last day of 2025.
  const newYork = (await api(`timeseries?startAt=${start}&endAt=${end}&unit=day&timezone=America/New_York`)).body
  assert.deepEqual(newYork.pageviews, [
    { x: '2025-12-31', y: 2 },
    { x: '2026-01-01', y: 3 },
  ])
  const hours = (await api(`timeseries?startAt=${start}&endAt=${end}&unit=hour&maxPoints=3`)).body
  assert.equal(hours.pageviews.length, 3)
  assert.deepEqual(hours.truncated, { shown: 3, total: 26, hint: hours.truncated.hint })
  assert.equal(hours.pageviews.at(-1).x, new Date(end - 1).toISOString(), 'the most recent buckets are kept')
  // Two hours against the two before them.
  const compared = (await api(`timeseries?startAt=${start + 24 * 3600e3}&endAt=${start + 26 * 3600e3}&unit=hour&compare=prev`)).body
  assert.deepEqual(
    compared.pageviews.map((p: any) => p.y),
    [0, 2],
    '00:00 and 01:00 of the second day',
  )
  assert.deepEqual(
    compared.compare.pageviews.map((p: any) => p.y),
    [0, 1],
    '22:00 and 23:00 of the first',
  )
  // Spec: "`unit` (year/month/day/hour/minute)": minutes from the beacon too, at most 24 hours.
  assert.equal((await api(`timeseries?startAt=${start}&endAt=${end}&unit=minute`)).status, 400, 'more than 24 hours of minutes')
  const lastHour = start + 25 * 3600e3
  const minutes = (await api(`timeseries?startAt=${lastHour - 30 * 60e3}&endAt=${end}&unit=minute&maxPoints=500`)).body
  assert.equal(minutes.pageviews.length, 31, 'every minute of the range')
  assert.deepEqual(
    minutes.pageviews.filter((p: any) => p.y > 0),
    [{ x: new Date(lastHour).toISOString(), y: 2 }],
  )
  assert.deepEqual(
    minutes.sessions.filter((p: any) => p.y > 0),
    [{ x: new Date(lastHour).toISOString(), y: 2 }],
  )
  assert.equal((await api(`timeseries?startAt=${start}&endAt=${end}&timezone=Mars/Olympus`)).status, 400)
  assert.equal((await api(`timeseries?startAt=${start}&endAt=${end}&series=events`)).status, 400)

  const realtime = (await api('realtime')).body
  // Spec (realtime): "`{views, visitors, events, countries, timestamp}`": the beacon's visitors are the visits begun.
  assert.deepEqual(
    [realtime.source, realtime.views, realtime.visitors, realtime.events, realtime.countries],
    ['beacon', 2, 2, 0, [{ name: 'FR', views: 2 }]],
  )
  server.clock.advance(31 * 60 * 1000)
  assert.equal((await api('realtime')).body.views, 0, 'the trailing 30 minutes only')
})

test('made-up referrers cannot grow the rollups without bound: past 1,000 hosts an hour the rest count as (other)', async (t) => {
  const server = await startServer(t)
  const site = await createWebsite(server, { name: 'Refs', kind: 'static', subdomain: 'refs' })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: 'x' }] } })
  await server.api('POST', `/v1/websites/${site.id}/publish`)
  for (let i = 0; i < 1005; i++)
    await rawRequest(server.plinth.port, 'refs.localhost', '/', { 'user-agent': CHROME, referer: `https://spam-${i}.example/` })
  const rows = (
    await server.api(
      'GET',
      `/v1/websites/${site.id}/analytics/query?startAt=${server.clock.now() - 1000}&endAt=${server.clock.now() + 1}&dimension=referrer&limit=1000`,
    )
  ).body.rows
  assert.equal(rows.length, 1000)
  assert.deepEqual(rows[0], { name: '(other)', pageviews: 5 }, 'the first 1,000 distinct hosts are kept; the five after them are (other)')
  assert.equal(
    rows.reduce((sum: number, r: any) => sum + r.pageviews, 0),
    1004,
    'the top 1,000 rows: (other) and 999 hosts',
  )
})

test('once a site sends tracker data, analytics.get still counts every page the platform served; the tracker adds its visitors', async (t) => {
  // Spec (Analytics): "/websites/{id}/analytics | analytics.get | … | totals, series, top pages / referrers /
  // countries / devices (edge beacon, counts all published HTML responses)".
  const server = await startServer(t, { PLINTH_TRUSTED_PROXIES: '127.0.0.1' })
  const site = await createWebsite(server, { name: 'Both', kind: 'static', subdomain: 'both' })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, {
    body: { files: [{ path: 'index.html', content: '<h1>Home</h1><script defer src="/_platform/a.js"></script>' }] },
  })
  assert.equal((await server.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  // Seven page loads; only one browser ran the script (the others: curl, a blocked script, no JavaScript).
  for (let i = 0; i < 7; i++)
    assert.equal(
      (await rawRequest(server.plinth.port, 'both.localhost', '/', { 'user-agent': CHROME, 'x-forwarded-for': `203.0.113.${i}` })).status,
      200,
    )
  const sent = await rawPost(
    server.plinth.port,
    'both.localhost',
    '/_platform/collect',
    JSON.stringify({ type: 'pageview', path: '/', title: 'Home' }),
    {
      'user-agent': CHROME,
      'x-forwarded-for': '203.0.113.0',
      'content-type': 'application/json',
    },
  )
  assert.equal(sent.status, 204)
  const report = (await server.api('GET', `/v1/websites/${site.id}/analytics?period=24h`)).body
  assert.equal(report.totals.pageviews, 7, 'every published HTML page served')
  assert.deepEqual(report.pages, [{ name: '/', pageviews: 7 }])
  assert.deepEqual([report.totals.visitors, report.totals.visits], [1, 1], 'from the tracker')
  assert.deepEqual(report.sources, { pageviews: 'beacon', visits: 'tracker', visitors: 'tracker' })
  // The tracker's own endpoints answer from the tracker (spec: "When the tracker backend is not configured
  // the three tracker endpoints answer from the beacon").
  const range = `startAt=${server.clock.now() - 60_000}&endAt=${server.clock.now() + 1}`
  assert.deepEqual(
    [
      (await server.api('GET', `/v1/websites/${site.id}/analytics/query?${range}`)).body.source,
      (await server.api('GET', `/v1/websites/${site.id}/analytics/query?${range}`)).body.pageviews,
    ],
    ['tracker', 1],
  )
})

test('the beacon keeps per-minute counts for PLINTH_ANALYTICS_RETENTION_DAYS; hourly and daily rollups stay', async (t) => {
  const server = await startServer(t, { PLINTH_ANALYTICS_RETENTION_DAYS: '2' })
  const site = await createWebsite(server, { name: 'Minutes', kind: 'static', subdomain: 'minutes' })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: 'x' }] } })
  await server.api('POST', `/v1/websites/${site.id}/publish`)
  const start = server.clock.now()
  await rawRequest(server.plinth.port, 'minutes.localhost', '/', { 'user-agent': CHROME })
  const range = `startAt=${start}&endAt=${start + 60_000}`
  const series = (path: string) =>
    server.api('GET', `/v1/websites/${site.id}/analytics/timeseries?${range}&${path}`).then((r) => r.body.pageviews.map((p: any) => p.y))
  assert.deepEqual(await series('unit=minute'), [1])
  server.clock.advance(3 * 24 * 60 * 60 * 1000)
  await rawRequest(server.plinth.port, 'minutes.localhost', '/', { 'user-agent': CHROME })
  assert.deepEqual(await series('unit=minute'), [0], 'minutes older than the retention are gone')
  assert.deepEqual(await series('unit=hour'), [1], 'hours stay')
})

test("a page view counted by the serving path's counters (a user agent already judged) reports exactly as one judged when folded", async (t) => {
  const server = await startServer(t, { PLINTH_COUNTRY_HEADER: 'CF-IPCountry' })
  const site = await createWebsite(server, { name: 'Twice', kind: 'static', subdomain: 'twice' })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, {
    body: {
      files: [
        { path: 'index.html', content: 'home' },
        { path: 'about.html', content: 'about' },
        { path: 'docs/index.html', content: 'docs' },
      ],
    },
  })
  await server.api('POST', `/v1/websites/${site.id}/publish`)
  const IPAD =
    'Mozilla/5.0 (iPad; CPU OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1'
  // Every kind of view the counters tell apart: pages by the path asked, referrers from nowhere, the
  // same site (several spellings), other sites and nonsense; devices, bots; countries in either case,
  // malformed or absent.
  const views: [string, Record<string, string>][] = [
    ['/', { 'user-agent': CHROME, 'cf-ipcountry': 'de' }],
    ['/?ref=x', { 'user-agent': CHROME, referer: 'http://twice.localhost/about', 'cf-ipcountry': 'DE' }],
    ['/about', { 'user-agent': IPHONE, referer: 'https://twice.localhost:8443/x?y', 'cf-ipcountry': 'US' }],
    ['/about?x=1', { 'user-agent': IPAD, referer: 'https://news.example/item?id=1' }],
    ['/docs/', { 'user-agent': IPHONE, referer: 'https://twice.localhost.evil.example/', 'cf-ipcountry': 'XYZ' }],
    ['/docs/', { 'user-agent': CHROME, referer: 'http://TWICE.localhost/', 'cf-ipcountry': 'fr' }],
    ['/', { 'user-agent': CHROME, referer: 'not a url', 'cf-ipcountry': 'F1' }],
    ['/', { 'user-agent': GOOGLEBOT, referer: 'https://news.example/' }],
    ['/about', { 'user-agent': '' }],
  ]
  const start = server.clock.now()
  const api = (path: string) => server.api('GET', `/v1/websites/${site.id}/analytics/${path}`)
  const report = async () => {
    const range = `startAt=${start}&endAt=${server.clock.now() + 1}`
    const out: Record<string, unknown> = { totals: (await api(`query?${range}`)).body }
    for (const dimension of ['path', 'referrer', 'country', 'device', 'hostname'])
      out[dimension] = Object.fromEntries(
        (await api(`query?${range}&dimension=${dimension}`)).body.rows.map((r: any) => [r.name, r.pageviews]),
      )
    const minutes = (await api(`timeseries?${range}&unit=minute`)).body
    out.minutes = [minutes.pageviews.filter((p: any) => p.y > 0), minutes.sessions.filter((p: any) => p.y > 0)]
    const realtime = (await api('realtime')).body
    out.realtime = [realtime.views, realtime.visitors, Object.fromEntries(realtime.countries.map((c: any) => [c.name, c.views]))]
    return out
  }
  const send = async () => {
    for (const [path, headers] of views) assert.equal((await rawRequest(server.plinth.port, 'twice.localhost', path, headers)).status, 200)
  }
  // First: every user agent is new, so each view waits as raw text and is judged when folded (the report folds first).
  await send()
  const once = await report()
  assert.deepEqual(once.totals, { source: 'beacon', pageviews: 7, visitors: null, visits: 4, bounces: null, totaltime: null, events: null })
  assert.deepEqual(once.referrer, { '(direct)': 5, 'news.example': 1, 'twice.localhost.evil.example': 1 })
  // Again: the same views now go to the counters. Every figure doubles, no more, no less.
  await send()
  const twice = await report()
  const doubled = JSON.parse(JSON.stringify(once, (_key, value) => (typeof value === 'number' ? value * 2 : value)))
  assert.deepEqual(twice, doubled)
})
