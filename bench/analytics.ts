/**
 * npm run bench:analytics — analytics over a big site (issue 14).
 *
 * 1. The beacon's ingest: page views pushed as the hosting plane pushes them (varied paths,
 *    referrers, user agents and countries), then folded and written; views per second of each.
 * 2. Queries over 90 days of a site with 10,000,000 page views (rollups written the way the beacon
 *    writes them: 200 paths, 50 referrers, 30 countries, 3 devices, 2 hostnames, every hour), through
 *    real HTTP: a daily timeseries, a path breakdown, the overview; p50 and p99 of 200 requests each.
 * The tracker's collect endpoint does not exist yet, so its ingest is not measured here.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Beacon } from '../actors/analytics/beacon.js'
import { ManualClock } from '../core/clock.js'
import { silentLogger } from '../core/log.js'
import { Store } from '../core/store/store.js'
import { runBenchmark } from './main.js'

const PORT = 18495
const ADMIN = 'wb_' + 'c'.repeat(43)
const ENTRY = fileURLToPath(new URL('../bin/plinth.js', import.meta.url))
const ORIGIN = `http://127.0.0.1:${PORT}`
const HOUR = 3_600_000
const DAY = 24 * HOUR
const VIEWS = 10_000_000
const DAYS = 90

function percentile(xs: number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

async function ingest(): Promise<{ pushPerSecond: number; foldPerSecond: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-beacon-'))
  const store = new Store(dir)
  const beacon = new Beacon(store, new ManualClock(), silentLogger, 'cf-ipcountry', 0)
  const agents = Array.from({ length: 40 }, (_, i) => `Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/${100 + i}.0 Safari/537.36`)
  const n = 1_000_000
  const t0 = performance.now()
  for (let i = 0; i < n; i++) beacon.count('ws_bench', 'bench.localhost', `/page-${i % 500}`, i % 3 === 0 ? '' : `https://ref-${i % 70}.example/`, agents[i % agents.length], ['DE', 'US', 'FR', 'JP'][i % 4])
  const t1 = performance.now()
  await beacon.flush()
  const t2 = performance.now()
  await store.close()
  rmSync(dir, { recursive: true, force: true })
  return { pushPerSecond: n / ((t1 - t0) / 1000), foldPerSecond: n / ((t2 - t1) / 1000) }
}

/** Starts Plinth on the data directory and waits until it answers. */
async function startPlinth(dir: string) {
  const child = spawn(process.execPath, ['--no-node-snapshot', ENTRY, 'start'], { env: { PATH: process.env.PATH, PORT: String(PORT), PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: ADMIN }, stdio: ['ignore', 'ignore', 'inherit'] })
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

async function main(): Promise<void> {
  const beacon = await ingest()
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-analytics-'))
  try {
    // A website made through the API; its rollups are then written while no server runs (one process
    // owns a data directory), the way the beacon writes them.
    const first = await startPlinth(dir)
    const created = await fetch(ORIGIN + '/v1/websites', { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'big', kind: 'static', subdomain: 'big' }) }).then((r) => r.json() as Promise<{ id: string }>)
    await stop(first)
    const store = new Store(dir)
    const now = Date.now()
    const start = Math.floor((now - DAYS * DAY) / HOUR) * HOUR
    const hours = DAYS * 24
    const perHour = Math.round(VIEWS / hours)
    const dims: [string, string[]][] = [
      ['path', Array.from({ length: 200 }, (_, i) => `/articles/${i}`)],
      ['referrer', ['(direct)', ...Array.from({ length: 49 }, (_, i) => `site${i}.example`)]],
      ['country', Array.from({ length: 30 }, (_, i) => String.fromCharCode(65 + (i % 26)) + String.fromCharCode(65 + Math.floor(i / 26)))],
      ['device', ['desktop', 'mobile', 'tablet']],
      ['hostname', ['big.localhost', 'www.big.example']],
    ]
    for (let h = 0; h < hours; h += 24) {
      await store.commit(() => {
        for (let k = h; k < Math.min(hours, h + 24); k++) {
          const hour = start + k * HOUR
          const day = Math.floor(hour / DAY) * DAY
          const rows: [string, string, number][] = [['', '', perHour]]
          for (const [dimension, values] of dims) values.forEach((value) => rows.push([dimension, value, Math.max(1, Math.round(perHour / values.length))]))
          for (const [dimension, value, n] of rows) {
            store.analyticsHourly.add([created.id, dimension, hour, value], n)
            store.analyticsDaily.add([created.id, dimension, day, value], n)
          }
        }
      })
    }
    await store.close()

    const server = await startPlinth(dir)
    try {
      // Each key's bucket holds 120 requests: one key per 100 requests.
      const keys: string[] = []
      for (let i = 0; i < 8; i++) {
        const made = await fetch(ORIGIN + '/v1/api-keys', { method: 'POST', headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: `bench ${i}`, access: { kind: 'organization', role: 'full_editor' } }) }).then((r) => r.json() as Promise<{ secret: string }>)
        keys.push(made.secret)
      }
      let calls = 0
      const call = async (path: string) => {
        const res = await fetch(ORIGIN + path, { headers: { authorization: `Bearer ${keys[Math.floor(calls++ / 100)]}` } })
        const body = await res.text()
        if (!res.ok) throw new Error(`${path}: ${res.status} ${body}`)
        return JSON.parse(body)
      }
      const endAt = now + HOUR
      const startAt = endAt - DAYS * DAY
      const queries = {
        'timeseries, 90 days by day': `/v1/websites/${created.id}/analytics/timeseries?startAt=${startAt}&endAt=${endAt}&unit=day&maxPoints=91`,
        'timeseries, 90 days by day in America/New_York': `/v1/websites/${created.id}/analytics/timeseries?startAt=${startAt}&endAt=${endAt}&unit=day&timezone=America/New_York&maxPoints=92`,
        'query, 90 days by path (top 25 of 200)': `/v1/websites/${created.id}/analytics/query?startAt=${startAt}&endAt=${endAt}&dimension=path`,
        'overview, 90d (totals, series, five top lists)': `/v1/websites/${created.id}/analytics?period=90d`,
      }
      const rows: string[] = []
      let total = 0
      for (const [name, path] of Object.entries(queries)) {
        const samples: number[] = []
        for (let i = 0; i < 200; i++) {
          const t0 = performance.now()
          const body = await call(path)
          samples.push(performance.now() - t0)
          if (i === 0 && name.startsWith('overview')) total = body.totals.pageviews
        }
        rows.push(`| ${name} | ${percentile(samples, 50).toFixed(1)} | ${percentile(samples, 99).toFixed(1)} |`)
      }
      console.log(`\nThe beacon's ingest (in process, 1,000,000 varied page views): pushed ${Math.round(beacon.pushPerSecond).toLocaleString('en')}/s, folded and written ${Math.round(beacon.foldPerSecond).toLocaleString('en')}/s`)
      console.log(`\nQueries over ${DAYS} days of ${total.toLocaleString('en')} page views, through HTTP, 200 each (ms)\n`)
      console.log('| query | p50 | p99 |')
      console.log('|---|---|---|')
      for (const row of rows) console.log(row)
    } finally {
      await stop(server)
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

runBenchmark(main)
