import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { readFileSync } from 'node:fs'
import { tool } from '../helpers/agent.js'
import { freePort, rawPost, rawRequest } from '../helpers/http.js'
import { createKey, createWebsite, startServer, tempDir } from '../helpers/server.js'
import { waitUntil } from '../helpers/wait.js'

/*
 * GET /metrics in Prometheus' text format, for the operator: an admin key of the installation, or a
 * scraper from an address PLINTH_METRICS_ALLOW lists. Scraped by a real Prometheus (Debian's 2.42),
 * which is then asked for a series back.
 */

const PROMETHEUS = '/usr/bin/prometheus'
const skip = !existsSync(PROMETHEUS) && process.env.CI !== 'true' ? 'needs Debian prometheus: apt-get install prometheus' : false

/** One sample's value from the text format, or undefined. */
function sample(text: string, series: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}

test('GET /metrics: only for the operator; responses by door and status, bytes, the cache, mailboxes, LMDB and Node in the text format', async (t) => {
  const server = await startServer(t)
  const port = server.plinth.port
  const site = await createWebsite(server, { name: 'Counted', kind: 'static', subdomain: 'counted' })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, {
    body: { files: [{ path: 'index.html', content: '<h1>counted</h1>' }] },
  })
  await server.api('POST', `/v1/websites/${site.id}/publish`)
  const scrape = (key: string | null) =>
    fetch(`${server.origin}/metrics`, { headers: key === null ? {} : { authorization: `Bearer ${key}` } })

  // Nobody else reads it: no key is 401, a key below admin 403.
  const anonymous = await scrape(null)
  assert.equal(anonymous.status, 401)
  assert.match(((await anonymous.json()) as any).message, /admin or owner role .*PLINTH_METRICS_ALLOW/)
  const editor = await createKey(server, { kind: 'organization', role: 'content_editor' })
  const refused = await scrape(editor.secret)
  assert.equal(refused.status, 403)
  assert.match(((await refused.json()) as any).message, /PLINTH_METRICS_ALLOW/)

  const before = await (await scrape(server.adminKey)).text()
  // The first scrape already has the event loop's delay since the start: finite figures in order (prom-client's
  // own start at the first scrape, with no sample yet: a minimum of 9.2e9 s and a mean of NaN).
  const delay = (text: string, figure: string) => sample(text, `plinth_nodejs_eventloop_lag_${figure}_seconds`)
  const figures = ['min', 'mean', 'p50', 'p90', 'p99', 'max', 'stddev'].map((figure) => delay(before, figure))
  for (const value of figures) assert.ok(value !== undefined && Number.isFinite(value) && value >= 0 && value < 60, `${figures}`)
  assert.ok(figures[0]! <= figures[1]! && figures[1]! <= figures[5]!, `min ≤ mean ≤ max: ${figures}`)
  // Two scrapes at once: the second has no delay measured since the first, and says nothing rather than NaN.
  for (const text of await Promise.all([0, 1].map(async () => (await scrape(server.adminKey)).text()))) {
    assert.doesNotMatch(text, /NaN|e\+\d/, 'no NaN, no absurd figure')
    for (const figure of ['min', 'max', 'mean']) assert.ok((delay(text, figure) ?? 0) < 60)
  }
  // Never backed up: the backup figures are absent (an absent() alert fires), not 0.
  for (const figure of ['timestamp_seconds', 'duration_seconds', 'bytes', 'copied_bytes'])
    assert.equal(sample(before, `plinth_backup_last_success_${figure}`), undefined, figure)
  const served = (door: string, text: string) => sample(text, `plinth_http_responses_total{door="${door}",class="2xx"}`) ?? 0
  for (let i = 0; i < 5; i++) assert.equal((await rawRequest(port, 'counted.localhost', '/')).status, 200)
  assert.equal((await rawRequest(port, 'counted.localhost', '/missing')).status, 404)
  const response = await scrape(server.adminKey)
  assert.equal(response.status, 200)
  assert.match(response.headers.get('content-type')!, /^text\/plain; version=0\.0\.4/)
  const text = await response.text()
  assert.ok(served('hosting', text) - served('hosting', before) >= 5, 'the five page views are counted on the hosting door')
  assert.ok((sample(text, 'plinth_http_responses_total{door="hosting",class="4xx"}') ?? 0) >= 1)
  assert.ok((sample(text, 'plinth_http_response_bytes_total{door="hosting"}') ?? 0) >= 5 * '<h1>counted</h1>'.length)
  assert.ok((sample(text, 'plinth_content_cache_hits_total') ?? 0) >= 4, 'later views read the resident content')
  assert.ok((sample(text, 'plinth_lmdb_used_bytes') ?? 0) > 0)
  for (const family of [
    'plinth_http_response_seconds_bucket',
    'plinth_mailbox_queued',
    'plinth_lmdb_freelist_entries',
    'plinth_outbound_requests_total',
    'plinth_beacon_events_total',
    'plinth_anonymous_credentials',
    'plinth_nodejs_eventloop_lag_seconds',
  ])
    assert.match(text, new RegExp(`^${family}`, 'm'), family)
  assert.equal(
    (await fetch(`${server.origin}/metrics`, { method: 'POST', headers: { authorization: `Bearer ${server.adminKey}` } })).status,
    405,
  )
})

