/**
 * npm run bench:app — the dashboard as a person meets it (issue 27): a server whose workspace holds
 * BENCH_SITES websites (default 60, three pages of the home screen); each round a fresh browser
 * context (a cold cache, as a new visitor) with the session of a sign-in opens /app, as the browser
 * does after the sign-in redirect, and the time until the home screen lists its websites is
 * measured; then again with the browser's cache warm. Prints the first load's compressed size, and median and p90 over BENCH_ROUNDS (20).
 * Goal: usable within 1 s on this machine; under 200 KB of scripts and styles compressed.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { percentile, runBenchmark } from './main.js'

const SITES = Number(process.env.BENCH_SITES ?? 60)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 20)
const PORT = 18592
const ADMIN = 'wb_' + 'a'.repeat(43)
const ENTRY = fileURLToPath(new URL('../bin/plinth.js', import.meta.url))

runBenchmark(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-app-'))
  const child = spawn(process.execPath, ['--no-node-snapshot', ENTRY, 'start'], {
    env: { PATH: process.env.PATH, PORT: String(PORT), PLINTH_DATA_DIR: dir, PLINTH_ADMIN_KEY: ADMIN },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  let out = ''
  child.stdout.on('data', (chunk: Buffer) => (out += chunk))
  try {
    for (let i = 0; i < 100 && !/listening on/.test(out); i++) await new Promise((r) => setTimeout(r, 100))
    const token = /setup#token=(\S+)/.exec(out)?.[1]
    if (token === undefined) throw new Error(`no setup link: ${out}`)
    const origin = `http://localhost:${PORT}`
    const api = (path: string, body: unknown) =>
      fetch(`${origin}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${ADMIN}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      })
    for (let i = 0; i < SITES; i++) await api('/v1/websites', { name: `Site ${i}`, kind: 'static' })
    const setup = await fetch(`${origin}/app/setup`, {
      method: 'POST',
      redirect: 'manual',
      headers: { origin, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token, email: 'owner@example.com', password: 'owner-password-1' }),
    })
    const session = /plinth_session=([^;]+)/.exec(setup.headers.get('set-cookie') ?? '')?.[1]
    if (setup.status !== 303 || session === undefined) throw new Error(`setup failed: ${setup.status}`)

    // Signed in once (sign-in itself is rate limited per email); each round a fresh context carries the
    // session cookie and opens the dashboard, as the browser does right after the sign-in redirect.
    const browser = await chromium.launch({
      executablePath: '/usr/bin/chromium',
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
    })
    const cold: number[] = []
    const warm: number[] = []
    let firstLoad = 0
    for (let round = 0; round < ROUNDS; round++) {
      const context = await browser.newContext()
      await context.addCookies([
        { name: 'plinth_session', value: session, domain: 'localhost', path: '/', httpOnly: true, sameSite: 'Lax' },
      ])
      const page = await context.newPage()
      let bytes = 0
      page.on('response', (response) => {
        if (/\/app\/assets\//.test(response.url())) bytes += Number(response.headers()['content-length'] ?? 0)
      })
      for (const times of [cold, warm]) {
        const start = performance.now()
        await page.goto(`${origin}/app`)
        await page.getByRole('list', { name: 'Websites' }).getByRole('listitem').first().waitFor()
        times.push(performance.now() - start)
        if (times === cold) firstLoad = bytes
      }
      await context.close()
    }
    await browser.close()
    const ms = (xs: number[], p: number) => percentile(xs, p).toFixed(0)
    console.log(`Dashboard after sign-in, ${SITES} websites in the workspace, ${ROUNDS} rounds (Chromium on this machine)`)
    console.log(`| cache | median ms | p90 ms | max ms |\n|---|---|---|---|`)
    console.log(`| cold (first visit) | ${ms(cold, 50)} | ${ms(cold, 90)} | ${ms(cold, 100)} |`)
    console.log(`| warm | ${ms(warm, 50)} | ${ms(warm, 90)} | ${ms(warm, 100)} |`)
    console.log(`First load: ${(firstLoad / 1024).toFixed(1)} KiB of scripts and styles as sent (brotli)`)
  } finally {
    child.kill('SIGTERM')
    await new Promise((r) => child.once('exit', r))
    rmSync(dir, { recursive: true, force: true })
  }
})
