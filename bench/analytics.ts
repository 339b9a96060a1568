/**
 * npm run bench:analytics — analytics over a big site (issue 14).
 *
 * 1. The beacon's ingest: page views pushed as the hosting plane pushes them (varied paths,
 *    referrers, user agents and countries), then folded and written; views per second of each.
 * 2. Queries over 90 days of a site with 10,000,000 page views (rollups written the way the beacon
 *    writes them: 200 paths, 50 referrers, 30 countries, 3 devices, 2 hostnames, every hour), through
 *    real HTTP: a daily timeseries, a path breakdown, the overview; p50 and p99 of 200 requests each.
 * 3. The tracker's ingest: wrk (pinned to core 1) posts page views to /_platform/collect of a
 *    published site as /_platform/a.js sends them (200 paths, 50 referrers, 50,000 visitors by
 *    X-Forwarded-For from a trusted proxy), against Plinth pinned to core 0 (every thread of it, the
 *    LMDB writer included); then the API is asked how many were counted.
 * 4. The same queries over 90 days of a tracker site with 10,000,000 page views (rollups as the
 *    tracker writes them: visitors, visits, bounces and time beside page views; 200 paths and titles,
 *    200 entry and exit pages, 50 referrers, 30 countries, 10 browsers, 3 devices, 2 hostnames,
 *    10 custom events, every hour).
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Beacon } from '../actors/analytics/beacon.js'
import type { CountedPages } from '../actors/analytics/beacon-tally.js'
import { ManualClock } from '../core/clock.js'
import { silentLogger } from '../core/log.js'
import { Store } from '../core/store/store.js'
import { percentile, runBenchmark } from './main.js'

const PORT = 18495
const ADMIN = 'wb_' + 'c'.repeat(43)
const ENTRY = fileURLToPath(new URL('../bin/plinth.js', import.meta.url))
const ORIGIN = `http://127.0.0.1:${PORT}`
const HOUR = 3_600_000
const DAY = 24 * HOUR
const VIEWS = 10_000_000
const DAYS = 90

async function ingest(): Promise<{ pushPerSecond: number; foldPerSecond: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-beacon-'))
  const store = new Store(dir)
  const beacon = new Beacon(store, new ManualClock(), silentLogger, 'cf-ipcountry', 0)
  const agents = Array.from(
    { length: 40 },
    (_, i) => `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${100 + i}.0 Safari/537.36`,
  )
  // A snapshot's 500 pages, numbered as the hosting plane numbers them when first served.
  const paths = Array.from({ length: 500 }, (_, i) => `/page-${i}`)
  const pages: CountedPages = { websiteId: 'ws_bench', beaconTally: null, pageCount: paths.length, pagePath: (i) => paths[i] }
  const referers = Array.from({ length: 70 }, (_, i) => `https://ref-${i}.example/`)
  const countries = ['DE', 'US', 'FR', 'JP']
  const view = (i: number) =>
    beacon.count(pages, i % 500, 'bench.localhost', i % 3 === 0 ? '' : referers[i % 70], agents[i % agents.length], countries[i % 4])
  // The first view of each user agent is judged when folded; from then on the counters take them.
  for (let i = 0; i < agents.length; i++) view(i)
  await beacon.flush()
  const n = 1_000_000
  const t0 = performance.now()
  for (let i = 0; i < n; i++) view(i)
  const t1 = performance.now()
  await beacon.flush()
  const t2 = performance.now()
  await store.close()
  rmSync(dir, { recursive: true, force: true })
  return { pushPerSecond: n / ((t1 - t0) / 1000), foldPerSecond: n / ((t2 - t1) / 1000) }
}

/** Starts Plinth on the data directory (pinned to core 0 when asked) and waits until it answers. */
async function startPlinth(dir: string, extra: Record<string, string> = {}, pinned = false) {
  const args = ['--no-node-snapshot', ENTRY, 'start']
  const env = { PATH: process.env.PATH, PORT: String(PORT), PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: ADMIN, ...extra }
  const child = pinned
    ? spawn('taskset', ['-c', '0', process.execPath, ...args], { env, stdio: ['ignore', 'ignore', 'inherit'] })
    : spawn(process.execPath, args, { env, stdio: ['ignore', 'ignore', 'inherit'] })
  for (let i = 0; ; i++) {
    try {
      await fetch(ORIGIN + '/')
      return child
    } catch {
      if (i > 100) throw new Error('plinth did not start')
      await new Promise((r) => setTimeout(r, 100))
    }
  }
}

async function stop(child: ReturnType<typeof spawn>): Promise<void> {
  if (child.exitCode !== null) return
  child.kill('SIGTERM')
  await new Promise((r) => child.once('exit', r))
}

