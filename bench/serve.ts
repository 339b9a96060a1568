/**
 * npm run bench:serve — the hosting plane against nginx, side by side in one run.
 *
 * Method (issue 3): each server pinned to core 0 and wrk to core 1 (taskset); wrk -t1 -c50 with a
 * Lua script rotating Host and path over several sites; 2 s warm-up, 10 s measured, 3 repetitions
 * interleaved between the servers; medians with min and max. Rows: a 2 KiB page, a 50 KiB page with
 * gzip, a 2 KiB stylesheet and a 304 revalidation. nginx: Debian's package, one worker, gzip_static on, open_file_cache.
 * A third server, the floor (bench/floor.ts: Plinth's uWS adapter answering from one Map), tells
 * what the stack costs apart from Plinth's hosting plane.
 * Prints requests per second, p50, p99, server CPU and server CPU time per request, the ratio
 * Plinth/nginx for each row, and the p99 ratios of each repetition (the servers measured back to
 * back, so slow drift of the machine cancels out): their median, a 95% interval for it from 6
 * repetitions up (BENCH_REPS), and in how many repetitions the first server's p99 was the lower.
 * A fourth server, Plinth with the analytics beacon off, gives the cost of counting page views; a
 * fifth, Varnish (deploy/varnish.vcl) in front of the first Plinth on the same core, the cache tier:
 * it keeps the stylesheet and passes pages through, so the beacon counts them. At the end the page
 * views of the 2 KiB row that Plinth served (its /metrics) must equal those the analytics API counts.
 * Then the every-core rows (serve-cores.ts): Plinth with two serving threads against one thread and
 * against nginx with two workers, servers and wrk sharing both cores. Last, the rules rows
 * (serve-rules.ts, also `npm run bench:rules`): a site's 2,000 `_redirects` rules and 100 `_headers`
 * patterns against the same page without them.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { gunzipSync, gzipSync } from 'node:zlib'
import { runBenchmark } from './main.js'
import { measureCores } from './serve-cores.js'
import { measureRules } from './serve-rules.js'
import { childPids, median, medianInterval, need, page, sleep, waitForPort, luaScript, wrk, type Run } from './serve-tools.js'

const SITES = 8
const WARMUP_S = Number(process.env.BENCH_WARMUP_S ?? 2)
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10)
const REPS = Number(process.env.BENCH_REPS ?? 3)
const PLINTH_PORT = 18480
const NGINX_PORT = 18481
const FLOOR_PORT = 18482
const QUIET_PORT = 18483
const VARNISH_PORT = 18484
const VARNISHD = '/usr/sbin/varnishd'
const VCL = fileURLToPath(new URL('../../deploy/varnish.vcl', import.meta.url))
const BROWSER = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36'
const KEY = 'wb_' + 'b'.repeat(43)
const ENTRY = fileURLToPath(new URL('../bin/plinth.js', import.meta.url))
const FLOOR = fileURLToPath(new URL('./floor.js', import.meta.url))
/** The same Node flags as `npm start` (package.json). */
const NODE_FLAGS = '--no-node-snapshot --max-semi-space-size=32'