test('every answer of the API, MCP, dashboard and form doors is timed from the first request on, by door and status class, also those a serving thread hands to the main thread', async (t) => {
  const server = await startServer(t, { PLINTH_SERVE_THREADS: '2' })
  const count = (text: string, door: string, statusClass: string) =>
    sample(text, `plinth_http_response_seconds_count{door="${door}",class="${statusClass}"}`) ?? 0
  // Before anyone scrapes: GETs and POSTs of the API, a 404, an MCP call, a dashboard page, a form post.
  const site = await createWebsite(server, { name: 'Timed', kind: 'static', subdomain: 'timed' })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: 'timed' }] } })
  await server.api('POST', `/v1/websites/${site.id}/publish`)
  for (let i = 0; i < 20; i++) assert.equal((await server.api('GET', `/v1/websites/${site.id}`)).status, 200)
  assert.equal((await server.api('GET', '/v1/websites/ws_doesnotexist')).status, 404)
  assert.equal((await tool(server, 'list_websites', {})).items.length, 1)
  assert.equal((await fetch(`${server.origin}/app/sign-in`)).status, 200)
  const posted = await rawPost(server.plinth.port, 'timed.localhost', '/_platform/forms/contact', 'email=a%40example.com', {
    'content-type': 'application/x-www-form-urlencoded',
    accept: 'application/json',
  })
  assert.equal(posted.status, 200, posted.body.toString())

  const text = await (await fetch(`${server.origin}/metrics`, { headers: { authorization: `Bearer ${server.adminKey}` } })).text()
  // Each API call is one answer (the serving thread hands its share to the main thread, which times it).
  assert.ok(count(text, 'api', '2xx') >= 23, `the API's 2xx answers: ${count(text, 'api', '2xx')}`)
  assert.ok(count(text, 'api', '4xx') >= 1, 'the 404')
  assert.ok(count(text, 'mcp', '2xx') >= 1, 'the MCP call')
  assert.ok(count(text, 'app', '2xx') >= 1, 'the dashboard page')
  assert.ok(count(text, 'forms', '2xx') >= 1, 'the form post')
  // Buckets from 0.5 ms to 10 s, cumulative, ending in +Inf equal to the count; the sum is in seconds.
  const buckets = [...text.matchAll(/^plinth_http_response_seconds_bucket\{door="api",class="2xx",le="([^"]+)"\} (\S+)$/gm)].map((m) => [
    m[1]!,
    Number(m[2]),
  ])
  assert.deepEqual(
    buckets.map(([le]) => le),
    ['0.0005', '0.001', '0.0025', '0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '0.5', '1', '2.5', '5', '10', '+Inf'],
  )
  for (let i = 1; i < buckets.length; i++) assert.ok(buckets[i]![1] >= buckets[i - 1]![1], 'cumulative')
  assert.equal(buckets.at(-1)![1], count(text, 'api', '2xx'))
  const sum = sample(text, 'plinth_http_response_seconds_sum{door="api",class="2xx"}')!
  assert.ok(sum > 0 && sum < count(text, 'api', '2xx') * 10, `sum ${sum}`)
  // Site files answered from a snapshot are not timed (microseconds, synchronous).
  for (let i = 0; i < 5; i++) assert.equal((await rawRequest(server.plinth.port, 'timed.localhost', '/')).status, 200)
  assert.doesNotMatch(text, /^plinth_http_response_seconds_count\{door="hosting",class="2xx"\}/m)
})

/** The README's RED queries for Prometheus (the promql block of its Metrics section). */
function readmeQueries(): string[] {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const block = /## Metrics[\s\S]*?```promql\n([\s\S]*?)```/.exec(readme)
  assert.ok(block, 'the README has a promql block under Metrics')
  return block[1]!.split('\n').filter((line) => line.trim() !== '' && !line.startsWith('#'))
}

