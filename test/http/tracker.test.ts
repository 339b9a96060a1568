import assert from 'node:assert/strict'
import { existsSync } from 'node:fs'
import { test } from 'node:test'
import { gunzipSync } from 'node:zlib'
import { chromium } from 'playwright-core'
import { rawPost, rawRequest } from '../helpers/http.js'
import { createWebsite, startServer, type TestServer } from '../helpers/server.js'
import { API_POLL_MS, waitUntil } from '../helpers/wait.js'

const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36'
const IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1'
const GOOGLEBOT = 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)'
const MINUTE = 60 * 1000
const DAY = 24 * 60 * MINUTE

/** What /_platform/a.js sends, from a visitor at `address` with `userAgent`. */
function collect(
  server: TestServer,
  host: string,
  body: Record<string, unknown>,
  visitor: { address: string; userAgent: string; country?: string },
) {
  return rawPost(server.plinth.port, host, '/_platform/collect', JSON.stringify(body), {
    'content-type': 'text/plain;charset=UTF-8',
    'user-agent': visitor.userAgent,
    'x-forwarded-for': visitor.address,
    ...(visitor.country === undefined ? {} : { 'cf-ipcountry': visitor.country }),
  })
}

const page = (path: string, extra: Record<string, unknown> = {}) => ({
  type: 'pageview',
  path,
  title: `Title of ${path}`,
  screen: '1920x1080',
  language: 'en-US',
  referrer: '',
  ...extra,
})

