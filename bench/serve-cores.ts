// bench:serve's every-core rows: Plinth with two serving threads against one thread and against nginx with two workers, servers and wrk sharing both cores.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { childPids, luaScript, median, sleep, waitForPort, wrk, type Run, type WrkLoad } from './serve-tools.js'

const THREADS_PORT = 18485
const ONE_THREAD_PORT = 18486
const NGINX_PORT = 18487
/** No pinning: each server and wrk (100 connections; BENCH_CORES_WRK_THREADS threads, default 2) share both cores, the same for every server. */
const LOAD: WrkLoad = { cpus: null, threads: Number(process.env.BENCH_CORES_WRK_THREADS ?? 2), connections: 100 }

export interface CoresSetup {
  dir: string
  /** Site labels, each with small.html and small.css. */
  labels: string[]
  /** nginx's document roots, `{nginxRoot}/sites/{label}`, written by the one-core rows. */
  nginxRoot: string
  browser: string
  warmupS: number
  durationS: number
  reps: number
  children: ChildProcess[]
  /** Starts a Plinth with the sites published, on any core; `served` reads its /metrics, `counted` its analytics API. */
  startPlinth(
    port: number,
    data: string,
    env: Record<string, string>,
  ): Promise<{ child: ChildProcess; served(): Promise<number>; counted(): Promise<number> }>
}

/**
 * Plinth with PLINTH_SERVE_THREADS=2, Plinth with 1, nginx with worker_processes 2, measured back to
 * back per repetition. Prints each run's medians and the ratios the issue asks for: 2 threads against
 * 1 (requests/s and CPU per request) and against nginx (requests/s, p99). The page views the
 * two-thread Plinth served must equal those its analytics API counts.
 */
export async function measureCores(setup: CoresSetup): Promise<void> {
  const threads = await setup.startPlinth(THREADS_PORT, 'plinth-threads', { PLINTH_SERVE_THREADS: '2' })
  const one = await setup.startPlinth(ONE_THREAD_PORT, 'plinth-one', { PLINTH_SERVE_THREADS: '1' })
  const root = join(setup.dir, 'nginx-2')
  mkdirSync(join(root, 'tmp'), { recursive: true })
  const vhosts = setup.labels
    .map(
      (label) =>
        `  server { listen 127.0.0.1:${NGINX_PORT}; server_name ${label}.localhost; root ${join(setup.nginxRoot, 'sites', label)}; location / { try_files $uri $uri.html =404; } }`,
    )
    .join('\n')
  writeFileSync(
    join(root, 'nginx.conf'),
    `daemon off;\nworker_processes 2;\nuser root;\npid ${root}/nginx.pid;\nerror_log ${root}/error.log;\nevents { worker_connections 1024; }\nhttp {\n  include /etc/nginx/mime.types;\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n  keepalive_requests 1000000;\n  open_file_cache max=1000 inactive=60s;\n  open_file_cache_valid 60s;\n  client_body_temp_path ${root}/tmp; proxy_temp_path ${root}/tmp; fastcgi_temp_path ${root}/tmp; uwsgi_temp_path ${root}/tmp; scgi_temp_path ${root}/tmp;\n${vhosts}\n}\n`,
  )
  const nginx = spawn('nginx', ['-c', join(root, 'nginx.conf'), '-p', root], { stdio: ['ignore', 'ignore', 'inherit'] })
  setup.children.push(nginx)
  await waitForPort(NGINX_PORT)

  const servers = [
    { name: '2 threads', port: THREADS_PORT, pids: () => [threads.child.pid!, ...childPids(threads.child.pid!)] },
    { name: 'nginx, 2 workers', port: NGINX_PORT, pids: () => [nginx.pid!, ...childPids(nginx.pid!)] },
    { name: '1 thread', port: ONE_THREAD_PORT, pids: () => [one.child.pid!, ...childPids(one.child.pid!)] },
  ]
  const rows: { name: string; path: string; headers: Record<string, string>; views: boolean }[] = [
    { name: '2 KiB page', path: '/small', headers: { 'User-Agent': setup.browser }, views: true },
    { name: '2 KiB stylesheet', path: '/small.css', headers: {}, views: false },
  ]
  let served = 0
  const results: Record<string, Record<string, Run[]>> = {}
  for (const row of rows) {
    results[row.name] = Object.fromEntries(servers.map((s) => [s.name, []]))
    const script = luaScript(
      setup.dir,
      `cores-${row.name.replace(/\W+/g, '-')}`,
      setup.labels.map((label) => ({ host: `${label}.localhost`, path: row.path, headers: row.headers })),
    )
    for (let rep = 0; rep < setup.reps; rep++) {
      for (const server of rep % 2 === 0 ? servers : [...servers].reverse()) {
        const counted = row.views && server.port === THREADS_PORT
        const before = counted ? await threads.served() : 0
        await wrk(server.port, script, setup.warmupS, server.pids(), LOAD)
        const run = await wrk(server.port, script, setup.durationS, server.pids(), LOAD)
        if (counted) served += (await sleep(500), await threads.served()) - before
        results[row.name]![server.name]!.push(run)
        process.stderr.write(
          `  every core: ${row.name} / ${server.name} rep ${rep + 1}: ${Math.round(run.rps)} req/s, p99 ${run.p99ms.toFixed(2)} ms\n`,
        )
      }
    }
  }

  const m = (runs: Run[], key: keyof Run) => median(runs.map((r) => r[key]))
  const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`
  console.log(
    `\nEvery core: wrk -t${LOAD.threads} -c${LOAD.connections} and the server on both cores, ${setup.durationS} s x ${setup.reps} interleaved; medians\n`,
  )
  console.log('| row | server | req/s | p50 ms | p99 ms | server CPU % | CPU µs/req |')
  console.log('|---|---|---|---|---|---|---|')
  for (const row of rows)
    for (const server of servers) {
      const runs = results[row.name]![server.name]!
      console.log(
        `| ${row.name} | ${server.name} | ${m(runs, 'rps').toFixed(0)} | ${m(runs, 'p50ms').toFixed(2)} | ${m(runs, 'p99ms').toFixed(2)} | ${m(runs, 'cpu').toFixed(0)} | ${m(runs, 'cpuUs').toFixed(1)} |`,
      )
    }
  console.log('\n| row | 2 threads/1 thread req/s | 1 thread/2 threads CPU per req | 2 threads/nginx req/s | 2 threads/nginx p99 |')
  console.log('|---|---|---|---|---|')
  for (const row of rows) {
    const r = results[row.name]!
    const [two, ng, single] = [r['2 threads']!, r['nginx, 2 workers']!, r['1 thread']!]
    console.log(
      `| ${row.name} | ${ratio(m(two, 'rps'), m(single, 'rps'))} | ${ratio(m(single, 'cpuUs'), m(two, 'cpuUs'))} | ${ratio(m(two, 'rps'), m(ng, 'rps'))} | ${ratio(m(two, 'p99ms'), m(ng, 'p99ms'))} |`,
    )
  }
  const counted = await threads.counted()
  console.log(
    `\nPage views of the 2 KiB row on two threads (warm-ups included): ${served.toLocaleString('en')} served (/metrics), ${counted.toLocaleString('en')} counted (the analytics API)`,
  )
  if (counted !== served) throw new Error(`the serving threads lost or invented page views: ${served} served, ${counted} counted`)
}
