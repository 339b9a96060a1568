import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { test, type TestContext } from 'node:test'
import { CONFIG_VARIABLES } from '../../core/config.js'
import { freePort, freshRequest, keyedCall } from '../helpers/http.js'
import { clusterNodeEnv, startClusterGround } from '../helpers/nats.js'
import { runCli, spawnPlinth, type RunningPlinth } from '../helpers/process.js'
import { tempDir } from '../helpers/server.js'
import { waitUntil } from '../helpers/wait.js'

/*
 * deploy/cluster/ as an operator uses it (issue 39): three nodes started from plinth.env's settings, and
 * HAProxy with haproxy.cfg in front, checking each node's /_platform/health. Site traffic goes to every
 * node; a node killed is taken out without a failed request; the API through the load balancer
 * reaches the primary from any node, and a new one after the primary dies.
 */

const KEY = 'wb_' + 'L'.repeat(43)
const DEPLOY = fileURLToPath(new URL('../../../deploy/cluster/', import.meta.url))

/** plinth.env's settings: every name one Plinth reads. */
function exampleEnv(): Record<string, string> {
  const env: Record<string, string> = {}
  for (const line of readFileSync(DEPLOY + 'plinth.env', 'utf8').split('\n')) {
    const match = /^([A-Z_]+)=(.*)$/.exec(line)
    if (match) env[match[1]!] = match[2]!
  }
  return env
}

interface ClusterNode {
  name: string
  run: RunningPlinth
}

async function startNode(t: TestContext, dir: string, name: string, ground: Record<string, string>): Promise<ClusterNode> {
  const port = await freePort()
  // The example's settings, with this machine's addresses in place of its 10.0.0.x and the test's files
  // in place of /etc/plinth's (the same kinds: the installation's secret, the NATS CA and user seed).
  const env: Record<string, string> = {
    ...exampleEnv(),
    ...clusterNodeEnv(
      { dir, name, port, ground, key: KEY, leaseMs: 1500, backups: `${dir}/backups` },
      {
        HOST: '127.0.0.1',
        PLINTH_SITE_DOMAIN: 'localhost',
        PLINTH_API_ORIGIN: 'http://localhost',
        PLINTH_TRUSTED_PROXIES: '127.0.0.1',
        PLINTH_METRICS_ALLOW: '127.0.0.1',
      },
    ),
  }
  return { name, run: await spawnPlinth(t, env) }
}

/** Site answers a node gave so far (its /metrics). */
async function siteAnswers(port: number): Promise<number> {
  const text = (await freshRequest(port, 'localhost', '/metrics')).body.toString()
  return Number(/^plinth_http_responses_total\{door="hosting",class="2xx"\} (\d+)$/m.exec(text)?.[1] ?? 0)
}

