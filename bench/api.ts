/**
 * npm run bench:api — control-plane latencies through real HTTP (autocannon for the listing).
 *
 * Rows: a deploy of 100 files followed by a publish (p50, p99); a publish alone; reading a
 * 2,000-file listing (pages of 100). Rate limits hold here as anywhere, so the load is spread over
 * several API keys, each staying within its bucket.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { runBenchmark } from './main.js'

const PORT = 18490
const ADMIN = 'wb_' + 'a'.repeat(43)
const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 40)
const ENTRY = fileURLToPath(new URL('../bin/plinth.js', import.meta.url))
const ORIGIN = `http://127.0.0.1:${PORT}`

async function call(key: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await fetch(ORIGIN + path, { method, headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: body === undefined ? undefined : JSON.stringify(body) })
  const text = await res.text()
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${text}`)
  return JSON.parse(text)
}

function percentile(xs: number[], p: number): number {
  const sorted = [...xs].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]
}

function row(name: string, samples: number[]): string {
  return `| ${name} | ${samples.length} | ${percentile(samples, 50).toFixed(1)} | ${percentile(samples, 99).toFixed(1)} | ${Math.max(...samples).toFixed(1)} |`
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-api-'))
  const child = spawn(process.execPath, ['--no-node-snapshot', '--max-semi-space-size=32', ENTRY, 'start'], {
    env: { PATH: process.env.PATH, PORT: String(PORT), PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: ADMIN },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  try {
    for (let i = 0; ; i++) {
      try {
        await fetch(ORIGIN + '/')
        break
      } catch {
        if (i > 100) throw new Error('plinth did not start')
        await new Promise((r) => setTimeout(r, 100))
      }
    }
    // Expensive-class buckets hold 20 tokens per key: one key per 9 deploy+publish pairs.
    const keys: string[] = []
    for (let i = 0; i < Math.ceil((ITERATIONS * 3) / 18) + 2; i++) {
      keys.push((await call(ADMIN, 'POST', '/v1/api-keys', { name: `bench ${i}`, access: { kind: 'organization', role: 'full_editor' } })).secret)
    }
    let nextKey = 0
    let used = 0
    const key = () => {
      if (++used > 18) {
        used = 1
        nextKey++
      }
      return keys[nextKey]
    }
    const site = await call(ADMIN, 'POST', '/v1/websites', { name: 'bench', kind: 'static', subdomain: 'bench' })
    const files = (round: number) =>
      Array.from({ length: 100 }, (_, i) => ({ path: `pages/p${i}.html`, content: `<!doctype html><title>${round}-${i}</title>${'<p>bench content</p>'.repeat(100)}` }))

    const deployPublish: number[] = []
    const publishAlone: number[] = []
    const deployAlone: number[] = []
    for (let round = 0; round < ITERATIONS; round++) {
      const t0 = performance.now()
      await call(key(), 'POST', `/v1/websites/${site.id}/deploy/json`, { files: files(round) })
      const t1 = performance.now()
      await call(key(), 'POST', `/v1/websites/${site.id}/publish`)
      const t2 = performance.now()
      deployPublish.push(t2 - t0)
      deployAlone.push(t1 - t0)
      // A publish alone: a one-file change committed untimed, then published.
      await call(key(), 'POST', `/v1/websites/${site.id}/deploy/json`, { files: [{ path: 'index.html', content: `round ${round}` }] })
      const t3 = performance.now()
      await call(key(), 'POST', `/v1/websites/${site.id}/publish`)
      publishAlone.push(performance.now() - t3)
    }

    // A 2,000-file site, listed in pages of 100 through autocannon (10 connections).
    const big = await call(ADMIN, 'POST', '/v1/websites', { name: 'big', kind: 'static', subdomain: 'big' })
    const many = Array.from({ length: 2000 }, (_, i) => ({ path: `docs/${String(i).padStart(4, '0')}.html`, content: `<p>${i}</p>` }))
    await call(keys[keys.length - 1], 'POST', `/v1/websites/${big.id}/deploy/json`, { files: many })
    const listers = await Promise.all(
      Array.from({ length: 8 }, async (_, i) => (await call(ADMIN, 'POST', '/v1/api-keys', { name: `lister ${i}`, access: { kind: 'organization', role: 'full_editor' } })).secret),
    )
    let first = ''
    const pages: string[] = []
    for (let cursor: string | null = null; ; ) {
      const page: any = await call(listers[0], 'GET', `/v1/websites/${big.id}/source/files?limit=100${cursor ? `&cursor=${cursor}` : ''}`)
      pages.push(`/v1/websites/${big.id}/source/files?limit=100${cursor ? `&cursor=${cursor}` : ''}`)
      first ||= page.items[0].path
      cursor = page.nextCursor
      if (cursor === null) break
    }
    const whole: number[] = []
    for (let i = 0; i < 10; i++) {
      const t0 = performance.now()
      for (const path of pages) await call(listers[1 + (i % 2)], 'GET', path)
      whole.push(performance.now() - t0)
    }
    let n = 0
    const listing = await autocannon({
      url: ORIGIN,
      connections: 10,
      amount: 500,
      requests: [
        {
          setupRequest: (req: any) => {
            const i = n++
            return { ...req, method: 'GET', path: pages[i % pages.length], headers: { authorization: `Bearer ${listers[3 + (i % 5)]}` } }
          },
        },
      ],
    })

    console.log(`\nControl plane latencies (ms), ${ITERATIONS} rounds, one site\n`)
    console.log('| operation | samples | p50 | p99 | max |')
    console.log('|---|---|---|---|---|')
    console.log(row('deploy 100 files (2 KiB each) + publish', deployPublish))
    console.log(row('  of which the deploy', deployAlone))
    console.log(row('publish alone', publishAlone))
    console.log(row('list all 2,000 files (20 pages of 100)', whole))
    console.log(`\nautocannon, one page of 100 files, 10 connections, ${listing.requests.total} requests: ${Math.round(listing.requests.average)} req/s, p50 ${listing.latency.p50} ms, p99 ${listing.latency.p99} ms, non-2xx ${listing.non2xx}`)
  } finally {
    child.kill('SIGTERM')
    await new Promise((r) => child.once('exit', r))
    rmSync(dir, { recursive: true, force: true })
  }
}

runBenchmark(main)
