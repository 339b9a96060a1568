/**
 * npm run bench:functions — a site's functions (issue 54) against the same site's static page and
 * against the same functions in workerd, Cloudflare's own runtime (npm `workerd`), in one run.
 *
 * Method: each server pinned to core 0 (Plinth with PLINTH_SERVE_THREADS=1: its main thread, and the
 * functions process it starts, share that core; workerd with its own threads), wrk -t1 -c50 on core 1;
 * 2 s warm-up, BENCH_DURATION_S (10) measured, BENCH_REPS (3) repetitions interleaved; medians.
 * Rows: a 2 KiB static page; a hello-world function; a JSON function reading a KV value. workerd runs
 * the same two functions as a module worker, its KV binding served by an in-memory KV worker (workerd
 * has no KV store of its own outside Cloudflare). Then the cold start (the first request to a
 * function after a deploy: a new script, a new isolate; 20 deploys, p50 and p99) and the memory a
 * warm site costs (the functions process's RSS over 50 sites each asked once, per site, and how many
 * sites stay warm in 1 GiB at that rate).
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { runBenchmark, percentile } from './main.js'
import { apiOf, childPids, luaScript, median, need, page, sleep, waitForPort, wrk, type Run } from './serve-tools.js'

const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 2)
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10)
const REPS = Number(process.env.BENCH_REPS ?? 3)
const PLINTH_PORT = 18780
const WORKERD_PORT = 18781
const KEY = 'wb_' + 'f'.repeat(43)
const ENTRY = fileURLToPath(new URL('../bin/plinth.js', import.meta.url))
const WORKERD = fileURLToPath(new URL('../../node_modules/.bin/workerd', import.meta.url))
const COLD_DEPLOYS = 20
const WARM_SITES = 50

const HELLO = `export const onRequest = () => new Response('Hello, world!')\n`
/** A hello-world of its own (a comment would be compiled away: the same script, the same warm isolate). */
const helloNumber = (n: number) => `export const onRequest = () => new Response('Hello, world ${n}!')\n`
const JSON_FN = `export const onRequest = async ({ env }) => {
  const greeting = await env.KV.get('greeting')
  return Response.json({ greeting, at: 'json' })
}\n`
const SEED = `export const onRequest = async ({ env }) => {
  await env.KV.put('greeting', 'hello from KV')
  return new Response('seeded')
}\n`

/** The same two functions as one module worker for workerd (routing by path, as Pages would). */
const WORKER = `export default {
  async fetch(request, env) {
    const path = new URL(request.url).pathname
    if (path === '/hello') return new Response('Hello, world!')
    if (path === '/json') {
      const greeting = await env.KV.get('greeting')
      return Response.json({ greeting, at: 'json' })
    }
    return new Response('not found', { status: 404 })
  },
}
`
/** workerd's KV binding speaks HTTP to a service: GET /<key> answers the value (404: none). */
const KV_WORKER = `const values = new Map([['greeting', 'hello from KV']])
export default {
  async fetch(request) {
    const key = decodeURIComponent(new URL(request.url).pathname.slice(1))
    if (request.method === 'GET') return values.has(key) ? new Response(values.get(key)) : new Response(null, { status: 404 })
    if (request.method === 'PUT') { values.set(key, await request.text()); return new Response(null) }
    return new Response(null, { status: 405 })
  },
}
`
const CONFIG = (port: number) => `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .main), (name = "kv", worker = .kv) ],
  sockets = [ ( name = "http", address = "127.0.0.1:${port}", http = (), service = "main" ) ]
);
const main :Workerd.Worker = (
  modules = [ (name = "worker.js", esModule = embed "worker.js") ],
  bindings = [ (name = "KV", kvNamespace = "kv") ],
  compatibilityDate = "2024-09-23",
);
const kv :Workerd.Worker = (
  modules = [ (name = "kv.js", esModule = embed "kv.js") ],
  compatibilityDate = "2024-09-23",
);
`

const api = apiOf(PLINTH_PORT, KEY)

async function site(label: string, files: Record<string, string>): Promise<string> {
  const w = await api('POST', '/v1/websites', { name: label, kind: 'static', subdomain: label })
  await deploy(w.id, files)
  await api('POST', `/v1/websites/${w.id}/publish`)
  return w.id
}