test('the tracker counts visitors by a daily hash, visits and bounces by a 30-minute window, entry and exit pages, custom events; bots and drafts are never kept', async (t) => {
  const server = await startServer(t, {
    PLINTH_TRUSTED_PROXIES: '127.0.0.1',
    PLINTH_COUNTRY_HEADER: 'CF-IPCountry',
    PLINTH_ANALYTICS_RETENTION_DAYS: '2',
  })
  const site = await createWebsite(server, { name: 'Shop', kind: 'static', subdomain: 'shop' })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, {
    body: {
      files: [
        { path: 'index.html', content: '<h1>Home</h1>' },
        { path: 'pricing.html', content: '<h1>Pricing</h1>' },
      ],
    },
  })
  assert.equal((await server.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  const host = 'shop.localhost'
  const before = (await server.api('GET', `/v1/websites/${site.id}`)).body.analytics
  assert.deepEqual([before.provider, before.tracking], ['beacon', false], 'no tracker data yet')
  assert.equal(before.snippet, `<script defer src="/_platform/a.js" data-website-id="${site.id}"></script>`)

  // The script: on the site's own host, small, cacheable, revalidated by ETag.
  const script = await rawRequest(server.plinth.port, host, '/_platform/a.js', { 'accept-encoding': 'gzip' })
  assert.equal(script.status, 200)
  assert.equal(script.headers['content-type'], 'text/javascript; charset=utf-8')
  assert.equal(script.headers['cache-control'], 'public, max-age=3600')
  assert.ok(script.body.length < 2048, `gzipped: ${script.body.length} bytes`)
  assert.match(gunzipSync(script.body).toString(), /sendBeacon\('\/_platform\/collect'/)
  assert.equal(
    (await rawRequest(server.plinth.port, host, '/_platform/a.js', { 'if-none-match': script.headers.etag as string })).status,
    304,
  )

  const alice = { address: '203.0.113.10', userAgent: CHROME, country: 'DE' }
  const bob = { address: '198.51.100.7', userAgent: IPHONE, country: 'FR' }
  const start = server.clock.now()
  assert.equal(
    (await collect(server, host, page('/', { referrer: 'https://www.google.com/search?q=shop', website: site.id }), alice)).status,
    204,
  )
  // Counted and written before the visit goes on (as the flush timer may do on a busy machine): its exit
  // page then moves from / to /pricing across two flushes, and / must not stay behind as an exit row of 0.
  await server.plinth.registry.tracker.flush()
  server.clock.advance(MINUTE)
  await collect(server, host, page('/pricing'), alice)
  await collect(server, host, { type: 'event', path: '/pricing', name: 'signup', data: { plan: 'pro' } }, alice)
  await collect(server, host, page('/pricing', { query: '?utm_source=newsletter&utm_medium=email' }), bob)
  // Never kept: a bot, the draft host (answered alike).
  assert.equal((await collect(server, host, page('/'), { address: '192.0.2.1', userAgent: GOOGLEBOT })).status, 204)
  assert.equal((await collect(server, `draft--${host}`, page('/'), { address: '192.0.2.2', userAgent: CHROME })).status, 204)
  // Refused, each saying what to send.
  const refused = async (body: string, status: number, pattern: RegExp) => {
    const r = await rawPost(server.plinth.port, host, '/_platform/collect', body, { 'user-agent': CHROME })
    assert.equal(r.status, status, body.slice(0, 60))
    assert.match(JSON.parse(r.body.toString()).message, pattern)
  }
  await refused('not json', 400, /Send one event as JSON/)
  await refused(JSON.stringify({ type: 'click', path: '/' }), 400, /"pageview" or "event"/)
  await refused(JSON.stringify({ type: 'event', path: '/' }), 400, /has a name/)
  await refused(JSON.stringify({ type: 'pageview', path: '/', website: 'ws_someoneelse' }), 400, /use the id in website.analytics/)
  await refused(JSON.stringify({ type: 'pageview', path: 'x'.repeat(9000) }), 413, /at most 8192 bytes/)

  const end = server.clock.now() + 1
  const api = async (path: string) => {
    const r = await server.api('GET', `/v1/websites/${site.id}/analytics/${path}`)
    assert.equal(r.status, 200, `${path}: ${JSON.stringify(r.body)}`)
    return r.body
  }
  const range = `startAt=${start}&endAt=${end}`
  assert.deepEqual(await api(`query?${range}`), {
    source: 'tracker',
    pageviews: 3,
    visitors: 2,
    visits: 2,
    bounces: 1,
    totaltime: 60,
    events: 1,
  })
  const rows = async (dimension: string, filters = '') =>
    (await api(`query?${range}&dimension=${dimension}${filters}`)).rows.map((r: any) => [r.name, r.pageviews, r.visits])
  assert.deepEqual(
    await rows('entry'),
    [
      ['/', 2, 1],
      ['/pricing', 1, 1],
    ],
    'page views of visits that started there',
  )
  assert.deepEqual(await rows('exit'), [['/pricing', 2, 2]], 'both visits ended on /pricing')
  assert.deepEqual(await rows('channel'), [
    ['organicSearch', 2, 1],
    ['email', 1, 1],
  ])
  assert.deepEqual(await rows('domain'), [
    ['google.com', 2, 1],
    ['(direct)', 1, 1],
  ])
  assert.deepEqual(await rows('browser'), [
    ['chrome', 2, 1],
    ['ios', 1, 1],
  ])
  assert.deepEqual(await rows('country'), [
    ['DE', 2, 1],
    ['FR', 1, 1],
  ])
  assert.deepEqual(await rows('title'), [
    ['Title of /pricing', 2, null],
    ['Title of /', 1, null],
  ])
  assert.deepEqual(await rows('screen'), [['1920x1080', 3, 2]])
  const events = (await api(`query?${range}&dimension=event`)).rows
  assert.deepEqual(
    events.map((r: any) => [r.name, r.events, r.visitors]),
    [['signup', 1, 1]],
  )
  // One filter on a visit's value reads rollups; a page's, or several, read raw events: same shape.
  assert.deepEqual(await api(`query?${range}&browser=ios`), {
    source: 'tracker',
    pageviews: 1,
    visitors: 1,
    visits: 1,
    bounces: 1,
    totaltime: 0,
    events: 0,
  })
  assert.deepEqual(await api(`query?${range}&utmSource=newsletter`), {
    source: 'tracker',
    pageviews: 1,
    visitors: 1,
    visits: 1,
    bounces: 1,
    totaltime: 0,
    events: 0,
  })
  assert.deepEqual(await api(`query?${range}&path=/pricing&country=DE`), {
    source: 'tracker',
    pageviews: 1,
    visitors: 1,
    visits: 1,
    bounces: 1,
    totaltime: 0,
    events: 1,
  })
  assert.deepEqual(
    await rows('path', '&country=DE'),
    [
      ['/pricing', 1, 1],
      ['/', 1, 1],
    ],
    'ties ranked by events next',
  )
  assert.equal((await api(`query?${range}&event=signup`)).events, 1)
  // Spec (Filter query parameters): "… utmTerm, segment, cohort". A segment is filters used together
  // (all or any, with eq, neq, contains, notContains); a cohort the visitors who did something.
  const segmentOf = (value: unknown) => `${range}&segment=${encodeURIComponent(JSON.stringify(value))}`
  const cohortOf = (value: unknown) => `${range}&cohort=${encodeURIComponent(JSON.stringify(value))}`
  const either = {
    match: 'any',
    filters: [
      { name: 'country', operator: 'eq', value: 'DE' },
      { name: 'country', value: 'FR' },
    ],
  }
  assert.equal((await api(`query?${segmentOf(either)}`)).pageviews, 3)
  const both = {
    filters: [
      { name: 'country', value: 'DE' },
      { name: 'path', operator: 'contains', value: 'PRIC' },
    ],
  }
  assert.deepEqual(await api(`query?${segmentOf(both)}`), {
    source: 'tracker',
    pageviews: 1,
    visitors: 1,
    visits: 1,
    bounces: 1,
    totaltime: 0,
    events: 1,
  })
  assert.deepEqual(
    (await api(`query?${segmentOf({ filters: [{ name: 'country', operator: 'neq', value: 'DE' }] })}&dimension=browser`)).rows.map(
      (r: any) => [r.name, r.pageviews],
    ),
    [['ios', 1]],
  )
  assert.equal((await api(`query?${segmentOf({ filters: [{ name: 'path', operator: 'notContains', value: 'pricing' }] })}`)).pageviews, 1)
  const signedUp = await api(`query?${cohortOf({ action: { type: 'event', value: 'signup' } })}`)
  assert.deepEqual([signedUp.pageviews, signedUp.visitors, signedUp.events], [2, 1, 1], 'Alice signed up: her page views and event')
  assert.deepEqual(
    [
      (await api(`query?${cohortOf({ action: { type: 'path', value: '/pricing' } })}`)).visitors,
      (await api(`query?${cohortOf({ action: { type: 'path', value: '/' } })}`)).pageviews,
    ],
    [2, 2],
  )
  assert.equal(
    (await api(`query?${cohortOf({ action: { type: 'event', value: 'signup' }, startAt: end, endAt: end + DAY })}`)).pageviews,
    0,
    "nobody signed up in the cohort's own window",
  )
  for (const [name, value, pattern] of [
    ['segment', 'vip', /query\.segment must be JSON/],
    ['segment', '{"filters":[{"name":"shoe","value":"x"}]}', /query\.segment\.filters\/0\/name|query\.segment.filters\[0\]\.name/],
    ['cohort', '{"action":{"type":"click","value":"x"}}', /query\.cohort/],
  ] as const) {
    const bad = await server.api('GET', `/v1/websites/${site.id}/analytics/query?${range}&${name}=${encodeURIComponent(value)}`)
    assert.equal(bad.status, 400, value)
    assert.match(bad.body.message, pattern)
  }

  const series = await api(`timeseries?${range}&unit=hour`)
  assert.deepEqual(
    [series.source, series.pageviews, series.sessions],
    ['tracker', [{ x: new Date(start).toISOString(), y: 3 }], [{ x: new Date(start).toISOString(), y: 2 }]],
  )
  const eventSeries = await api(`timeseries?${range}&unit=day&series=events`)
  assert.deepEqual(eventSeries.events, [{ x: 'signup', t: '2026-01-01', y: 1 }])
  // The same buckets a day earlier (compare=prev over a one-day range), cut to the most recent, in a time zone.
  const day = `startAt=${start}&endAt=${start + DAY}`
  const compared = await api(`timeseries?${day}&unit=hour&compare=prev&maxPoints=2`)
  assert.deepEqual(compared.truncated, { shown: 2, total: 24, hint: compared.truncated.hint })
  assert.deepEqual(
    compared.compare.pageviews.map((p: any) => p.y),
    [0, 0],
  )
  assert.deepEqual(
    (await api(`timeseries?startAt=${start + DAY}&endAt=${start + 2 * DAY}&unit=hour&compare=prev&maxPoints=24`)).compare.pageviews[0],
    {
      x: new Date(start).toISOString(),
      y: 3,
    },
  )
  const tokyo = await api(`timeseries?${range}&unit=day&timezone=Asia/Tokyo`)
  assert.deepEqual(tokyo.pageviews, [{ x: '2026-01-01', y: 3 }], 'midnight UTC is 09:00 in Tokyo')
  const newYork = await api(`timeseries?${range}&unit=day&timezone=America/New_York`)
  assert.deepEqual(newYork.pageviews, [{ x: '2025-12-31', y: 3 }])
  const minutes = await api(`timeseries?${range}&unit=minute`)
  assert.deepEqual(
    minutes.pageviews.map((p: any) => p.y),
    [1, 2],
    'minute buckets from raw events',
  )
  const realtime = await api('realtime')
  assert.deepEqual(
    [realtime.source, realtime.views, realtime.visitors, realtime.events, realtime.countries],
    [
      'tracker',
      3,
      2,
      1,
      [
        { name: 'DE', views: 2 },
        { name: 'FR', views: 1 },
      ],
    ],
  )
  // analytics.get: page views are the published HTML served (the beacon; none was served here, only
  // events sent), and the tracker adds its visitors, visits, bounces and events.
  const overview = (await server.api('GET', `/v1/websites/${site.id}/analytics?period=24h`)).body
  assert.deepEqual(overview.sources, { pageviews: 'beacon', visits: 'tracker', visitors: 'tracker' })
  assert.deepEqual(
    [overview.source, overview.totals, overview.events],
    [
      'beacon',
      { pageviews: 0, visitors: 2, visits: 2, bounces: 1, totaltime: 60, events: 1 },
      [{ name: 'signup', events: 1, visitors: 1 }],
    ],
  )
  const after = (await server.api('GET', `/v1/websites/${site.id}`)).body.analytics
  assert.deepEqual([after.provider, after.tracking], ['tracker', true])
  // The shareable dashboard shows the tracker's figures.
  const shared = await server.api('POST', `/v1/websites/${site.id}/analytics/share`)
  const dashboard = await (await fetch(shared.body.dashboardUrl)).text()
  assert.match(dashboard, /<strong id="visitors">2<\/strong> visitors · 2 visits · 50% bounce/)
  assert.match(dashboard, /<td>signup<\/td><td class="n">1<\/td>/)

  // 40 minutes on Bob comes back: a new visit, the same visitor (same day, same hash).
  server.clock.advance(40 * MINUTE)
  await collect(server, host, page('/'), bob)
  const sameDay = await api(`query?startAt=${start}&endAt=${server.clock.now() + 1}`)
  assert.deepEqual([sameDay.visits, sameDay.visitors], [3, 2])
  // The next day Alice's hash is another: she counts again (visitors are per day, nothing follows her).
  server.clock.advance(DAY)
  await collect(server, host, page('/'), alice)
  const twoDays = await api(`query?startAt=${start}&endAt=${server.clock.now() + 1}`)
  assert.deepEqual([twoDays.pageviews, twoDays.visitors, twoDays.visits], [5, 3, 4])
  const raw = await api(`query?startAt=${start}&endAt=${server.clock.now() + 1}&path=/&country=DE`)
  assert.deepEqual([raw.pageviews, raw.visitors], [2, 2], 'raw events of two days hold two different hashes of Alice: the salt changed')

  // Past the retention (2 days here) raw events are gone; the rollups stay.
  server.clock.advance(2 * DAY)
  await collect(server, host, page('/'), alice)
  const kept = await api(`query?${range}`)
  assert.equal(kept.pageviews, 4, "rollups (by the hour: Bob's return falls in the same hour) are kept for good")
  assert.equal((await api(`query?${range}&path=/pricing&country=DE`)).pageviews, 0, 'the raw events of the first day were deleted')
})

test('a busy network is told to slow down; the tracker is same-origin and answers nothing on unknown hosts', async (t) => {
  const server = await startServer(t)
  const site = await createWebsite(server, { name: 'Busy', kind: 'static', subdomain: 'busy' })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: 'x' }] } })
  await server.api('POST', `/v1/websites/${site.id}/publish`)
  const statuses: number[] = []
  for (let i = 0; i < 125; i++)
    statuses.push(
      (await rawPost(server.plinth.port, 'busy.localhost', '/_platform/collect', JSON.stringify(page('/')), { 'user-agent': CHROME }))
        .status,
    )
  assert.equal(statuses.filter((s) => s === 204).length, 120, 'a burst of 120')
  const limited = await rawPost(server.plinth.port, 'busy.localhost', '/_platform/collect', JSON.stringify(page('/')), {
    'user-agent': CHROME,
  })
  assert.equal(limited.status, 429)
  assert.ok(Number(limited.headers['retry-after']) >= 1)
  assert.equal(
    (await rawPost(server.plinth.port, 'nobody.localhost', '/_platform/collect', JSON.stringify(page('/')), { 'user-agent': CHROME }))
      .status,
    404,
  )
})

