/**
 * npm run bench:cluster — several nodes on NATS JetStream (issue 39), ratios in one run.
 *
 * Three nats-servers (Debian's, JetStream, clustered on loopback) and three Plinth nodes, each with one
 * serving thread besides its main thread. Rows:
 * - Write overhead: a deploy of 100 files and its publish (bench:api's row), p50 and p99, on the
 *   embedded server against the cluster's primary alone (the log's own cost: three nats-servers
 *   acknowledge each append) and then with two replicas (a publish answers once both apply it).
 * - Replica lag: a publish sent to the primary until a replica serves the new version (a replica polled
 *   on fresh connections), p50 and p99.
 * - Catch-up: a replica stopped while BENCH_CATCH_UP (default 3,000) entries are written, started again
 *   while writes go on: entries a second from its own "caught up with the log" line.
 * - Failover, BENCH_KILLS times (default 20): the primary SIGKILLed during mixed writes (websites made,
 *   deploys, publishes, keys made, through every live node); the time to the first write accepted by
 *   the new primary, median and worst; site requests failed on the replicas meanwhile; the killed node
 *   started again (it rejoins, from the backup when it holds a write the log never took). At the end,
 *   every acknowledged write is looked for on the primary: one missing fails the run.
 * - Serving: requests per second through HAProxy (deploy/cluster/haproxy.cfg) to three nodes against
 *   the same HAProxy sending everything to one node, wrk -t1 -c50 for BENCH_DURATION_S (default 10) s,
 *   everything on this machine's cores (its two cores bound the ratio: three nodes share them).
 * BENCH_PIN=1 runs the write rows only, the embedded server and the primary on core 0 and everything
 * else on core 1: the replicas' work off the primary's core, as on separate machines.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { cpus, tmpdir } from 'node:os'
import { appendFileSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { Agent, request } from 'node:http'
import { connect } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { percentile, runBenchmark } from './main.js'
import { luaScript, need, page, sleep, waitForPort, wrk } from './serve-tools.js'
import { prepareExampleNats } from '../test/helpers/nats.js'

const ENTRY = fileURLToPath(new URL('../bin/plinth.js', import.meta.url))
const HAPROXY_CFG = fileURLToPath(new URL('../../deploy/cluster/haproxy.cfg', import.meta.url))
const ADMIN = 'wb_' + 'K'.repeat(43)
const BASE = 18600
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 30)
const KILLS = Number(process.env.BENCH_KILLS ?? 20)
const DURATION_S = Number(process.env.BENCH_DURATION_S ?? 10)
const LEASE_MS = Number(process.env.BENCH_LEASE_MS ?? 1500)
const CATCH_UP = Number(process.env.BENCH_CATCH_UP ?? 3000)

interface Node {
  name: string
  port: number
  env: Record<string, string>
  child: ChildProcess
}

const children = new Set<ChildProcess>()
const keepAlive = new Agent({ keepAlive: true })

/**
 * BENCH_PIN=1: the embedded server and the first primary on core 0, the nats-servers, the replicas and
 * this process on core 1 (taskset), as if the replicas were other machines; only the write rows run.
 */
const PIN = process.env.BENCH_PIN === '1'

function launch(command: string, args: string[], env: Record<string, string>, cpu?: '0' | '1'): ChildProcess {
  const [run, runArgs] = PIN && cpu !== undefined ? ['taskset', ['-c', cpu, command, ...args]] : [command, args]
  const child = spawn(run, runArgs, { env: { PATH: process.env.PATH!, ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  children.add(child)
  child.on('exit', () => children.delete(child))
  return child
}

/** `plinth start` with `env`, resolved once it listens (rejected with its output if it exits first). */
function startPlinth(env: Record<string, string>, cpu?: '0' | '1'): Promise<ChildProcess> {
  const child = launch(
    process.execPath,
    ['--no-node-snapshot', '--max-semi-space-size=32', ENTRY, 'start'],
    { HOST: '127.0.0.1', ...env },
    cpu,
  )
  let out = ''
  // Each node's output beside its data directory (kept when the run fails).
  const log = `${env.PLINTH_DATA_DIR}.log`
  child.stdout!.on('data', (c: Buffer) => ((out += c), appendFileSync(log, c)))
  child.stderr!.on('data', (c: Buffer) => ((out += c), appendFileSync(log, c)))
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', () => out.includes('Plinth listening') && resolve(child))
    child.once('exit', (code) => reject(new Error(`plinth exited with ${code}: ${out.slice(-2000)}`)))
  })
}

function tcpOpen(port: number): Promise<boolean> {
  return new Promise<boolean>((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => (socket.destroy(), resolve(true)))
    socket.once('error', () => resolve(false))
  })
}

