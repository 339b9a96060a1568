/**
 * What a static site's `_redirects` and `_headers` cost a request (issue 40): `npm run bench:rules`
 * alone, and the last table of `npm run bench:serve`.
 *
 * One Plinth server (PLINTH_SERVE_THREADS=1, pinned to core 0; wrk -t1 -c50 on core 1) serves three
 * published sites with the same 2 KiB page: one with no rules; one whose `_redirects` holds 2,000
 * exact rules and 100 with placeholders or splats (Cloudflare's limits: 99 for other paths, then
 * `/* /index.html 200`) and whose `_headers` holds 100 patterns; and a single-page app with that one
 * rule. Rows, each the median of `reps` interleaved runs of `durationS` s: the page on the site
 * without rules; the page on the site with the rules (a file: rules without ! pass); a deep link of
 * the app (the rewrite); a deep link of the site with the rules (the worst case: 99 patterns tried,
 * then the rewrite, and 100 header patterns); the last of the 2,000 exact redirects. The ratios
 * against the first row are the cost of the rules.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { apiOf, luaScript, median, need, page, waitForPort, wrk, type Run } from './serve-tools.js'

const PORT = 18700
const KEY = 'wb_' + 'r'.repeat(43)
const ENTRY = fileURLToPath(new URL('../bin/plinth.js', import.meta.url))

const api = apiOf(PORT, KEY)

async function site(label: string, files: Record<string, string>): Promise<void> {
  const w = await api('POST', '/v1/websites', { name: label, kind: 'static', subdomain: label })
  const deployed = await api('POST', `/v1/websites/${w.id}/deploy/json`, {
    files: Object.entries(files).map(([path, content]) => ({ path, content })),
  })
  if (deployed.warnings.length > 0) throw new Error(`${label}: ${JSON.stringify(deployed.warnings)}`)
  await api('POST', `/v1/websites/${w.id}/publish`)
}

/**
 * Starts its own server (PLINTH_SERVE_THREADS=1 on core 0) and prints the rules table: the rows of
 * bench:rules, also the last rows of bench:serve.
 */
export async function measureRules(durationS: number, reps: number): Promise<void> {
  need('wrk', 'apt-get install -y wrk')
  need('taskset', 'apt-get install -y util-linux')
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-rules-'))
  let server: ChildProcess | null = null
  try {
    server = spawn('taskset', ['-c', '0', process.execPath, '--no-node-snapshot', ENTRY, 'start'], {
      env: {
        PATH: process.env.PATH,
        PORT: String(PORT),
        HOST: '127.0.0.1',
        PLINTH_DATA_DIR: join(dir, 'data'),
        PLINTH_ADMIN_KEY: KEY,
        PLINTH_SERVE_THREADS: '1',
      },
      stdio: 'ignore',
    })
    await waitForPort(PORT)
    const html = page(2048, 'rules')
    await site('plain', { 'index.html': html })
    const redirects = [
      ...Array.from({ length: 2000 }, (_, i) => `/old/page-${i} /new/page-${i} 301`),
      ...Array.from({ length: 99 }, (_, i) => `/section-${i}/:year/:slug /archive/${i}/:year/:slug 302`),
      '/*  /index.html  200',
    ].join('\n')
    const headers = Array.from({ length: 100 }, (_, i) => `/area-${i}/*\n  X-Area: ${i}`).join('\n')
    await site('ruled', { 'index.html': html, _redirects: redirects, _headers: headers })
    await site('spa', { 'index.html': html, _redirects: '/*  /index.html  200\n' })
    const rows: [string, string, string][] = [
      ['the page, a site without rules', 'plain.localhost', '/'],
      ['the page, a site with 2,100 redirect rules and 100 header patterns', 'ruled.localhost', '/'],
      ['a deep link of a single-page app (/* /index.html 200)', 'spa.localhost', '/settings/profile'],
      ['a deep link past 99 patterns that do not match, then /*, and 100 header patterns', 'ruled.localhost', '/settings/profile'],
      ['the last of 2,000 exact redirects (301)', 'ruled.localhost', '/old/page-1999'],
    ]
    const scripts = rows.map(([, host, path], i) => luaScript(dir, `row${i}`, [{ host, path, headers: {} }]))
    const runs: Run[][] = rows.map(() => [])
    for (const script of scripts) await wrk(PORT, script, 2, [server.pid!])
    for (let rep = 0; rep < reps; rep++)
      for (const [i, script] of scripts.entries()) runs[i]!.push(await wrk(PORT, script, durationS, [server.pid!]))
    const base = median(runs[0]!.map((r) => r.rps))
    console.log(`\n## bench:rules — ${new Date().toISOString().slice(0, 10)}, server on core 0, wrk -t1 -c50 on core 1\n`)
    console.log('| row | req/s | p99 ms | CPU µs/req | vs no rules |')
    console.log('| --- | ---: | ---: | ---: | ---: |')
    for (const [i, [name]] of rows.entries()) {
      const rps = median(runs[i]!.map((r) => r.rps))
      const p99 = median(runs[i]!.map((r) => r.p99ms))
      const cpu = median(runs[i]!.map((r) => r.cpuUs))
      console.log(`| ${name} | ${rps.toFixed(0)} | ${p99.toFixed(2)} | ${cpu.toFixed(1)} | ${(rps / base).toFixed(2)} |`)
    }
  } finally {
    server?.kill('SIGTERM')
    await new Promise((resolve) => setTimeout(resolve, 500))
    rmSync(dir, { recursive: true, force: true })
  }
}