const CHROMIUM = '/usr/bin/chromium'
const skip = !existsSync(CHROMIUM) && process.env.CI !== 'true' ? 'needs Debian chromium: apt-get install chromium' : false

test(
  'a framework site with website_config.analytics.enabled carries the tracker: Chromium sends its page view and a track() event from page code; the draft is never counted',
  { skip },
  async (t) => {
    const server = await startServer(t)
    const site = await createWebsite(server, { name: 'Tracked', subdomain: 'tracked' })
    const token = (await server.api('POST', `/v1/websites/${site.id}/source/lease`)).body.leaseToken
    const put = async (file: unknown, content: string) => {
      const r = await server.api('PUT', `/v1/websites/${site.id}/source/file`, { body: { leaseToken: token, file, content } })
      assert.ok(r.status === 200 || r.status === 201, JSON.stringify(r.body))
      return r.body.version as number
    }
    await put(
      { type: 'website_config' },
      "import { defineWebsiteConfig } from '@platform'\nexport default defineWebsiteConfig({ metadata: { title: 'Tracked' }, analytics: { enabled: true } })\n",
    )
    await put(
      { type: 'component', name: 'Signup' },
      "import { track } from '@platform'\nexport function Signup() {\n  return <button onClick={() => track('signup', { plan: 'pro' })}>Sign up</button>\n}\n",
    )
    const head = await put(
      { type: 'page', name: 'home' },
      "import { definePage } from '@platform'\nimport { Signup } from '@components/Signup'\nexport default definePage({ route: '/', metadata: { title: 'Home' }, render: () => <main><h1>Home</h1><Signup /></main> })\n",
    )
    const ensured = await server.api('POST', `/v1/websites/${site.id}/deployments/ensure`, { body: { version: head } })
    assert.equal(ensured.body.status, 'ready', JSON.stringify(ensured.body))
    assert.equal((await server.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
    const html = (await server.site('tracked.localhost', '/')).body.toString()
    assert.ok(html.includes(`<script defer src="/_platform/a.js" data-website-id="${site.id}"></script>`), html)
    assert.equal((await server.api('GET', `/v1/websites/${site.id}`)).body.analytics.tracking, true, 'tracking is on before any data')

    const browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: [
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    })
    t.after(() => browser.close())
    // Headless Chromium names itself HeadlessChrome, which isbot rightly calls a bot: browse as a person's Chrome.
    const tab = await browser.newPage({ userAgent: CHROME })
    const problems: string[] = []
    tab.on('pageerror', (error) => problems.push(error.message))
    tab.on('console', (m) => m.type() === 'error' && !m.text().startsWith('Failed to load resource') && problems.push(m.text()))
    // The draft first: it loads the same script, and nothing of it is kept.
    await tab.goto(`http://draft--tracked.localhost:${server.plinth.port}/`)
    await tab.waitForLoadState('networkidle')
    const sent = tab.waitForRequest((r) => r.url().endsWith('/_platform/collect') && r.url().startsWith('http://tracked.localhost'))
    await tab.goto(`http://tracked.localhost:${server.plinth.port}/`)
    await sent
    await tab.waitForLoadState('networkidle')
    const clicked = tab.waitForRequest((r) => r.url().endsWith('/_platform/collect') && (r.postData() ?? '').includes('signup'))
    await tab.locator('button').click()
    await clicked
    const title = await tab.title()
    assert.deepEqual(problems, [])

    const range = `startAt=${server.clock.now() - 1000}&endAt=${server.clock.now() + 1}`
    let totals: any
    // sendBeacon is sent after the page moves on; wait until both arrived.
    await waitUntil(
      async () => {
        totals = (await server.api('GET', `/v1/websites/${site.id}/analytics/query?${range}`)).body
        return totals.source === 'tracker' && totals.pageviews === 1 && totals.events === 1
      },
      'the page view and the event',
      15_000,
      API_POLL_MS,
    ).catch(() => undefined)
    assert.deepEqual(
      [totals.source, totals.pageviews, totals.visitors, totals.events],
      ['tracker', 1, 1, 1],
      'the published page view and the click; the draft view not counted',
    )
    const titles = (await server.api('GET', `/v1/websites/${site.id}/analytics/query?${range}&dimension=title`)).body.rows
    assert.deepEqual(
      titles.map((r: any) => r.name),
      [title],
      'the page view carries the document title',
    )
    const screens = (await server.api('GET', `/v1/websites/${site.id}/analytics/query?${range}&dimension=screen`)).body.rows
    assert.match(screens[0].name, /^\d+x\d+$/)
  },
)