function deploy(id: string, files: Record<string, string>): Promise<any> {
  return api('POST', `/v1/websites/${id}/deploy/json`, {
    replace: true,
    files: Object.entries(files).map(([path, content]) => ({ path, content })),
  })
}

/** One GET with a Host header (fetch cannot set it), timed to its last byte. */
function get(port: number, host: string, path: string): Promise<{ status: number; text: string; ms: number }> {
  const started = performance.now()
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers: { host }, agent: false }, (res) => {
      const chunks: Buffer[] = []
      res.on('data', (c: Buffer) => chunks.push(c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), ms: performance.now() - started }))
    })
    req.on('error', reject)
    req.end()
  })
}

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024
}

/** The functions process of a Plinth server: its child running function.worker.js. */
function functionsProcess(serverPid: number): number {
  for (const pid of childPids(serverPid)) {
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('function.worker')) return pid
    } catch {
      // gone
    }
  }
  throw new Error('no functions process')
}

async function main(): Promise<void> {
  need('wrk', 'apt-get install -y wrk')
  need('taskset', 'apt-get install -y util-linux')
  const haveWorkerd = existsSync(WORKERD)
  if (!haveWorkerd) console.log(`(workerd not installed at ${WORKERD}: npm install; its columns are left out)`)
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-functions-'))
  const children: ChildProcess[] = []
  try {
    const plinth = spawn('taskset', ['-c', '0', process.execPath, '--no-node-snapshot', '--max-semi-space-size=32', ENTRY, 'start'], {
      env: {
        PATH: process.env.PATH,
        PORT: String(PLINTH_PORT),
        HOST: '127.0.0.1',
        PLINTH_DATA_DIR: join(dir, 'data'),
        PLINTH_ADMIN_KEY: KEY,
        PLINTH_SERVE_THREADS: '1',
        PLINTH_ANALYTICS_BEACON: 'off',
      },
      stdio: 'ignore',
    })
    children.push(plinth)
    await waitForPort(PLINTH_PORT)
    await site('static', { 'index.html': page(2048, 'functions') })
    await site('fn', {
      'index.html': page(2048, 'functions'),
      'functions/hello.js': HELLO,
      'functions/json.js': JSON_FN,
      'functions/seed.js': SEED,
    })
    const seeded = await get(PLINTH_PORT, 'fn.localhost', '/seed')
    if (seeded.text !== 'seeded') throw new Error(`seed: ${seeded.status} ${seeded.text}`)
    const json = await get(PLINTH_PORT, 'fn.localhost', '/json')
    if (!json.text.includes('hello from KV')) throw new Error(`json: ${json.status} ${json.text}`)

    let workerd: ChildProcess | null = null
    if (haveWorkerd) {
      writeFileSync(join(dir, 'worker.js'), WORKER)
      writeFileSync(join(dir, 'kv.js'), KV_WORKER)
      writeFileSync(join(dir, 'config.capnp'), CONFIG(WORKERD_PORT))
      workerd = spawn('taskset', ['-c', '0', WORKERD, 'serve', join(dir, 'config.capnp')], { cwd: dir, stdio: 'ignore' })
      children.push(workerd)
      await waitForPort(WORKERD_PORT)
      const check = await get(WORKERD_PORT, 'localhost', '/json')
      if (!check.text.includes('hello from KV')) throw new Error(`workerd json: ${check.status} ${check.text}`)
    }

    const plinthPids = () => [plinth.pid!, ...childPids(plinth.pid!)]
    const rows: { name: string; plinth: string; workerd: string | null }[] = [
      {
        name: 'a 2 KiB static page',
        plinth: luaScript(dir, 'static', [{ host: 'static.localhost', path: '/', headers: {} }]),
        workerd: null,
      },
      {
        name: 'a hello-world function',
        plinth: luaScript(dir, 'hello', [{ host: 'fn.localhost', path: '/hello', headers: {} }]),
        workerd: luaScript(dir, 'w-hello', [{ host: 'localhost', path: '/hello', headers: {} }]),
      },
      {
        name: 'a JSON function reading a KV value',
        plinth: luaScript(dir, 'json', [{ host: 'fn.localhost', path: '/json', headers: {} }]),
        workerd: luaScript(dir, 'w-json', [{ host: 'localhost', path: '/json', headers: {} }]),
      },
    ]
    const plinthRuns: Run[][] = rows.map(() => [])
    const workerdRuns: Run[][] = rows.map(() => [])
    for (const row of rows) {
      await wrk(PLINTH_PORT, row.plinth, WARMUP_S, plinthPids())
      if (workerd !== null && row.workerd !== null) await wrk(WORKERD_PORT, row.workerd, WARMUP_S, [workerd.pid!])
    }
    for (let rep = 0; rep < REPS; rep++)
      for (const [i, row] of rows.entries()) {
        plinthRuns[i]!.push(await wrk(PLINTH_PORT, row.plinth, DURATION_S, plinthPids()))
        if (workerd !== null && row.workerd !== null)
          workerdRuns[i]!.push(await wrk(WORKERD_PORT, row.workerd, DURATION_S, childPidsAnd(workerd.pid!)))
      }

    console.log(
      `\n## bench:functions — ${new Date().toISOString().slice(0, 10)}, servers on core 0, wrk -t1 -c50 on core 1, medians of ${REPS}\n`,
    )
    console.log('| row | Plinth req/s | p99 ms | CPU µs/req | workerd req/s | p99 ms | CPU µs/req | Plinth/workerd req/s | vs static |')
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |')
    const staticRps = median(plinthRuns[0]!.map((r) => r.rps))
    for (const [i, row] of rows.entries()) {
      const p = plinthRuns[i]!
      const w = workerdRuns[i]!
      const prps = median(p.map((r) => r.rps))
      const wrps = w.length === 0 ? null : median(w.map((r) => r.rps))
      console.log(
        `| ${row.name} | ${prps.toFixed(0)} | ${median(p.map((r) => r.p99ms)).toFixed(2)} | ${median(p.map((r) => r.cpuUs)).toFixed(1)} | ` +
          (wrps === null
            ? '– | – | – | – |'
            : `${wrps.toFixed(0)} | ${median(w.map((r) => r.p99ms)).toFixed(2)} | ${median(w.map((r) => r.cpuUs)).toFixed(1)} | ${(prps / wrps).toFixed(2)} |`) +
          ` ${(prps / staticRps).toFixed(2)} |`,
      )
    }

    // Cold starts: each deploy is a new script, so its first request starts a new isolate.
    const coldId = await site('cold', { 'functions/hello.js': HELLO })
    const cold: number[] = []
    for (let i = 0; i < COLD_DEPLOYS; i++) {
      await deploy(coldId, { 'functions/hello.js': helloNumber(i) })
      await api('POST', `/v1/websites/${coldId}/publish`)
      const first = await get(PLINTH_PORT, 'cold.localhost', '/hello')
      if (first.text !== `Hello, world ${i}!`) throw new Error(`cold: ${first.status} ${first.text}`)
      const warm = await get(PLINTH_PORT, 'cold.localhost', '/hello')
      cold.push(first.ms - warm.ms)
      cold.push(first.ms)
    }
    const firsts = cold.filter((_, i) => i % 2 === 1)
    console.log(
      `\nCold start (first request after a deploy, ${COLD_DEPLOYS} deploys): p50 ${percentile(firsts, 50).toFixed(1)} ms, p99 ${percentile(firsts, 99).toFixed(1)} ms (over a warm request: p50 ${percentile(
        cold.filter((_, i) => i % 2 === 0),
        50,
      ).toFixed(1)} ms)`,
    )

    // Memory per warm site: the functions process's RSS before and after 50 sites each asked once.
    const fnPid = functionsProcess(plinth.pid!)
    const ids: string[] = []
    for (let i = 0; i < WARM_SITES; i++) ids.push(await site(`warm${i}`, { 'functions/hello.js': helloNumber(1000 + i) }))
    const before = rssMb(fnPid)
    for (let i = 0; i < WARM_SITES; i++) await get(PLINTH_PORT, `warm${i}.localhost`, '/hello')
    await sleep(500)
    const after = rssMb(fnPid)
    const perSite = (after - before) / WARM_SITES
    console.log(
      `Memory: ${WARM_SITES} warm sites added ${(after - before).toFixed(1)} MiB to the functions process (${perSite.toFixed(2)} MiB a site): about ${Math.floor(1024 / perSite)} warm sites in 1 GiB`,
    )
  } finally {
    for (const child of children) child.kill('SIGTERM')
    await sleep(500)
    rmSync(dir, { recursive: true, force: true })
  }
}

function childPidsAnd(pid: number): number[] {
  return [pid, ...childPids(pid)]
}

runBenchmark(main)