/** Waits until something accepts connections on the port (not necessarily HTTP: a nats-server). */
async function waitForTcp(port: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if (await tcpOpen(port)) return
    await sleep(100)
  }
  throw new Error(`nothing listens on ${port}`)
}

/** Three nats-servers from deploy/cluster's configuration as written (TLS on clients and routes, Plinth's user and its permissions). */
async function startNats(dir: string): Promise<Record<string, string>> {
  const example = prepareExampleNats(join(dir, 'nats'), 3, '127.0.0.1')
  const ports = [0, 1, 2].map((i) => ({ client: BASE + i, route: BASE + 3 + i, monitor: BASE + 6 + i }))
  for (let i = 0; i < 3; i++) launch('nats-server', ['-c', example.conf], example.envOf(i, ports), '1')
  for (let i = 0; i < 3; i++) await waitForTcp(BASE + i)
  const secret = join(dir, 'installation.key')
  writeFileSync(secret, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600 })
  return {
    PLINTH_CLUSTER_NATS: ports.map((p) => `tls://127.0.0.1:${p.client}`).join(','),
    PLINTH_CLUSTER_NATS_CREDS: example.credentials,
    PLINTH_CLUSTER_NATS_CA: example.ca,
    PLINTH_SECRET_FILE: secret,
    // Every node serves the API at one origin (the bench calls each node's address, which the API answers too).
    PLINTH_API_ORIGIN: 'http://localhost',
  }
}

async function startNode(dir: string, name: string, port: number, nats: Record<string, string>, backups: string): Promise<Node> {
  const env = {
    PORT: String(port),
    PLINTH_DATA_DIR: join(dir, name),
    PLINTH_ADMIN_KEY: ADMIN,
    PLINTH_SERVE_THREADS: '2',
    ...nats,
    PLINTH_NODE_NAME: name,
    PLINTH_NODE_URL: `http://127.0.0.1:${port}`,
    PLINTH_CLUSTER_LEASE_MS: String(LEASE_MS),
    PLINTH_CLUSTER_BACKUPS: backups,
    PLINTH_TRUSTED_PROXIES: '127.0.0.1',
    PLINTH_METRICS_ALLOW: '127.0.0.1',
  }
  return { name, port, env, child: await startPlinth(env, name === 'a' ? '0' : '1') }
}

/** Starts a node again under its settings (as a supervisor would), once its name is free. */
async function restart(node: Node): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    try {
      node.child = await startPlinth(node.env)
      return
    } catch (error) {
      if (attempt > 20 || !/another node named/.test(String(error))) throw error
      await sleep(250)
    }
  }
}

async function api(port: number, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', host: 'localhost' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text === '' ? null : JSON.parse(text) }
  } catch (error) {
    return { status: 0, body: String(error) }
  }
}

async function ok(port: number, key: string, method: string, path: string, body?: unknown): Promise<any> {
  const res = await api(port, key, method, path, body)
  if (res.status < 200 || res.status > 299) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body
}

/** A site's page on a node (node:http: fetch cannot set Host). */
function site(port: number, host: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { host }, agent: keepAlive }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => (text += chunk))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }))
    })
    req.on('error', () => resolve({ status: 0, text: '' }))
    req.end()
  })
}

