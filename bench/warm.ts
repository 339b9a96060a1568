/**
 * npm run bench:warm — what warm build state costs and what PLINTH_WARM_SITES bounds: checks
 * BENCH_WARM_CHECKED framework sites (default 40) one after another, each a page with a component,
 * once for every budget in BENCH_WARM_BUDGETS (default "20,40"), on a fresh server in a fresh process each time. Prints
 * the memory of the server with its children (the esbuild service and render processes) before and
 * after, and how long a check of the first site takes afterwards (warm when the budget kept it). Check
 * times are the sum of the gate's step timings (waits for the expensive rate class excluded).
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../core/config.js'
import { silentLogger } from '../core/log.js'
import { startPlinth } from '../plinth/start.js'
import { runBenchmark } from './main.js'

const KEY = 'wb_' + 'w'.repeat(43)
const CHECKED = Number(process.env.BENCH_WARM_CHECKED ?? 40)
const BUDGETS = (process.env.BENCH_WARM_BUDGETS ?? '20,40').split(',').map(Number)

const rssMiB = (pid: number): number => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024

/** RSS of this process and its direct children, MiB. */
function treeRss(): number {
  let children: number[] = []
  try {
    children = execFileSync('pgrep', ['-P', String(process.pid)], { encoding: 'utf8' })
      .split('\n')
      .filter(Boolean)
      .map(Number)
  } catch {
    // no children
  }
  return rssMiB(process.pid) + children.reduce((sum, pid) => sum + (existsProc(pid) ? rssMiB(pid) : 0), 0)
}

function existsProc(pid: number): boolean {
  try {
    readFileSync(`/proc/${pid}/status`)
    return true
  } catch {
    return false
  }
}

const PAGE = (i: number) => `import { definePage } from '@platform'
import { Card } from '@components/Card'

export default definePage({
  route: '/',
  metadata: { title: 'Site ${i}', description: 'Warm state bench site ${i}' },
  render: () => (
    <main>
      {Array.from({ length: 6 }, (_, j) => (
        <Card key={j} title={'Card ' + j}>site ${i}</Card>
      ))}
    </main>
  ),
})
`
const CARD = `import type { ReactNode } from 'react'
export function Card({ title, children }: { title: string; children?: ReactNode }) {
  return (<article><h2>{title}</h2>{children}</article>)
}
`

async function measure(budget: number): Promise<string[]> {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-warm-'))
  const plinth = await startPlinth({
    config: loadConfig({ PORT: '0', PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: KEY, PLINTH_WARM_SITES: String(budget) }),
    log: silentLogger,
  })
  const origin = `http://127.0.0.1:${plinth.port}`
  const call = async (method: string, path: string, body?: unknown): Promise<any> => {
    const res = await fetch(origin + path, {
      method,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const json = (await res.json()) as any
    // Checks are in the expensive rate class: wait as told and ask again.
    if (res.status === 429) {
      await new Promise((resolve) => setTimeout(resolve, 1000 * (json.details?.retryAfterSeconds ?? 1)))
      return call(method, path, body)
    }
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json)}`)
    return json
  }
  try {
    const before = treeRss()
    const ids: string[] = []
    const checks: number[] = []
    for (let i = 0; i < CHECKED; i++) {
      const site = await call('POST', '/v1/websites', { name: `warm ${i}`, subdomain: `warm-${i}` })
      const lease = (await call('POST', `/v1/websites/${site.id}/source/lease`)).leaseToken
      await call('PUT', `/v1/websites/${site.id}/source/file`, {
        leaseToken: lease,
        file: { type: 'component', name: 'Card' },
        content: CARD,
      })
      await call('PUT', `/v1/websites/${site.id}/source/file`, {
        leaseToken: lease,
        file: { type: 'page', name: 'home' },
        content: PAGE(i),
      })
      const result = await call('POST', `/v1/websites/${site.id}/head/check`)
      checks.push(Object.values(result.timings as Record<string, number>).reduce((a, b) => a + b, 0))
      if (!result.ok) throw new Error(JSON.stringify(result).slice(0, 400))
      ids.push(site.id)
    }
    const after = treeRss()
    const first = await call('POST', `/v1/websites/${ids[0]}/head/check`)
    const again = Object.values(first.timings as Record<string, number>).reduce((a, b) => a + b, 0)
    checks.sort((a, b) => a - b)
    return [
      String(budget),
      `${before.toFixed(0)} MiB`,
      `${after.toFixed(0)} MiB`,
      `${checks[Math.floor(checks.length / 2)].toFixed(0)} ms`,
      `${again.toFixed(0)} ms`,
    ]
  } finally {
    await plinth.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

async function main(): Promise<void> {
  // One budget per process, so no server's memory is counted against the next one.
  const one = process.env.BENCH_WARM_ONE
  if (one !== undefined) {
    console.log(JSON.stringify(await measure(Number(one))))
    return
  }
  const rows: string[][] = []
  for (const budget of BUDGETS) {
    const out = execFileSync(process.execPath, [...process.execArgv, process.argv[1]], {
      env: { ...process.env, BENCH_WARM_ONE: String(budget) },
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    rows.push(JSON.parse(out.trim().split('\n').pop()!) as string[])
  }
  console.log(`\nWarm build state: ${CHECKED} framework sites checked one after another, on a fresh server per budget\n`)
  console.log(
    '| PLINTH_WARM_SITES | RSS before (server + children) | RSS after the checks | median check (sum of steps) | check of the first site again |',
  )
  console.log('|---|---|---|---|---|')
  for (const row of rows) console.log(`| ${row.join(' | ')} |`)
}

runBenchmark(main)
