/**
 * npm run bench:gate — the quality gate and framework builds on this machine:
 * a warm gate for a 20-page site with components and two pinned packages (median of runs after the
 * first), one page edit until the draft host serves it, and render throughput of one worker.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { loadConfig } from '../core/config.js'
import { silentLogger } from '../core/log.js'
import { startPlinth } from '../plinth/start.js'
import { bundleServer } from '../render/bundle.js'
import { RenderPool } from '../render/render-pool.js'
import { runBenchmark } from './main.js'

const KEY = 'wb_' + 'g'.repeat(43)
const RUNS = 7

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]

function page(i: number, marker = 'v1'): string {
  return `import { definePage } from '@platform'
import { clsx } from 'clsx@2.1.1'
import { format } from 'date-fns@4.4.0'
import { Layout } from '@components/Layout'
import { Card } from '@components/Card'

const items = Array.from({ length: 12 }, (_, j) => ({ id: j, title: 'Item ${i}-' + j, date: new Date(2026, 0, j + 1) }))

export default definePage({
  route: '${i === 0 ? '/' : `/page-${i}`}',
  metadata: { title: 'Page ${i}', description: 'A typical page number ${i}' },
  render: () => (
    <Layout title="Page ${i} ${marker}">
      {items.map((item) => (
        <Card key={item.id} title={item.title} className={clsx('card', { odd: item.id % 2 === 1 })}>
          <time>{format(item.date, 'yyyy-MM-dd')}</time>
        </Card>
      ))}
    </Layout>
  ),
})
`
}

const LAYOUT = `import type { ReactNode } from 'react'
export function Layout({ title, children }: { title: string; children: ReactNode }) {
  return (<div className="layout"><header><h1>{title}</h1><nav><a href="/">Home</a></nav></header><main>{children}</main><footer>Plinth</footer></div>)
}
`
const CARD = `import type { ReactNode } from 'react'
export function Card({ title, className, children }: { title: string; className?: string; children?: ReactNode }) {
  return (<article className={className}><h2>{title}</h2>{children}</article>)
}
`

function draft(port: number, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/page-1', headers: { host } }, (res) => {
      let body = ''
      res.on('data', (c) => (body += c))
      res.on('end', () => resolve(body))
    })
      .on('error', reject)
      .end()
  })
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-gate-'))
  const plinth = await startPlinth({ config: loadConfig({ PORT: '0', PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: KEY }), log: silentLogger })
  const origin = `http://127.0.0.1:${plinth.port}`
  const call = async (key: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(origin + path, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const json = (await res.json()) as any
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
    return json
  }
  try {
    const keys = await Promise.all(
      Array.from(
        { length: 3 },
        async (_, i) =>
          (await call(KEY, 'POST', '/v1/api-keys', { name: `bench ${i}`, access: { kind: 'organization', role: 'admin' } })).secret,
      ),
    )
    const site = await call(KEY, 'POST', '/v1/websites', { name: 'bench', subdomain: 'bench' })
    const lease = (await call(KEY, 'POST', `/v1/websites/${site.id}/source/lease`)).leaseToken
    const put = (file: unknown, content: string) =>
      call(KEY, 'PUT', `/v1/websites/${site.id}/source/file`, { leaseToken: lease, file, content })
    await put({ type: 'component', name: 'Layout' }, LAYOUT)
    await put({ type: 'component', name: 'Card' }, CARD)
    let head = 0
    for (let i = 0; i < 20; i++) head = (await put({ type: 'page', name: `p${i}` }, page(i))).version
    await call(KEY, 'POST', `/v1/websites/${site.id}/deployments/ensure`, { version: head })

    const gate: number[] = []
    const steps: Record<string, number[]> = {}
    for (let run = 0; run < RUNS; run++) {
      const t0 = performance.now()
      const result = await call(keys[run % keys.length], 'POST', `/v1/websites/${site.id}/head/check`)
      if (!result.ok) throw new Error(JSON.stringify(result).slice(0, 500))
      gate.push(performance.now() - t0)
      for (const [step, ms] of Object.entries(result.timings as Record<string, number>)) (steps[step] ??= []).push(ms)
    }

    const edits: number[] = []
    for (let run = 0; run < 5; run++) {
      const marker = `edit${run}`
      const t0 = performance.now()
      await put({ type: 'page', name: 'p1' }, page(1, marker))
      while (!(await draft(plinth.port, 'draft--bench.localhost')).includes(marker)) await new Promise((r) => setTimeout(r, 5))
      edits.push(performance.now() - t0)
    }

    // Render throughput of one worker: one typical page rendered many times in one isolate.
    const files = new Map<string, string>([
      ['pages/p1.tsx', page(1)],
      ['components/Layout.tsx', LAYOUT],
      ['components/Card.tsx', CARD],
    ])
    const bundle = await bundleServer(files)
    if (!bundle.ok) throw new Error('bundle failed')
    const pool = new RenderPool({ processes: 1 })
    await pool.render(bundle, [{ kind: 'page', name: 'p1' }])
    const count = 3000
    const t0 = performance.now()
    const out = await pool.render(
      bundle,
      Array.from({ length: count }, () => ({ kind: 'page' as const, name: 'p1' })),
    )
    const seconds = (performance.now() - t0) / 1000
    await pool.close()
    if (!out.results.every((r) => r.ok)) throw new Error('render failed')

    // Event-loop delay of the serving thread while a page loops until its 5 s CPU budget stops it.
    const bad = await call(KEY, 'POST', '/v1/websites', { name: 'bad', subdomain: 'bad' })
    const badLease = (await call(KEY, 'POST', `/v1/websites/${bad.id}/source/lease`)).leaseToken
    const loopPage = "import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => { for (;;) {} } })\n"
    const badVersion = (
      await call(KEY, 'PUT', `/v1/websites/${bad.id}/source/file`, {
        leaseToken: badLease,
        file: { type: 'page', name: 'home' },
        content: loopPage,
      })
    ).version
    const histogram = monitorEventLoopDelay({ resolution: 1 })
    histogram.enable()
    const badStarted = performance.now()
    const probes: number[] = []
    let done = false
    const prober = (async () => {
      while (!done) {
        const t = performance.now()
        await draft(plinth.port, 'draft--bench.localhost')
        probes.push(performance.now() - t)
      }
    })()
    const status = await call(KEY, 'POST', `/v1/websites/${bad.id}/deployments/ensure`, { version: badVersion })
    done = true
    await prober
    histogram.disable()
    const badSeconds = (performance.now() - badStarted) / 1000
    if (status.status !== 'failed') throw new Error('the looping page did not fail')

    const warm = gate.slice(1)
    console.log('\nQuality gate and builds (ms)\n')
    console.log('| measure | result |')
    console.log('|---|---|')
    console.log(`| gate, 20 pages, 2 components, clsx + date-fns: first check after the initial build | ${gate[0].toFixed(0)} |`)
    console.log(
      `| gate, same site, warm: median of ${warm.length} (min-max) | ${median(warm).toFixed(0)} (${Math.min(...warm).toFixed(0)}-${Math.max(...warm).toFixed(0)}) |`,
    )
    for (const [step, ms] of Object.entries(steps)) console.log(`| &nbsp;&nbsp;step ${step}, warm median | ${median(ms.slice(1))} |`)
    console.log(
      `| one-page edit until the draft host serves it: median of ${edits.length} (min-max) | ${median(edits).toFixed(0)} (${Math.min(...edits).toFixed(0)}-${Math.max(...edits).toFixed(0)}) |`,
    )
    console.log(`| render throughput, one worker, typical page (12 cards, clsx, date-fns) | ${Math.round(count / seconds)} pages/s |`)
    const p99 = [...probes].sort((a, b) => a - b)[Math.floor(probes.length * 0.99)]
    console.log(
      `| while a looping page burns its 5 s CPU budget (${badSeconds.toFixed(1)} s): event-loop delay p99 / max | ${(histogram.percentile(99) / 1e6).toFixed(1)} / ${(histogram.max / 1e6).toFixed(1)} |`,
    )
    console.log(`| &nbsp;&nbsp;a site served meanwhile: ${probes.length} requests, p99 | ${p99.toFixed(2)} |`)
  } finally {
    await plinth.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

runBenchmark(main)