/** A node's role and the primary it knows (its health check), and how far it applied the log (its /metrics: the position is not public). */
async function health(port: number): Promise<{ role: string; position: number; primary: string | null } | null> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/_platform/health`, { headers: { host: 'localhost' } })
    if (res.status !== 200) return null
    const said = (await res.json()) as { role: string; primary: string | null }
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { host: 'localhost' } })).text()
    const position = /^plinth_cluster_log_position\{node="[^"]+"\} (\d+)$/m.exec(metrics)
    return position === null ? null : { ...said, position: Number(position[1]) }
  } catch {
    return null
  }
}

/** Keys for the expensive class (20 a key, then 30 a minute): a new one every 18 calls. */
async function keyRing(port: number, count: number): Promise<() => string> {
  const keys: string[] = []
  for (let i = 0; i < count; i++)
    keys.push(
      (await ok(port, ADMIN, 'POST', '/v1/api-keys', { name: `bench ${i}`, access: { kind: 'organization', role: 'admin' } })).secret,
    )
  let used = 0
  return () => keys[Math.floor(used++ / 18) % keys.length]!
}

/** A deploy's 100 files, new bytes for each row and round (the same bytes again would be stored once, and cost less). */
const files = (label: string, round: number) =>
  Array.from({ length: 100 }, (_, i) => ({
    path: `pages/p${i}.html`,
    content: `<!doctype html><title>${label} ${round}-${i}</title>${'<p>bench content</p>'.repeat(100)}`,
  }))

/** bench:api's row: a deploy of 100 files and its publish, ROUNDS times; milliseconds each. */
async function deployPublish(port: number, key: () => string, label: string): Promise<number[]> {
  const w = await ok(port, ADMIN, 'POST', '/v1/websites', { name: label, kind: 'static', subdomain: label })
  const times: number[] = []
  for (let round = 0; round < ROUNDS; round++) {
    const t0 = performance.now()
    await ok(port, key(), 'POST', `/v1/websites/${w.id}/deploy/json`, { files: files(label, round) })
    await ok(port, key(), 'POST', `/v1/websites/${w.id}/publish`)
    times.push(performance.now() - t0)
  }
  return times
}

/** Progress on stderr (the results go to stdout). */
const say = (what: string) => console.error(`[bench:cluster ${new Date().toISOString().slice(11, 19)}] ${what}`)

/** Every item of a list, page by page (waiting out the rate limit). */
async function everything(port: number, path: string): Promise<any[]> {
  const items: any[] = []
  for (let cursor: string | null = ''; cursor !== null;) {
    const res = await api(port, ADMIN, 'GET', `${path}?limit=100${cursor ? `&cursor=${cursor}` : ''}`)
    if (res.status === 429) {
      await sleep(1000)
      continue
    }
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status} ${JSON.stringify(res.body)}`)
    items.push(...res.body.items)
    cursor = res.body.nextCursor ?? null
  }
  return items
}

const fmt = (xs: number[]) => `${percentile(xs, 50).toFixed(1)} | ${percentile(xs, 99).toFixed(1)}`