const api = async (method: string, path: string, body?: unknown, key = ADMIN) => {
  const res = await fetch(ORIGIN + path, {
    method,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`)
  return JSON.parse(text)
}

/** Rollups of 90 days of a big site, written the way the beacon (or the tracker) writes them, while no server runs. */
async function seed(dir: string, beaconSite: string, trackerSite: string, start: number): Promise<void> {
  const store = new Store(dir)
  const hours = DAYS * 24
  const perHour = Math.round(VIEWS / hours)
  const list = (n: number, name: (i: number) => string) => Array.from({ length: n }, (_, i) => name(i))
  const paths = list(200, (i) => `/articles/${i}`)
  const beaconDims: [string, string[]][] = [
    ['path', paths],
    ['referrer', ['(direct)', ...list(49, (i) => `site${i}.example`)]],
    ['country', list(30, (i) => String.fromCharCode(65 + (i % 26)) + String.fromCharCode(65 + Math.floor(i / 26)))],
    ['device', ['desktop', 'mobile', 'tablet']],
    ['hostname', ['big.localhost', 'www.big.example']],
  ]
  // The tracker's: page dimensions carry page views and visitors; a visit's carry visits, bounces and time too.
  const page = ['v', 'u']
  const visit = ['v', 'u', 's', 'b', 't']
  const trackerDims: [string, string[], string[]][] = [
    ['', [''], [...visit, 'e']],
    ['path', paths, page],
    ['title', list(200, (i) => `Article ${i}`), page],
    ['entry', paths, visit],
    ['exit', paths, ['s', 'v']],
    ['referrer', beaconDims[1][1], visit],
    ['country', beaconDims[2][1], visit],
    ['browser', ['chrome', 'safari', 'firefox', 'edge', 'ios', 'crios', 'samsung', 'opera', 'android', 'fxios'], visit],
    ['device', beaconDims[3][1], visit],
    ['hostname', beaconDims[4][1], visit],
    ['event', list(10, (i) => `event-${i}`), ['e', 'u']],
  ]
  for (let h = 0; h < hours; h += 24) {
    await store.commit(() => {
      for (let k = h; k < Math.min(hours, h + 24); k++) {
        const hour = start + k * HOUR
        const rows: [string, string, number][] = [['', '', perHour]]
        for (const [dimension, values] of beaconDims)
          values.forEach((value) => rows.push([dimension, value, Math.max(1, Math.round(perHour / values.length))]))
        for (const [dimension, value, n] of rows) {
          void store.analyticsHourly.db.put([beaconSite, dimension, hour, value], n)
          store.analyticsDaily.add([beaconSite, dimension, Math.floor(hour / DAY) * DAY, value], n)
        }
        for (const [dimension, values, metrics] of trackerDims) {
          const n = Math.max(1, Math.round(perHour / values.length))
          for (const value of values) {
            for (const metric of metrics) {
              const count = metric === 't' ? n * 30_000 : metric === 'v' || metric === 'e' ? n : Math.max(1, Math.round(n / 3))
              void store.trackerHourly.db.put([trackerSite, dimension, metric, hour, value], count)
              store.trackerDaily.add([trackerSite, dimension, metric, Math.floor(hour / DAY) * DAY, value], count)
            }
          }
        }
      }
    })
  }
  await store.close()
}

/** wrk pinned to core 1 posting collect requests for `seconds`; requests per second and the count. */
async function collectLoad(dir: string, host: string, seconds: number): Promise<{ perSecond: number; requests: number; errors: number }> {
  const script = join(dir, 'collect.lua')
  writeFileSync(
    script,
    // The requests are made once, in init (wrk's Lua building each one would be the bottleneck, not Plinth).
    `local ua = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36"
local requests = {}
math.randomseed(7)
for i = 1, 20000 do
  local v = math.random(1, 50000)
  local ip = string.format("10.%d.%d.%d", math.floor(v / 65536) % 256, math.floor(v / 256) % 256, v % 256)
  local body = '{"type":"pageview","path":"/articles/' .. math.random(0, 199) .. '","title":"Article","referrer":"https://site' .. math.random(0, 49) .. '.example/","screen":"1920x1080","language":"en-US"}'
  requests[i] = wrk.format("POST", "/_platform/collect", { ["Host"] = "${host}", ["X-Forwarded-For"] = ip, ["User-Agent"] = ua, ["Content-Type"] = "text/plain;charset=UTF-8" }, body)
end
local n = 0
request = function()
  n = n % #requests + 1
  return requests[n]
end
`,
  )
  // Not spawnSync: the event loop stays free, so the API client sees its idle connections closed.
  const child = spawn('taskset', ['-c', '1', 'wrk', '-t1', '-c50', `-d${seconds}s`, '-s', script, ORIGIN + '/'])
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()))
  child.stderr.on('data', (chunk: Buffer) => (out += chunk.toString()))
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
  if (code !== 0) throw new Error(`wrk failed: ${out}`)
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0)
  const errors = Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0)
  return { perSecond: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? 0), requests, errors }
}

async function main(): Promise<void> {
  const beacon = await ingest()
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-analytics-'))
  try {
    // Websites made through the API; the rollups of two are then written while no server runs (one
    // process owns a data directory).
    const first = await startPlinth(dir)
    const big = await api('POST', '/v1/websites', { name: 'big', kind: 'static', subdomain: 'big' })
    const bigTracked = await api('POST', '/v1/websites', { name: 'big tracked', kind: 'static', subdomain: 'bigtracked' })
    const live = await api('POST', '/v1/websites', { name: 'tracked', kind: 'static', subdomain: 'tracked' })
    await api('POST', `/v1/websites/${live.id}/deploy/json`, { files: [{ path: 'index.html', content: '<h1>Tracked</h1>' }] })
    await api('POST', `/v1/websites/${live.id}/publish`)
    await stop(first)
    const now = Date.now()
    const start = Math.floor((now - DAYS * DAY) / HOUR) * HOUR
    await seed(dir, big.id, bigTracked.id, start)

    // The collect endpoint under load, Plinth on one core.
    const pinned = await startPlinth(dir, { PLINTH_TRUSTED_PROXIES: '127.0.0.1' }, true)
    let load: Awaited<ReturnType<typeof collectLoad>>
    let counted = 0
    try {
      await collectLoad(dir, 'tracked.localhost', 3) // warm-up
      const before = (await api('GET', `/v1/websites/${live.id}/analytics/query?startAt=${now - DAY}&endAt=${Date.now() + DAY}`))
        .pageviews as number
      load = await collectLoad(dir, 'tracked.localhost', 10)
      counted =
        (await api('GET', `/v1/websites/${live.id}/analytics/query?startAt=${now - DAY}&endAt=${Date.now() + DAY}`)).pageviews - before
    } finally {
      await stop(pinned)
    }

    const server = await startPlinth(dir)
    try {
      // Each key's bucket holds 120 requests: one key per 100 requests.
      const keys: string[] = []
      for (let i = 0; i < 20; i++)
        keys.push((await api('POST', '/v1/api-keys', { name: `bench ${i}`, access: { kind: 'organization', role: 'full_editor' } })).secret)
      let calls = 0
      const call = async (path: string) => api('GET', path, undefined, keys[Math.floor(calls++ / 100)])
      const endAt = now + HOUR
      const startAt = endAt - DAYS * DAY
      const queries = (id: string) => ({
        'timeseries, 90 days by day': `/v1/websites/${id}/analytics/timeseries?startAt=${startAt}&endAt=${endAt}&unit=day&maxPoints=91`,
        'timeseries, 90 days by day in America/New_York': `/v1/websites/${id}/analytics/timeseries?startAt=${startAt}&endAt=${endAt}&unit=day&timezone=America/New_York&maxPoints=92`,
        'query, 90 days by path (top 25 of 200)': `/v1/websites/${id}/analytics/query?startAt=${startAt}&endAt=${endAt}&dimension=path`,
        'overview, 90d (totals, series, top lists)': `/v1/websites/${id}/analytics?period=90d`,
      })
      const measure = async (id: string) => {
        const rows: string[] = []
        let total = 0
        for (const [name, path] of Object.entries(queries(id))) {
          const samples: number[] = []
          for (let i = 0; i < 200; i++) {
            const t0 = performance.now()
            const body = await call(path)
            samples.push(performance.now() - t0)
            if (i === 0 && name.startsWith('overview')) total = body.totals.pageviews
          }
          rows.push(`| ${name} | ${percentile(samples, 50).toFixed(1)} | ${percentile(samples, 99).toFixed(1)} |`)
        }
        return { rows, total }
      }
      const beaconQueries = await measure(big.id)
      const trackerQueries = await measure(bigTracked.id)
      console.log(
        `\nThe beacon's ingest (in process, 1,000,000 varied page views): pushed ${Math.round(beacon.pushPerSecond).toLocaleString('en')}/s, folded and written ${Math.round(beacon.foldPerSecond).toLocaleString('en')}/s`,
      )
      console.log(
        `\nThe tracker's ingest through HTTP (POST /_platform/collect, Plinth pinned to one core, wrk -c50 on the other, 10 s): ${Math.round(load.perSecond).toLocaleString('en')} events/s; ${load.requests.toLocaleString('en')} sent, ${load.errors} refused, ${counted.toLocaleString('en')} counted by the API afterwards`,
      )
      for (const [source, result] of [
        ['beacon', beaconQueries],
        ['tracker', trackerQueries],
      ] as const) {
        console.log(
          `\nQueries over ${DAYS} days of ${result.total.toLocaleString('en')} page views (source: ${source}), through HTTP, 200 each (ms)\n`,
        )
        console.log('| query | p50 | p99 |')
        console.log('|---|---|---|')
        for (const row of result.rows) console.log(row)
      }
    } finally {
      await stop(server)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

runBenchmark(main)
