import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { test } from 'node:test'
import { freePort, rawRequest } from '../helpers/http.js'
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
    'plinth_http_async_response_seconds_bucket',
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
})
