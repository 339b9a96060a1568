/**
 * npm run bench:edit — does formatting stall serving? A burst of typed-source writes (each formatted
 * by prettier in the worker pool) runs while a static site is requested in a loop; prints the
 * event-loop delay of the server's thread and the site's request latency, idle and during the burst.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { request } from 'node:http'
import { loadConfig } from '../core/config.js'
import { silentLogger } from '../core/log.js'
import { startPlinth } from '../plinth/start.js'
import { runBenchmark } from './main.js'

const KEY = 'wb_' + 'e'.repeat(43)
const WRITES = Number(process.env.BENCH_WRITES ?? 200)
const CONCURRENCY = 8

function component(i: number): string {
  const items = Array.from({ length: 40 }, (_, j) => `{ id: ${j}, label: "Item ${i}-${j}", value: ${i * j} }`).join(', ')
  return `import { clsx } from "clsx@2.1.1";\nconst items = [${items}];\nexport function List${i}({ active }: { active: number }) { return (<ul className={clsx("list", { on: active > 0 })}>{items.map(item => <li key={item.id} className="p-2">{item.label}: {item.value}</li>)}</ul>); }\n`
}

function get(port: number): Promise<number> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    request({ host: '127.0.0.1', port, path: '/', headers: { host: 'probe.localhost' } }, (res) => {
      res.resume()
      res.on('end', () => resolve(performance.now() - started))
    })
      .on('error', reject)
      .end()
  })
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))]

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-edit-'))
  const plinth = await startPlinth({ config: loadConfig({ PORT: '0', PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: KEY }), log: silentLogger })
  const origin = `http://127.0.0.1:${plinth.port}`
  const api = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(origin + path, {
      method,
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    })
    return (await res.json()) as any
  }
  try {
    const probe = await api('POST', '/v1/websites', { name: 'probe', kind: 'static', subdomain: 'probe' })
    await api('POST', `/v1/websites/${probe.id}/deploy/json`, { files: [{ path: 'index.html', content: '<h1>probe</h1>' }] })
    await api('POST', `/v1/websites/${probe.id}/publish`)
    const site = await api('POST', '/v1/websites', { name: 'editing' })
    // Several keys: writes are standard-class (burst 120 per key).
    const keys = await Promise.all(
      Array.from(
        { length: Math.ceil(WRITES / 100) + 1 },
        async (_, i) =>
          (await api('POST', '/v1/api-keys', { name: `k${i}`, access: { kind: 'organization', role: 'full_editor' } })).secret,
      ),
    )
    const lease = (await api('POST', `/v1/websites/${site.id}/source/lease`)).leaseToken

    const measure = async (during: () => Promise<unknown>) => {
      const histogram = monitorEventLoopDelay({ resolution: 1 })
      histogram.enable()
      const latencies: number[] = []
      let done = false
      const prober = (async () => {
        while (!done) latencies.push(await get(plinth.port))
      })()
      const started = performance.now()
      await during()
      const elapsed = performance.now() - started
      done = true
      await prober
      histogram.disable()
      return {
        elapsed,
        loop: { p50: histogram.percentile(50) / 1e6, p99: histogram.percentile(99) / 1e6, max: histogram.max / 1e6 },
        latencies,
      }
    }
    const idle = await measure(() => new Promise((r) => setTimeout(r, 2000)))
    let next = 0
    const formatted: number[] = []
    const burst = await measure(async () => {
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < WRITES) {
            const i = next++
            const t0 = performance.now()
            const res = await fetch(`${origin}/v1/websites/${site.id}/source/file`, {
              method: 'PUT',
              headers: { authorization: `Bearer ${keys[i % keys.length]}`, 'content-type': 'application/json' },
              body: JSON.stringify({ leaseToken: lease, file: { type: 'component', name: `List${i}` }, content: component(i) }),
            })
            const body = (await res.json()) as any
            if (res.status !== 201 || body.formatted !== true) throw new Error(`write ${i}: ${res.status} ${JSON.stringify(body)}`)
            formatted.push(performance.now() - t0)
          }
        }),
      )
    })
    const row = (name: string, m: typeof idle) =>
      `| ${name} | ${m.loop.p50.toFixed(1)} | ${m.loop.p99.toFixed(1)} | ${m.loop.max.toFixed(1)} | ${m.latencies.length} | ${pct(m.latencies, 50).toFixed(2)} | ${pct(m.latencies, 99).toFixed(2)} |`
    console.log(
      `\n${WRITES} formatted component writes (~4 KiB TSX each), ${CONCURRENCY} at a time, in ${(burst.elapsed / 1000).toFixed(1)} s: write p50 ${pct(formatted, 50).toFixed(0)} ms, p99 ${pct(formatted, 99).toFixed(0)} ms\n`,
    )
    console.log('| phase | event-loop delay p50 ms | p99 ms | max ms | site requests | site p50 ms | site p99 ms |')
    console.log('|---|---|---|---|---|---|---|')
    console.log(row('idle (2 s)', idle))
    console.log(row('during the write burst', burst))
  } finally {
    await plinth.close()
    rmSync(dir, { recursive: true, force: true })
  }
}

runBenchmark(main)