async function main(): Promise<void> {
  need('nginx', 'apt-get install -y nginx')
  need('wrk', 'apt-get install -y wrk')
  need('taskset', 'apt-get install -y util-linux')
  need(VARNISHD, 'apt-get install -y varnish varnish-modules')
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-'))
  const children: ChildProcess[] = []
  const cleanup = () => {
    // SIGTERM: nginx's master then stops its worker (a SIGKILLed master would orphan it, still listening).
    for (const child of children) child.kill('SIGTERM')
    try {
      execFileSync('sh', ['-c', `sleep 0.5; pkill -f ${JSON.stringify(dir)} || true`])
    } catch {
      // nothing left to stop
    }
    rmSync(dir, { recursive: true, force: true })
  }
  process.on('exit', cleanup)
  try {
    // Content: the same files for both servers.
    const sites = Array.from({ length: SITES }, (_, i) => ({
      label: `site${i}`,
      small: page(2048, `site ${i} small`),
      large: page(50 * 1024, `site ${i} large`),
      css: `/* site ${i} */\n` + 'body{margin:0;font:16px/1.5 system-ui,sans-serif}\n'.repeat(42),
    }))

    // Plinth, with the analytics beacon counting every page view as in production; and a second
    // Plinth with the beacon off, for the cost of counting.
    const nodeFlags = (process.env.BENCH_NODE_FLAGS ?? NODE_FLAGS).split(' ').filter(Boolean)
    const startPlinth = async (port: number, data: string, extra: Record<string, string>, cpus: string | null = '0') => {
      const command = [process.execPath, ...nodeFlags, ENTRY, 'start']
      const child = spawn(cpus === null ? command[0]! : 'taskset', cpus === null ? command.slice(1) : ['-c', cpus, ...command], {
        env: { PATH: process.env.PATH, PORT: String(port), PLINTH_DATA_DIR: join(dir, data), PLINTH_ADMIN_KEY: KEY, ...extra },
        stdio: ['ignore', 'ignore', 'inherit'],
      })
      children.push(child)
      await waitForPort(port)
      const api = async (method: string, path: string, body?: unknown) => {
        const res = await fetch(`http://127.0.0.1:${port}${path}`, {
          method,
          headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
        if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`)
        return (await res.json()) as any
      }
      const ids: string[] = []
      for (const site of sites) {
        const w = await api('POST', '/v1/websites', { name: site.label, kind: 'static', subdomain: site.label })
        await api('POST', `/v1/websites/${w.id}/deploy/json`, {
          files: [
            { path: 'small.html', content: site.small },
            { path: 'large.html', content: site.large },
            { path: 'small.css', content: site.css },
          ],
        })
        await api('POST', `/v1/websites/${w.id}/publish`)
        ids.push(w.id)
      }
      return { child, ids, api }
    }
    // Varnish (Debian's, with deploy/varnish.vcl) in front of the first Plinth, on the same core:
    // pages pass through to Plinth (its beacon counts them), other files are kept.
    writeFileSync(join(dir, 'plinth.vcl'), readFileSync(VCL, 'utf8').replace('.port = "8080";', `.port = "${PLINTH_PORT}";`))
    const varnish = spawn(
      'taskset',
      [
        '-c',
        '0',
        VARNISHD,
        '-F',
        '-j',
        'none',
        '-n',
        join(dir, 'varnish'),
        '-a',
        `127.0.0.1:${VARNISH_PORT}`,
        '-f',
        join(dir, 'plinth.vcl'),
        '-s',
        'malloc,256m',
      ],
      // Quiet: it would say "Manager got SIGTERM" at the end; a Varnish that fails to start fails waitForPort.
      { stdio: 'ignore' },
    )
    children.push(varnish)
    // Both Plinths purge that Varnish, so their published files carry the same cache headers.
    const purge = { PLINTH_PURGE_URLS: `http://127.0.0.1:${VARNISH_PORT}/` }
    const { child: plinth, ids: plinthSites, api: plinthApi } = await startPlinth(PLINTH_PORT, 'plinth', purge)
    const { child: quiet } = await startPlinth(QUIET_PORT, 'plinth-quiet', { ...purge, PLINTH_ANALYTICS_BEACON: 'off' })
    await waitForPort(VARNISH_PORT)
    // Responses of the hosting plane with a 2xx status, from Plinth's own /metrics: the page views it served.
    const hostingServed = async () => {
      const text = await (await fetch(`http://127.0.0.1:${PLINTH_PORT}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text()
      return Number(/^plinth_http_responses_total\{door="hosting",class="2xx"\} (\d+)/m.exec(text)?.[1] ?? 0)
    }
    await hostingServed()

    // nginx
    const root = join(dir, 'nginx')
    const vhosts = sites
      .map((site) => {
        const docroot = join(root, 'sites', site.label)
        mkdirSync(docroot, { recursive: true })
        writeFileSync(join(docroot, 'small.html'), site.small)
        writeFileSync(join(docroot, 'large.html'), site.large)
        writeFileSync(join(docroot, 'large.html.gz'), gzipSync(site.large, { level: 9 }))
        writeFileSync(join(docroot, 'small.css'), site.css)
        return `  server { listen 127.0.0.1:${NGINX_PORT}; server_name ${site.label}.localhost; root ${docroot}; location / { try_files $uri $uri.html =404; } }`
      })
      .join('\n')
    writeFileSync(
      join(root, 'nginx.conf'),
      `daemon off;\nworker_processes 1;\nuser root;\npid ${root}/nginx.pid;\nerror_log ${root}/error.log;\nevents { worker_connections 1024; }\nhttp {\n  include /etc/nginx/mime.types;\n  access_log off;\n  sendfile on;\n  tcp_nopush on;\n  keepalive_requests 1000000;\n  gzip_static on;\n  open_file_cache max=1000 inactive=60s;\n  open_file_cache_valid 60s;\n  client_body_temp_path ${root}/tmp; proxy_temp_path ${root}/tmp; fastcgi_temp_path ${root}/tmp; uwsgi_temp_path ${root}/tmp; scgi_temp_path ${root}/tmp;\n${vhosts}\n}\n`,
    )
    mkdirSync(join(root, 'tmp'), { recursive: true })
    const nginx = spawn('taskset', ['-c', '0', 'nginx', '-c', join(root, 'nginx.conf'), '-p', root], {
      stdio: ['ignore', 'ignore', 'inherit'],
    })
    children.push(nginx)
    await waitForPort(NGINX_PORT)

    // The floor: the same files from one Map through Plinth's uWS adapter.
    const floorFiles = join(dir, 'floor.json')
    writeFileSync(
      floorFiles,
      JSON.stringify(
        sites.flatMap((s) => [
          // Each page at its own address, as Plinth and nginx (try_files) serve it; and by its file name.
          { host: `${s.label}.localhost`, path: '/small', content: s.small },
          { host: `${s.label}.localhost`, path: '/large', content: s.large },
          { host: `${s.label}.localhost`, path: '/small.html', content: s.small },
          { host: `${s.label}.localhost`, path: '/large.html', content: s.large },
          { host: `${s.label}.localhost`, path: '/small.css', content: s.css },
        ]),
      ),
    )
    const floor = spawn('taskset', ['-c', '0', process.execPath, ...nodeFlags, FLOOR, floorFiles, String(FLOOR_PORT)], {
      stdio: ['ignore', 'ignore', 'inherit'],
    })
    children.push(floor)
    await waitForPort(FLOOR_PORT)

    // ETags for the 304 row, per server.
    const etag = async (port: number, host: string, path: string) => {
      const { request } = await import('node:http')
      return new Promise<string>((resolve, reject) => {
        request({ host: '127.0.0.1', port, path, headers: { host } }, (res) => {
          res.resume()
          resolve(String(res.headers.etag))
        })
          .on('error', reject)
          .end()
      })
    }
    // A page is asked for at its own address (`/small`: one address per page, `/small.html` answers 308
    // there); nginx finds its file with try_files, as a pretty-URL site is configured, and once more by
    // the file's exact name (`nginx-file`), so neither side pays for the other's layout.
    const pagePath = (page: string, exact: boolean) => (exact ? `${page}.html` : page)
    const rows = [
      // A browser's user agent, so the beacon counts these views as it would a visitor's (not as a bot's).
      {
        name: '2 KiB page',
        // Every response is a page view the beacon counts (checked against the API below).
        views: true,
        targets: async (_port: number, exact: boolean) =>
          sites.map((s) => ({ host: `${s.label}.localhost`, path: pagePath('/small', exact), headers: { 'User-Agent': BROWSER } })),
      },
      {
        name: '50 KiB page, gzip',
        targets: async (_port: number, exact: boolean) =>
          sites.map((s) => ({ host: `${s.label}.localhost`, path: pagePath('/large', exact), headers: { 'Accept-Encoding': 'gzip' } })),
      },
      {
        name: '2 KiB stylesheet',
        targets: async (_port: number, _exact: boolean) =>
          sites.map((s) => ({ host: `${s.label}.localhost`, path: '/small.css', headers: {} })),
      },
      {
        name: '304 revalidation',
        targets: async (port: number, exact: boolean) =>
          Promise.all(
            sites.map(async (s) => ({
              host: `${s.label}.localhost`,
              path: pagePath('/small', exact),
              headers: { 'If-None-Match': await etag(port, `${s.label}.localhost`, pagePath('/small', exact)) },
            })),
          ),
      },
    ]
    // BENCH_ROWS=gzip,304 (substrings of row names) measures only matching rows.
    const only = process.env.BENCH_ROWS?.split(',').filter(Boolean)
    if (only?.length) rows.splice(0, rows.length, ...rows.filter((r) => only.some((o) => r.name.includes(o))))
    const servers = [
      { name: 'floor', port: FLOOR_PORT, pids: () => [floor.pid!] },
      { name: 'nginx', port: NGINX_PORT, pids: () => [nginx.pid!, ...childPids(nginx.pid!)] },
      { name: 'nginx-file', port: NGINX_PORT, exact: true, pids: () => [nginx.pid!, ...childPids(nginx.pid!)] },
      { name: 'plinth', port: PLINTH_PORT, pids: () => [plinth.pid!, ...childPids(plinth.pid!)] },
      { name: 'no-beacon', port: QUIET_PORT, pids: () => [quiet.pid!, ...childPids(quiet.pid!)] },
      // Varnish's CPU and, for what it passes through, the Plinth behind it.
      {
        name: 'varnish',
        port: VARNISH_PORT,
        pids: () => [varnish.pid!, ...childPids(varnish.pid!), plinth.pid!, ...childPids(plinth.pid!)],
      },
    ]
    const NAMES = servers.map((s) => s.name)
    /** Page views Plinth served (its /metrics) during the runs of the rows whose responses are all page views. */
    let served = 0
    const results: Record<string, Record<string, Run[]>> = {}
    for (const row of rows) {
      results[row.name] = Object.fromEntries(NAMES.map((name) => [name, []]))
      const targets = Object.fromEntries(
        await Promise.all(servers.map(async (s) => [s.name, await row.targets(s.port, 'exact' in s && s.exact === true)] as const)),
      )
      // Before any timing: every server answers every target alike (status and content, no redirect
      // followed), so a row never times one server's redirects against another's files.
      // (Pages asked for here are page views too: counted with the rest.)
      const checked = 'views' in row ? await hostingServed() : 0
      await sameAnswers(
        row.name,
        servers.map((s) => ({ name: s.name, port: s.port, targets: targets[s.name]! })),
      )
      if ('views' in row) served += (await sleep(500), await hostingServed()) - checked
      const scripts = Object.fromEntries(
        servers.map((s) => [s.name, luaScript(dir, `${row.name.replace(/\W+/g, '-')}-${s.name}`, targets[s.name]!)]),
      )
      for (let rep = 0; rep < REPS; rep++) {
        // Alternating order: nginx sits between the floor and Plinth, so nginx and Plinth always run back to back.
        const order = rep % 2 === 0 ? servers : [...servers].reverse()
        for (const server of order) {
          const counted = 'views' in row && (server.name === 'plinth' || server.name === 'varnish')
          const before = counted ? await hostingServed() : 0
          await wrk(server.port, scripts[server.name], WARMUP_S, server.pids())
          const run = await wrk(server.port, scripts[server.name], DURATION_S, server.pids())
          // Varnish may still be passing the last pages through when wrk stops: they land first.
          if (counted) served += (await sleep(500), await hostingServed()) - before
          results[row.name][server.name].push(run)
          process.stderr.write(
            `  ${row.name} / ${server.name} rep ${rep + 1}: ${Math.round(run.rps)} req/s, p99 ${run.p99ms.toFixed(2)} ms\n`,
          )
        }
      }
    }

    const fmt = (runs: Run[], key: keyof Run, digits = 0) => {
      const xs = runs.map((r) => r[key])
      return `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)})`
    }
    console.log(
      `\nHosting plane vs nginx: wrk -t1 -c50, ${DURATION_S} s x ${REPS} interleaved, server on core 0, wrk on core 1; median (min-max)\n`,
    )
    console.log('| row | server | req/s | p50 ms | p99 ms | server CPU % | CPU µs/req |')
    console.log('|---|---|---|---|---|---|---|')
    for (const row of rows) {
      for (const server of NAMES) {
        const runs = results[row.name][server]
        console.log(
          `| ${row.name} | ${server} | ${fmt(runs, 'rps')} | ${fmt(runs, 'p50ms', 2)} | ${fmt(runs, 'p99ms', 2)} | ${fmt(runs, 'cpu')} | ${fmt(runs, 'cpuUs', 1)} |`,
        )
      }
    }
    const ratio = (a: number, b: number) => `${(a / b).toFixed(2)}x`
    // Per repetition, the two servers ran back to back: median ratio, its 95% interval (from 6
    // repetitions up; min-max below that), and in how many pairs the first server's p99 was lower.
    const paired = (a: Run[], b: Run[]) => {
      const xs = a.map((run, i) => run.p99ms / b[i].p99ms)
      const [lo, hi] = medianInterval(xs) ?? [Math.min(...xs), Math.max(...xs)]
      const lower = xs.filter((x) => x < 1).length
      return `${median(xs).toFixed(2)}x (${medianInterval(xs) ? '95% CI ' : ''}${lo.toFixed(2)}-${hi.toFixed(2)}; lower in ${lower}/${xs.length})`
    }
    console.log(
      '\n| row | Plinth/nginx req/s | Plinth/nginx p99 | Plinth/nginx p99 per repetition | floor/nginx p99 per repetition | Plinth/floor p99 per repetition | Plinth/floor CPU per req |',
    )
    console.log('|---|---|---|---|---|---|---|')
    for (const row of rows) {
      const { plinth: p, nginx: n, floor: f } = results[row.name]
      const m = (runs: Run[], key: keyof Run) => median(runs.map((r) => r[key]))
      console.log(
        `| ${row.name} | ${ratio(m(p, 'rps'), m(n, 'rps'))} | ${ratio(m(p, 'p99ms'), m(n, 'p99ms'))} | ${paired(p, n)} | ${paired(f, n)} | ${paired(p, f)} | ${ratio(m(p, 'cpuUs'), m(f, 'cpuUs'))} |`,
      )
    }
    console.log('\n| row | Plinth/nginx (file by name) req/s | Plinth/nginx (file by name) p99 per repetition |')
    console.log('|---|---|---|')
    for (const row of rows) {
      const { plinth: p, 'nginx-file': e } = results[row.name]
      const m = (runs: Run[], key: keyof Run) => median(runs.map((r) => r[key]))
      console.log(`| ${row.name} | ${ratio(m(p, 'rps'), m(e, 'rps'))} | ${paired(p, e)} |`)
    }
    console.log(
      '\n| row | Plinth (beacon on)/nginx req/s | Plinth (beacon off)/nginx req/s | beacon on/off req/s | beacon on/off CPU per req | beacon on/off p99 per repetition |',
    )
    console.log('|---|---|---|---|---|---|')
    for (const row of rows) {
      const { plinth: p, nginx: n, 'no-beacon': q } = results[row.name]
      const m = (runs: Run[], key: keyof Run) => median(runs.map((r) => r[key]))
      console.log(
        `| ${row.name} | ${ratio(m(p, 'rps'), m(n, 'rps'))} | ${ratio(m(q, 'rps'), m(n, 'rps'))} | ${ratio(m(p, 'rps'), m(q, 'rps'))} | ${ratio(m(p, 'cpuUs'), m(q, 'cpuUs'))} | ${paired(p, q)} |`,
      )
    }
    console.log(
      '\n| row | Varnish in front of Plinth/nginx req/s | Varnish/nginx p99 | Varnish/nginx p99 per repetition | Varnish (and Plinth behind)/nginx CPU per req |',
    )
    console.log('|---|---|---|---|---|')
    for (const row of rows) {
      const { varnish: v, nginx: n } = results[row.name]
      const m = (runs: Run[], key: keyof Run) => median(runs.map((r) => r[key]))
      console.log(
        `| ${row.name} | ${ratio(m(v, 'rps'), m(n, 'rps'))} | ${ratio(m(v, 'p99ms'), m(n, 'p99ms'))} | ${paired(v, n)} | ${ratio(m(v, 'cpuUs'), m(n, 'cpuUs'))} |`,
      )
    }
    // No page view lost: what the API reports equals the pages Plinth served (its /metrics).
    let counted = 0
    for (const id of plinthSites) counted += (await plinthApi('GET', `/v1/websites/${id}/analytics?period=24h`)).totals.pageviews
    console.log(
      `\nPage views of the 2 KiB row (Plinth directly and through Varnish, warm-ups included): ${served.toLocaleString('en')} served (Plinth's /metrics), ${counted.toLocaleString('en')} counted (the analytics API)`,
    )
    if (counted !== served) throw new Error(`the beacon lost or invented page views: ${served} served, ${counted} counted`)
    if (rows.some((row) => 'views' in row) && served === 0)
      throw new Error('no page view was served: the page row timed something else than pages (a redirect answers 3xx)')

    // Every core: the one-core servers stop first (they would take CPU from these).
    for (const child of [plinth, quiet, nginx, floor, varnish]) child.kill('SIGTERM')
    await sleep(1000)
    if (!only?.length || only.some((o) => 'every core'.includes(o)))
      await measureCores({
        dir,
        labels: sites.map((site) => site.label),
        nginxRoot: root,
        browser: BROWSER,
        warmupS: WARMUP_S,
        durationS: DURATION_S,
        reps: REPS,
        children,
        startPlinth: async (port, data, env) => {
          const { child, ids, api } = await startPlinth(port, data, env, null)
          const metrics = async () =>
            (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text()
          return {
            child,
            served: async () => Number(/^plinth_http_responses_total\{door="hosting",class="2xx"\} (\d+)/m.exec(await metrics())?.[1] ?? 0),
            counted: async () => {
              let n = 0
              for (const id of ids) n += (await api('GET', `/v1/websites/${id}/analytics?period=24h`)).totals.pageviews
              return n
            },
          }
        },
      })
    // The site's own rules (issue 40): 2,000 exact redirects and 100 patterns against the same site without them.
    if (!only?.length || only.some((o) => 'rules'.includes(o))) await measureRules(DURATION_S, REPS)
  } finally {
    cleanup()
  }
}

/**
 * Asks every server for every target once, without following redirects, and throws unless each target
 * gets the same status and the same content (a gzip body decoded) from all of them.
 */
async function sameAnswers(
  row: string,
  servers: { name: string; port: number; targets: { host: string; path: string; headers: Record<string, string> }[] }[],
) {
  const { request } = await import('node:http')
  const answer = (port: number, target: { host: string; path: string; headers: Record<string, string> }) =>
    new Promise<string>((resolve, reject) => {
      request({ host: '127.0.0.1', port, path: target.path, headers: { host: target.host, ...target.headers } }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (chunk: Buffer) => chunks.push(chunk))
        res.on('end', () => {
          const body = Buffer.concat(chunks)
          const content = res.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body
          resolve(`${res.statusCode} ${createHash('sha256').update(content).digest('hex').slice(0, 16)}`)
        })
      })
        .on('error', reject)
        .end()
    })
  const first = servers[0]!
  for (let i = 0; i < first.targets.length; i++) {
    const said = await Promise.all(servers.map(async (s) => `${s.name} ${s.targets[i]!.path}: ${await answer(s.port, s.targets[i]!)}`))
    const answers = new Set(said.map((line) => line.slice(line.lastIndexOf(': ') + 2)))
    if (answers.size !== 1) throw new Error(`${row}: the servers answer ${first.targets[i]!.host} differently:\n  ${said.join('\n  ')}`)
    if (!/^(200|304) /.test([...answers][0]!)) throw new Error(`${row}: ${said[0]} is no page (a 200 or a 304)`)
  }
}

runBenchmark(main)