test('a real Prometheus scrapes /metrics from an allowed address, and a series can be queried back', { skip }, async (t) => {
  const server = await startServer(t, { PLINTH_METRICS_ALLOW: '127.0.0.1/32' })
  const site = await createWebsite(server, { name: 'Scraped', kind: 'static', subdomain: 'scraped' })
  await server.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: 'hi' }] } })
  await server.api('POST', `/v1/websites/${site.id}/publish`)
  for (let i = 0; i < 3; i++) await rawRequest(server.plinth.port, 'scraped.localhost', '/')
  // From the allowed address no key is needed.
  assert.equal((await fetch(`${server.origin}/metrics`)).status, 200)

  const dir = tempDir(t, 'plinth-prometheus-')
  const port = await freePort()
  writeFileSync(
    join(dir, 'prometheus.yml'),
    `global:\n  scrape_interval: 1s\nscrape_configs:\n  - job_name: plinth\n    metrics_path: /metrics\n    static_configs:\n      - targets: ['127.0.0.1:${server.plinth.port}']\n`,
  )
  const prometheus = spawn(
    PROMETHEUS,
    [`--config.file=${join(dir, 'prometheus.yml')}`, `--storage.tsdb.path=${join(dir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let log = ''
  prometheus.stderr.on('data', (chunk) => (log += chunk))
  t.after(
    () => new Promise<void>((r) => (prometheus.exitCode !== null ? r() : (prometheus.once('exit', () => r()), prometheus.kill('SIGTERM')))),
  )
  const query = encodeURIComponent('plinth_http_responses_total{door="hosting",class="2xx"}')
  const value = await waitUntil(
    async () => {
      const answer = (await (
        await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${query}`).catch(() => null)
      )
        ?.json()
        .catch(() => null)) as any
      const result = answer?.data?.result?.[0]
      return result === undefined ? false : Number(result.value[1])
    },
    'Prometheus to scrape Plinth',
    20_000,
    250,
  ).catch((error: Error) => {
    throw new Error(`${error.message}\n${log.slice(-2000)}`)
  })
  assert.ok(value >= 3, `Prometheus has the three page views: ${value}`)
  const up = (await (await fetch(`http://127.0.0.1:${port}/api/v1/query?query=up`)).json()) as any
  assert.equal(up.data.result[0].value[1], '1', 'the target is up')

  // The README's RED queries (rate, errors, duration) answer while API traffic flows.
  const [rate, errors, duration] = readmeQueries()
  assert.ok(rate !== undefined && errors !== undefined && duration !== undefined, 'three queries')
  const ask = async (promql: string) => {
    const answer = (await (await fetch(`http://127.0.0.1:${port}/api/v1/query?query=${encodeURIComponent(promql)}`)).json()) as any
    assert.equal(answer.status, 'success', `${promql}: ${JSON.stringify(answer)}`)
    return answer.data.result as { metric: Record<string, string>; value: [number, string] }[]
  }
  const read = await waitUntil(
    async () => {
      for (let i = 0; i < 5; i++) await server.api('GET', `/v1/websites/${site.id}`)
      const byDoor = await ask(rate)
      const api = byDoor.find((r) => r.metric.door === 'api')
      const p99 = await ask(duration)
      return api !== undefined && Number(api.value[1]) > 0 && p99.length === 1 && Number.isFinite(Number(p99[0]!.value[1])) && { p99 }
    },
    'the RED queries to see API traffic',
    30_000,
    250,
  )
  const seconds = Number(read.p99[0]!.value[1])
  assert.ok(seconds > 0 && seconds <= 10, `p99 of API answers: ${seconds} s`)
  const share = await ask(errors)
  assert.deepEqual(
    share.map((r) => Number(r.value[1])),
    [0],
    'no API answer was a 5xx',
  )
})

test("GET /_platform/health answers a load balancer's check on the API's host without a credential, HEAD too; a site's host keeps its own path", async (t) => {
  const server = await startServer(t)
  const port = server.plinth.port
  const health = await rawRequest(port, 'localhost', '/_platform/health')
  assert.equal(health.status, 200)
  assert.deepEqual(JSON.parse(health.body.toString()), { status: 'ok' })
  assert.equal(health.headers['cache-control'], 'no-store')
  const head = await rawRequest(port, 'localhost', '/_platform/health', {}, 'HEAD')
  assert.equal(head.status, 200)
  assert.equal(head.body.length, 0)
  await createWebsite(server, { name: 'Healthy', kind: 'static', subdomain: 'healthy' })
  assert.notEqual((await rawRequest(port, 'healthy.localhost', '/_platform/health')).body.toString(), health.body.toString())
})