test('deploy/cluster: three nodes behind HAProxy with haproxy.cfg; site traffic reaches every node, a killed node is taken out without a failed request, and the API follows the primary', async (t) => {
  for (const name of Object.keys(exampleEnv()))
    assert.ok(
      CONFIG_VARIABLES.some((v) => v.name === name),
      `plinth.env sets ${name}, which Plinth does not read`,
    )
  const { dir, env } = await startClusterGround(t, 'plinth-deploy-')
  // The example sets each of what a node is given to reach NATS and sign with (TLS, its user, the secret).
  for (const name of Object.keys(env)) assert.ok(name in exampleEnv(), `plinth.env does not set ${name}`)
  const a = await startNode(t, dir, 'a', env)
  const b = await startNode(t, dir, 'b', env)
  const c = await startNode(t, dir, 'c', env)
  const health = JSON.parse((await freshRequest(b.run.port, 'localhost', '/_platform/health')).body.toString())
  assert.deepEqual(health, { status: 'ok', node: 'b', role: 'replica', primary: 'a', logFormat: 2 })

  const lb = await freePort()
  const haproxy = spawn('/usr/sbin/haproxy', ['-f', DEPLOY + 'haproxy.cfg', '-db'], {
    env: {
      PATH: process.env.PATH,
      PLINTH_LB_BIND: `127.0.0.1:${lb}`,
      PLINTH_NODE_A: `127.0.0.1:${a.run.port}`,
      PLINTH_NODE_B: `127.0.0.1:${b.run.port}`,
      PLINTH_NODE_C: `127.0.0.1:${c.run.port}`,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let haproxyLog = ''
  haproxy.stdout!.on('data', (chunk: Buffer) => (haproxyLog += chunk.toString()))
  haproxy.stderr!.on('data', (chunk: Buffer) => (haproxyLog += chunk.toString()))
  t.after(() => void haproxy.kill('SIGKILL'))
  const call = (method: string, path: string, body?: unknown) => keyedCall(lb, KEY, method, path, body)
  await waitUntil(
    async () => (await freshRequest(lb, 'localhost', '/_platform/health').catch(() => null))?.status === 200,
    `HAProxy to answer (${haproxyLog})`,
  )

  // The API through the load balancer, whichever node it reaches.
  const site = await call('POST', '/v1/websites', { name: 'Balanced', kind: 'static', subdomain: 'balanced' })
  assert.equal(site.status, 201, JSON.stringify(site.body))
  assert.equal(
    (await call('POST', `/v1/websites/${site.body.id}/deploy/json`, { files: [{ path: 'index.html', content: '<h1>one</h1>' }] })).status,
    201,
  )
  assert.equal((await call('POST', `/v1/websites/${site.body.id}/publish`)).status, 200)

  // Site traffic reaches every node.
  const before = await Promise.all([a, b, c].map((n) => siteAnswers(n.run.port)))
  for (let i = 0; i < 30; i++) assert.equal((await freshRequest(lb, 'balanced.localhost', '/')).body.toString(), '<h1>one</h1>')
  const after = await Promise.all([a, b, c].map((n) => siteAnswers(n.run.port)))
  after.forEach((n, i) => assert.ok(n - before[i]! >= 5, `node ${'abc'[i]} answered ${n - before[i]!} of 30 site requests`))

  // A replica killed: not one site request fails, before or after its checks take it out.
  c.run.child.kill('SIGKILL')
  const failed: string[] = []
  for (const until = Date.now() + 3000; Date.now() < until;) {
    const res = await freshRequest(lb, 'balanced.localhost', '/')
    if (res.status !== 200) failed.push(`${res.status} ${res.body.toString().slice(0, 100)}`)
  }
  assert.deepEqual(failed, [], `site requests while a replica died (${haproxyLog})`)

  // The primary killed: the site is served throughout; a write through the load balancer is a 503 with
  // Retry-After until b leads, then accepted.
  a.run.child.kill('SIGKILL')
  const killedAt = Date.now()
  const failedMeanwhile: string[] = []
  const written = await waitUntil(
    async () => {
      const page = await freshRequest(lb, 'balanced.localhost', '/')
      if (page.status !== 200) failedMeanwhile.push(`${page.status} ${page.body.toString().slice(0, 100)}`)
      const res = await call('POST', '/v1/websites', { name: 'After', kind: 'static', subdomain: 'after' })
      if (res.status !== 201)
        assert.ok(res.status === 503 && res.headers.get('retry-after') !== null, `${res.status} ${JSON.stringify(res.body)}`)
      return res.status === 201 ? Date.now() - killedAt : null
    },
    'a write accepted after the primary died',
    15_000,
    200,
  )
  assert.deepEqual(failedMeanwhile, [], 'site requests while the primary died')
  assert.ok(written < 10_000, `a write was accepted ${written} ms after the primary died`)
  t.diagnostic(`a write through HAProxy was accepted ${written} ms after the primary was killed`)
})

/** A form post through the balancer from the dashboard's origin (the cluster's PLINTH_API_ORIGIN); the session cookie it set. */
async function formPost(port: number, path: string, form: Record<string, string>): Promise<{ status: number; cookie: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: { host: `localhost:${port}`, origin: `http://localhost:${port}`, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(form),
    redirect: 'manual',
  })
  return { status: res.status, cookie: /^(plinth_session=[^;]*)/.exec(res.headers.get('set-cookie') ?? '')?.[1] ?? '' }
}

test("deploy/cluster/on-one-machine.sh as written: three nodes and HAProxy; the admin key of whichever node led first works through HAProxy, every URL names the balancer, a dashboard sign-in through it works; an operator's command reaches the primary from a replica and is refused on a stopped node", async (t) => {
  const dir = tempDir(t, 'plinth-try-')
  // Below the ephemeral range, so no port a test's freePort hands out meanwhile: HAProxy there, the nodes and NATS above.
  const base = 20_000 + 30 * Math.floor(Math.random() * 300)
  const script = spawn('sh', [DEPLOY + 'on-one-machine.sh'], {
    // The tests' lease (the script leaves the default's 5 s): the failover below comes sooner.
    env: { PATH: process.env.PATH, PLINTH_TRY_DIR: dir, PLINTH_TRY_PORT: String(base), PLINTH_CLUSTER_LEASE_MS: '1500' },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let said = ''
  script.stdout!.on('data', (chunk: Buffer) => (said += chunk.toString()))
  script.stderr!.on('data', (chunk: Buffer) => (said += chunk.toString()))
  const ended = new Promise<number | null>((resolve) => script.once('exit', resolve))
  t.after(async () => {
    script.kill('SIGTERM')
    await ended
  })
  await waitUntil(
    () => {
      if (script.exitCode !== null) throw new Error(`the script ended (${script.exitCode}): ${said}`)
      return said.includes('Ctrl-C stops the cluster.')
    },
    `the script to say the cluster is up (${said})`,
    90_000,
  )
  const leader = /node ([abc]) leads/.exec(said)?.[1]
  assert.ok(leader, said)
  // The node that made the installation showed the admin key once: the script says it, and keeps no copy.
  const key = /Admin API key \(shown once, store it now\): (wb_\S+)/.exec(said)?.[1]
  assert.ok(key, said)
  assert.match(said, /node [abc] made the installation/)
  for (const node of 'abc') assert.doesNotMatch(readFileSync(`${dir}/node-${node}.out`, 'utf8'), /wb_/)

  // Through the balancer, whichever node answers: the API with that key, and URLs naming the balancer.
  const call = (method: string, path: string, body?: unknown) => keyedCall(base, key, method, path, body)
  const site = await call('POST', '/v1/websites', { name: 'Tried', kind: 'static', subdomain: 'tried' })
  assert.equal(site.status, 201, JSON.stringify(site.body))
  assert.equal(site.body.urls.draft, `http://draft--tried.localhost:${base}`)
  // A dashboard sign-in through the balancer: the setup link's form, posted from the one origin.
  const token = /Owner setup link[^\n]*#token=(\S+)/.exec(said)?.[1]
  assert.ok(token, said)
  const setUp = await formPost(base, '/app/setup', { token, email: 'owner@example.com', name: 'Owner', password: 'owner-password-1' })
  assert.equal(setUp.status, 303)

  // An operator's command on a replica's machine, with the cluster's settings exported as the script does
  // and no node's own: the replica hands it to the primary. The person it made signs in through the balancer.
  const replica = 'abc'.replace(leader, '')[0]!
  const operatorEnv = {
    PLINTH_CLUSTER_NATS: `127.0.0.1:${base + 11},127.0.0.1:${base + 12},127.0.0.1:${base + 13}`,
    PLINTH_SECRET_FILE: `${dir}/installation.key`,
    PLINTH_API_ORIGIN: `http://localhost:${base}`,
  }
  const added = await runCli(
    ['user', 'add', '--email', 'ops@example.com', '--name', 'Ops'],
    { ...operatorEnv, PLINTH_DATA_DIR: `${dir}/node-${replica}` },
    'ops-password-1',
  )
  assert.equal(added.code, 0, added.stderr)
  assert.match(added.stdout, /Created usr_\w+ \(ops@example\.com\)/)
  assert.equal((await formPost(base, '/app/sign-in', { email: 'ops@example.com', password: 'ops-password-1' })).status, 303)

  // The primary killed: a write through the balancer is accepted again once another node leads; an
  // operator's command on the dead node's data directory is refused (it would write outside the log).
  process.kill(Number(readFileSync(`${dir}/node-${leader}.pid`, 'utf8')), 'SIGKILL')
  // Until HAProxy's check marks the dead node down, a connection it hands there is cut (fetch failed): not yet.
  await waitUntil(
    async () =>
      (await call('POST', '/v1/websites', { name: 'After', kind: 'static', subdomain: 'after' }).catch(() => null))?.status === 201,
    'a write accepted after the primary died',
    30_000,
    250,
  )
  const refused = await runCli(
    ['user', 'add', '--email', 'late@example.com'],
    { ...operatorEnv, PLINTH_DATA_DIR: `${dir}/node-${leader}` },
    'late-password-1',
  )
  assert.equal(refused.code, 1)
  assert.match(refused.stderr, /This data directory is a cluster node's, and the node is not running[^\n]*Nothing was changed/)

  // Ctrl-C (SIGTERM here) stops everything it started.
  const pids = [...'abc'].map((node) => Number(readFileSync(`${dir}/node-${node}.pid`, 'utf8')))
  script.kill('SIGTERM')
  assert.equal(await ended, 0)
  const alive = (pid: number) => {
    try {
      process.kill(pid, 0)
      return true
    } catch {
      return false
    }
  }
  await waitUntil(() => !pids.some(alive), 'every node to stop', 30_000)
})