async function main(): Promise<void> {
  need('nats-server', 'apt-get install -y nats-server')
  need('haproxy', 'apt-get install -y haproxy')
  need('wrk', 'apt-get install -y wrk')
  for (const port of [BASE, BASE + 1, BASE + 2, BASE + 10, BASE + 20, BASE + 21, BASE + 22, BASE + 30])
    if (await tcpOpen(port))
      throw new Error(`port ${port} is taken (a benchmark left running?): bench:cluster uses ${BASE} to ${BASE + 30}`)
  const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-cluster-'))
  const backups = join(dir, 'backups')
  mkdirSync(backups)
  let finished = false
  try {
    // 1. The embedded server.
    say('the embedded server: deploy and publish')
    if (PIN) execFileSync('taskset', ['-a', '-p', '-c', '1', String(process.pid)], { stdio: 'ignore' })
    const embedded = await startPlinth({ PORT: String(BASE + 10), PLINTH_DATA_DIR: join(dir, 'embedded'), PLINTH_ADMIN_KEY: ADMIN }, '0')
    const single = await deployPublish(BASE + 10, await keyRing(BASE + 10, Math.ceil((ROUNDS * 2) / 18) + 1), 'single')
    embedded.kill('SIGTERM')
    await new Promise((resolve) => embedded.once('exit', resolve))

    // 2. The cluster: a leads, b and c follow.
    say('three nats-servers and three nodes')
    const nats = await startNats(dir)
    const nodes: Node[] = [await startNode(dir, 'a', BASE + 20, nats, backups)]
    const key = await keyRing(nodes[0]!.port, Math.ceil((ROUNDS * 6 + KILLS * 20) / 18) + 4)
    // The primary alone first (its appends acknowledged by the three nats-servers, no replica to wait
    // for): the log's own cost, apart from two replicas applying each entry on the same two cores.
    say('the primary alone: deploy and publish')
    const alone = await deployPublish(nodes[0]!.port, key, 'alone')
    for (const [i, name] of ['b', 'c'].entries()) nodes.push(await startNode(dir, name, BASE + 21 + i, nats, backups))
    const [a, b] = nodes as [Node, Node, Node]
    say('the cluster: deploy and publish')
    const clustered = await deployPublish(a.port, key, 'clustered')
    const ratio = (of: number[], p: number) => (percentile(of, p) / percentile(single, p)).toFixed(2)
    if (PIN) {
      console.log(`\n## bench:cluster, BENCH_PIN=1 (embedded server and primary on core 0; NATS, replicas and the client on core 1)\n`)
      console.log('| row | p50 ms | p99 ms |\n| --- | ---: | ---: |')
      console.log(`| deploy 100 files + publish, embedded server | ${fmt(single)} |`)
      console.log(`| deploy 100 files + publish, cluster primary alone (no replica) | ${fmt(alone)} |`)
      console.log(`| deploy 100 files + publish, cluster primary (2 replicas) | ${fmt(clustered)} |`)
      console.log(
        `\nwrite overhead (cluster / embedded): p50 ${ratio(clustered, 50)}×, p99 ${ratio(clustered, 99)}×; the log alone p50 ${ratio(alone, 50)}×, p99 ${ratio(alone, 99)}×`,
      )
      finished = true
      return
    }
    say('replica lag')

    // Replica lag: a publish sent to a, until b serves it.
    const lagSite = await ok(a.port, ADMIN, 'POST', '/v1/websites', { name: 'lag', kind: 'static', subdomain: 'lag' })
    const lags: number[] = []
    for (let round = 0; round < ROUNDS; round++) {
      await ok(a.port, key(), 'POST', `/v1/websites/${lagSite.id}/deploy/json`, {
        files: [{ path: 'index.html', content: `lag ${round}` }],
      })
      const t0 = performance.now()
      const published = ok(a.port, key(), 'POST', `/v1/websites/${lagSite.id}/publish`)
      while ((await site(b.port, 'lag.localhost')).text !== `lag ${round}`);
      lags.push(performance.now() - t0)
      await published
    }

    // Catch-up: c stopped while CATCH_UP entries are written, then started again while writes go on; its
    // own log line says how many entries it read and applied before it served, and how fast.
    say(`catch-up of ${CATCH_UP} entries`)
    const c = nodes[2]!
    c.child.kill('SIGTERM')
    await new Promise((resolve) => c.child.once('exit', resolve))
    // Keys of their own (each takes a burst of 120 writes): the rate limits are not what is measured.
    const catchKeys: string[] = []
    for (let i = 0; i < Math.ceil(CATCH_UP / 100) + 4; i++)
      catchKeys.push(
        (await ok(a.port, ADMIN, 'POST', '/v1/api-keys', { name: `catch-up ${i}`, access: { kind: 'organization', role: 'admin' } }))
          .secret,
      )
    const catchSite = await ok(a.port, ADMIN, 'POST', '/v1/websites', { name: 'catch-up', kind: 'static', subdomain: 'catch-up' })
    let written = 0
    const writeOne = async () => {
      const n = written++
      await ok(a.port, catchKeys[Math.floor(n / 100) % catchKeys.length]!, 'PATCH', `/v1/websites/${catchSite.id}`, {
        description: `entry ${n}`,
      })
    }
    await Promise.all(
      [1, 2, 3, 4].map(async () => {
        while (written < CATCH_UP) await writeOne()
      }),
    )
    let loading = true
    const load = (async () => {
      while (loading) await writeOne()
    })()
    await restart(c)
    loading = false
    await load
    const caughtUp = [
      ...readFileSync(`${c.env.PLINTH_DATA_DIR}.log`, 'utf8').matchAll(
        /caught up with the log \{"entries":(\d+),"seconds":([\d.]+),"perSecond":(\d+)\}/g,
      ),
    ].at(-1)
    if (caughtUp === undefined) throw new Error('the restarted node logged no catch-up')

    // 3. Failovers under mixed writes.
    say(`${KILLS} failovers under writes`)
    execFileSync(process.execPath, ['--no-node-snapshot', ENTRY, 'backup', backups], {
      env: { PATH: process.env.PATH!, PLINTH_DATA_DIR: b.env.PLINTH_DATA_DIR!, PLINTH_SECRET_FILE: b.env.PLINTH_SECRET_FILE! },
      stdio: 'ignore',
    })
    const shared = await ok(a.port, ADMIN, 'POST', '/v1/websites', { name: 'shared', kind: 'static', subdomain: 'shared' })
    await ok(a.port, key(), 'POST', `/v1/websites/${shared.id}/deploy/json`, {
      files: [{ path: 'index.html', content: page(2048, 'shared') }],
    })
    await ok(a.port, key(), 'POST', `/v1/websites/${shared.id}/publish`)
    const acked = {
      websites: [] as string[],
      versions: [] as [string, number][],
      keys: [] as string[],
      published: new Map<string, number>(),
    }
    let refused = 0
    let writing = true
    let lastAck = 0
    const live = () => nodes.filter((n) => n.child.exitCode === null && n.child.signalCode === null)
    const writer = async (lane: number) => {
      let mine: string | null = null
      for (let n = 0; writing; n++) {
        const node = live()[n % live().length]!
        let res: { status: number; body: any }
        if (mine === null || n % 4 === 0) {
          res = await api(node.port, ADMIN, 'POST', '/v1/websites', { name: `w${lane}-${n}`, kind: 'static', subdomain: `w${lane}-${n}` })
          if (res.status === 201) acked.websites.push((mine = res.body.id))
        } else if (n % 4 === 1) {
          res = await api(node.port, key(), 'POST', `/v1/websites/${mine}/deploy/json`, {
            files: [{ path: 'index.html', content: `${lane}-${n}` }],
          })
          if (res.status === 201) acked.versions.push([mine, res.body.version])
        } else if (n % 4 === 2) {
          res = await api(node.port, key(), 'POST', `/v1/websites/${mine}/publish`)
          if (res.status === 200) acked.published.set(mine!, res.body.website.publishedVersion)
        } else {
          res = await api(node.port, ADMIN, 'POST', '/v1/api-keys', {
            name: `k${lane}-${n}`,
            access: { kind: 'organization', role: 'content_editor' },
          })
          if (res.status === 201) acked.keys.push(res.body.id)
        }
        if (res.status >= 200 && res.status < 300) lastAck = performance.now()
        // Refused while the cluster fails over (503), a node just killed (no answer), the rate limit, and a
        // publish of a website whose deploy was refused (its head is empty): each is counted or tried again.
        else if (res.status === 503 || res.status === 0) refused++
        else if (res.status !== 429 && !(n % 4 === 2 && (res.status === 400 || res.status === 409)))
          throw new Error(`a write answered ${res.status}: ${JSON.stringify(res.body)}`)
        await sleep(20)
      }
    }
    // A writer that meets an answer it does not expect stops the run (after the kills, below).
    let broken: unknown = null
    const writers = [writer(1), writer(2)].map((w) => w.catch((error: unknown) => void (broken ??= error)))
    const failovers: number[] = []
    let siteFailures = 0
    let siteRequests = 0
    for (let kill = 0; kill < KILLS && broken === null; kill++) {
      const primary = nodes.find((n) => n.child.exitCode === null && n.child.signalCode === null && n.name === nodesLeader)!
      await sleep(1000)
      primary.child.kill('SIGKILL')
      const t0 = performance.now()
      const replicas = nodes.filter((n) => n !== primary)
      while (lastAck < t0 || performance.now() - t0 < 200) {
        for (const r of replicas) {
          siteRequests++
          if ((await site(r.port, 'shared.localhost')).status !== 200) siteFailures++
        }
        if (broken !== null) throw broken
        if (performance.now() - t0 > 30_000) throw new Error('no write accepted within 30 s of the kill')
      }
      failovers.push(lastAck - t0)
      say(`kill ${kill + 1}: ${primary.name} killed, a write accepted ${(lastAck - t0).toFixed(0)} ms later`)
      // The killed node comes back (restored from the backup if it holds a write the log never took).
      if (primary.child.exitCode === null && primary.child.signalCode === null)
        await new Promise((resolve) => primary.child.once('exit', resolve))
      await restart(primary)
      for (;;) {
        const states = await Promise.all(nodes.map((n) => health(n.port)))
        const lead = states.find((s) => s?.role === 'primary')
        if (lead !== undefined && states.every((s) => s !== null && s.position >= lead!.position - 2)) {
          nodesLeader = nodes[states.indexOf(lead)]!.name
          break
        }
        await sleep(100)
      }
    }
    writing = false
    await Promise.all(writers)
    if (broken !== null) throw broken
    // Every acknowledged write, on the primary.
    const lead = nodes.find((n) => n.name === nodesLeader)!
    let lost = 0
    const state = new Map<string, { headVersion: number; publishedVersion: number | null }>()
    for (const website of await everything(lead.port, '/v1/websites')) state.set(website.id, website)
    for (const id of acked.websites) if (!state.has(id)) lost++
    // Versions only grow: a head at or past a deploy's version holds it; a published version at or past a publish's.
    for (const [id, version] of acked.versions) if ((state.get(id)?.headVersion ?? 0) < version) lost++
    for (const [id, version] of acked.published) if ((state.get(id)?.publishedVersion ?? 0) < version) lost++
    const keysNow = new Set((await everything(lead.port, '/v1/api-keys')).map((k) => k.id as string))
    for (const id of acked.keys) if (!keysNow.has(id)) lost++
    const writes = acked.websites.length + acked.versions.length + acked.keys.length + acked.published.size

    // 4. Serving through HAProxy: three nodes, then one.
    say('serving through HAProxy')
    const lua = luaScript(dir, 'shared', [{ host: 'shared.localhost', path: '/', headers: {} }])
    const serve = async (backends: Node[]): Promise<number> => {
      const lb = launch('haproxy', ['-f', HAPROXY_CFG, '-db'], {
        PLINTH_LB_BIND: `127.0.0.1:${BASE + 30}`,
        PLINTH_NODE_A: `127.0.0.1:${backends[0]!.port}`,
        PLINTH_NODE_B: `127.0.0.1:${backends[1 % backends.length]!.port}`,
        PLINTH_NODE_C: `127.0.0.1:${backends[2 % backends.length]!.port}`,
      })
      await waitForPort(BASE + 30)
      await wrk(BASE + 30, lua, 2, [], { cpus: null, threads: 1, connections: 50 })
      const run = await wrk(BASE + 30, lua, DURATION_S, [], { cpus: null, threads: 1, connections: 50 })
      lb.kill('SIGTERM')
      await new Promise((resolve) => lb.once('exit', resolve))
      return run.rps
    }
    const three = await serve(nodes)
    const one = await serve([lead])

    console.log(`\n## bench:cluster — ${new Date().toISOString().slice(0, 10)}, ${cpus().length} × ${cpus()[0]?.model.trim()}\n`)
    console.log('| row | p50 ms | p99 ms |')
    console.log('| --- | ---: | ---: |')
    console.log(`| deploy 100 files + publish, embedded server | ${fmt(single)} |`)
    console.log(`| deploy 100 files + publish, cluster primary alone (no replica) | ${fmt(alone)} |`)
    console.log(`| deploy 100 files + publish, cluster primary (2 replicas) | ${fmt(clustered)} |`)
    console.log(`| replica lag: publish sent → served by a replica | ${fmt(lags)} |`)
    console.log(
      `\ncatch-up of a node stopped while ${CATCH_UP} entries were written, started again under writes: ${caughtUp[1]} entries in ${caughtUp[2]} s, ${caughtUp[3]} entries/s`,
    )
    console.log(`\nwrite overhead (cluster / embedded): p50 ${ratio(clustered, 50)}×, p99 ${ratio(clustered, 99)}×`)
    console.log(`write overhead of the log alone (primary without replicas / embedded): p50 ${ratio(alone, 50)}×, p99 ${ratio(alone, 99)}×`)
    console.log(
      `failover over ${failovers.length} kills of the primary (lease ${LEASE_MS} ms): median ${percentile(failovers, 50).toFixed(0)} ms, worst ${Math.max(...failovers).toFixed(0)} ms to the first write accepted`,
    )
    console.log(
      `during the failovers: ${writes} writes acknowledged, ${lost} lost; ${refused} refused with 503; ${siteFailures} of ${siteRequests} site requests to the replicas failed`,
    )
    console.log(
      `serving through HAProxy: 3 nodes ${three.toFixed(0)} req/s, 1 node ${one.toFixed(0)} req/s, ratio ${(three / one).toFixed(2)}× (every process on these ${cpus().length} cores)`,
    )
    if (lost > 0) throw new Error(`${lost} acknowledged writes were lost`)
    finished = true
  } finally {
    for (const child of children) child.kill('SIGKILL')
    await sleep(300)
    if (finished) rmSync(dir, { recursive: true, force: true })
    else console.error(`the nodes' logs and data are kept in ${dir}`)
  }
}

let nodesLeader = 'a'

runBenchmark(main)
