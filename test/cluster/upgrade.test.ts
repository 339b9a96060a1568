import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { copyFileSync } from 'node:fs'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { freePort, freshRequest, keyedCall } from '../helpers/http.js'
import { clusterNodeEnv, startClusterGround } from '../helpers/nats.js'
import { runCli, runFailingStart, spawnPlinth, type RunningPlinth } from '../helpers/process.js'
import { shareFiles, ticketDeployLarge } from '../helpers/ticket.js'
import { API_POLL_MS, waitUntil } from '../helpers/wait.js'

/*
 * Moving in and upgrading (issue 53, part 3): an embedded installation seeds a new cluster's log
 * (`plinth cluster init`), and a cluster is upgraded one node at a time across a change of the log's
 * format (PLINTH_TEST_LOG_FORMAT=3 runs a node as the next build: entries in the next format, and a
 * schema migration to run once).
 */

const KEY = 'wb_' + 'U'.repeat(43)
const NEXT = { PLINTH_TEST_LOG_FORMAT: '3' }

const call = (port: number, method: string, path: string, body?: unknown) => keyedCall(port, KEY, method, path, body)

async function page(port: number, host: string, path = '/'): Promise<string> {
  const res = await freshRequest(port, host, path)
  return `${res.status} ${res.body.toString()}`
}

async function health(port: number): Promise<{ role: string; primary: string | null; logFormat: number }> {
  return JSON.parse((await freshRequest(port, 'localhost', '/_platform/health')).body.toString())
}

/** A dashboard form post from the cluster's origin; the session cookie it sets, if any. */
async function signIn(port: number, email: string, password: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/app/sign-in`, {
    method: 'POST',
    headers: { host: `localhost:${port}`, origin: 'http://localhost', 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ email, password }),
    redirect: 'manual',
  })
  return res.status
}

async function publish(port: number, websiteId: string, html: string): Promise<void> {
  const deployed = await call(port, 'POST', `/v1/websites/${websiteId}/deploy/json`, { files: [{ path: 'index.html', content: html }] })
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body))
  const published = await call(port, 'POST', `/v1/websites/${websiteId}/publish`)
  assert.equal(published.status, 200, JSON.stringify(published.body))
}

/** A node's exit, within `ms` (a node that goes on running fails the test here, naming it). */
function exitOf(node: RunningPlinth, ms = 15_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  return Promise.race([
    node.exited,
    new Promise<never>((_, reject) =>
      setTimeout(() => reject(new Error(`still running after ${ms} ms: ${node.stderr().slice(-2000)}`)), ms).unref(),
    ),
  ])
}

async function stopped(node: RunningPlinth): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  node.child.kill('SIGTERM')
  return exitOf(node)
}

test('plinth cluster init: a stopped embedded installation seeds a new cluster; a node on an empty data directory replays it and serves its sites and files byte for byte, and its people sign in there', async (t) => {
  const ground = await startClusterGround(t, 'plinth-init-')
  const { dir } = ground
  const data = join(dir, 'a')
  const embedded = await spawnPlinth(t, { PLINTH_DATA_DIR: data, PLINTH_ADMIN_KEY: KEY, PLINTH_API_ORIGIN: 'http://localhost', PORT: '0' })
  const site = (await call(embedded.port, 'POST', '/v1/websites', { name: 'Kept', kind: 'static', subdomain: 'kept' })).body
  await publish(embedded.port, site.id, '<h1>kept</h1>')
  const big = randomBytes((1 << 20) + 777)
  const large = (await call(embedded.port, 'POST', '/v1/websites', { name: 'Large', kind: 'static', subdomain: 'large' })).body
  await ticketDeployLarge(embedded.port, KEY, large.id, '<p>large</p>', big)
  assert.equal((await call(embedded.port, 'POST', `/v1/websites/${large.id}/publish`)).status, 200)
  const storage = (await call(embedded.port, 'POST', '/v1/websites', { name: 'Files', kind: 'storage', subdomain: 'files' })).body
  const shared = randomBytes(300_000)
  const [file] = await shareFiles(embedded.port, KEY, storage.id, [{ name: 'report.bin', bytes: shared }])
  const link = new URL(file!.url)
  const person = await runCli(['user', 'add', '--email', 'pat@example.com', '--name', 'Pat'], { PLINTH_DATA_DIR: data }, 'pat-password-1')
  assert.equal(person.code, 0, person.stderr)

  const node = (name: string, port: number, secret: string) =>
    clusterNodeEnv({ dir, name, port, ground: { ...ground.env, PLINTH_SECRET_FILE: secret }, key: KEY, leaseMs: 1500 })
  const port = await freePort()
  // The server must be stopped: the data directory is its.
  const busy = await runCli(['cluster', 'init'], node('a', port, ground.env.PLINTH_SECRET_FILE!))
  assert.notEqual(busy.code, 0)
  assert.match(busy.stderr, /another Plinth process \(pid \d+\) is using [^\n]*; stop it first/)
  assert.deepEqual(await stopped(embedded), { code: 0, signal: null })
  // Another secret than the installation's would make everything it signed stop verifying.
  const other = await runCli(['cluster', 'init'], node('a', port, ground.env.PLINTH_SECRET_FILE!))
  assert.equal(other.code, 2, other.stderr)
  assert.match(other.stderr, /holds another secret than [^\n]*installation\.key, the one this installation was made with/)
  const secret = join(dir, 'cluster.key')
  copyFileSync(join(data, 'installation.key'), secret)
  const init = await runCli(['cluster', 'init'], node('a', port, secret))
  assert.equal(init.code, 0, init.stderr)
  assert.match(
    init.stdout,
    /Seeded the cluster's log from [^\n]*: \d+ records \(\d+ KiB\) in \d+ entries, 2 blob files; this data directory is node a's, at entry \d+/,
  )
  const again = await runCli(['cluster', 'init'], node('a', port, secret))
  assert.equal(again.code, 2, again.stderr)
  assert.match(again.stderr, /this data directory is a cluster node's already/)

  const a = await spawnPlinth(t, node('a', port, secret))
  assert.match(a.stdout(), /cluster node a: the primary/)
  const b = await spawnPlinth(t, node('b', await freePort(), secret))
  assert.match(b.stdout(), /cluster node b: a replica/)
  // b replayed the seeded log: the sites, the large file and the shared file, byte for byte.
  assert.equal(await page(b.port, 'kept.localhost'), '200 <h1>kept</h1>')
  assert.ok((await freshRequest(b.port, 'large.localhost', '/media/big.bin')).body.equals(big), 'the large file byte for byte')
  assert.ok((await freshRequest(b.port, link.hostname, link.pathname)).body.equals(shared), 'the shared file byte for byte')
  // A write of the cluster reaches b as every write does.
  await publish(a.port, site.id, '<h1>kept, then clustered</h1>')
  assert.equal(await page(b.port, 'kept.localhost'), '200 <h1>kept, then clustered</h1>')
  // With a gone, b leads on what it replayed: the admin key and the person made on the embedded server work there.
  assert.deepEqual(await stopped(a), { code: 0, signal: null })
  await waitUntil(async () => (await health(b.port)).role === 'primary', 'b to lead', 10_000, API_POLL_MS)
  assert.equal((await call(b.port, 'GET', `/v1/websites/${site.id}`)).status, 200)
  assert.equal(await signIn(b.port, 'pat@example.com', 'pat-password-1'), 303)
  assert.equal(await signIn(b.port, 'pat@example.com', 'not-the-password'), 401)
})

/**
 * Asks each node in `serving` for a site's page over and over until stopped; an answer counts as a
 * failure only if its node was still serving when it came (a node is taken out before it is stopped).
 */
function watchServing(t: TestContext, serving: Map<string, number>, host: string, body: string) {
  const failures: string[] = []
  let answers = 0
  let running = true
  t.after(() => (running = false))
  const loop = (async () => {
    while (running)
      for (const [name, port] of [...serving]) {
        const got = await page(port, host).catch((error: Error) => error.message)
        if (got === `200 ${body}`) answers++
        else if (serving.get(name) === port) failures.push(`${name}: ${got}`)
      }
  })()
  return {
    stop: async () => {
      running = false
      await loop
      return { answers, failures }
    },
  }
}

test('a rolling upgrade across a log format change: upgraded replicas apply the old primary entries, the first upgraded primary runs the migration once, an old replica meeting a new entry stops with exit 78 and applies none of it, an old node is refused at start until upgraded; sites served throughout', async (t) => {
  const ground = await startClusterGround(t, 'plinth-upgrade-')
  const { dir } = ground
  const ports = { a: await freePort(), b: await freePort(), c: await freePort() }
  const start = (name: 'a' | 'b' | 'c', extra: Record<string, string> = {}) =>
    spawnPlinth(t, clusterNodeEnv({ dir, name, port: ports[name], ground: ground.env, key: KEY, leaseMs: 1500 }, extra))
  let a = await start('a')
  let b = await start('b')
  let c = await start('c')
  assert.equal((await health(a.port)).logFormat, 2)
  const sites = []
  for (const sub of ['one', 'two', 'three']) {
    const site = (await call(a.port, 'POST', '/v1/websites', { name: sub, kind: 'static', subdomain: sub })).body
    await publish(a.port, site.id, `<h1>${sub}</h1>`)
    sites.push(site)
  }
  const serving = new Map([
    ['a', a.port],
    ['b', b.port],
    ['c', c.port],
  ])
  const watch = watchServing(t, serving, 'two.localhost', '<h1>two</h1>')

  // c upgraded first: it applies the old primary's entries (format 2) as it follows.
  serving.delete('c')
  assert.deepEqual(await stopped(c), { code: 0, signal: null })
  c = await start('c', NEXT)
  serving.set('c', c.port)
  assert.equal((await health(c.port)).logFormat, 3)
  await publish(a.port, sites[0].id, '<h1>one, v2</h1>')
  assert.equal(await page(c.port, 'one.localhost'), '200 <h1>one, v2</h1>')

  // b paused, a stopped: c (upgraded) leads, writes format 3 and runs the migration, once.
  serving.delete('b')
  b.child.kill('SIGSTOP')
  serving.delete('a')
  assert.deepEqual(await stopped(a), { code: 0, signal: null })
  await waitUntil(async () => (await health(c.port)).role === 'primary', 'c to lead', 10_000, API_POLL_MS)
  await waitUntil(() => /ran a schema migration/.test(c.stderr()), 'the migration on c', 10_000, API_POLL_MS)
  const migrated = /ran a schema migration \(once for the installation\) (\{.*\})/.exec(c.stderr())![1]!
  assert.equal(JSON.parse(migrated).records, 3)
  await publish(c.port, sites[0].id, '<h1>one, v3</h1>')

  // b, still the old build, resumes: it meets the new format, stops (78: not restarted) and applied nothing of it.
  b.child.kill('SIGCONT')
  assert.deepEqual(await exitOf(b), { code: 78, signal: null })
  assert.match(
    b.stderr(),
    /in log format 3, and this build of Plinth reads formats up to 2: that node runs a newer Plinth\. Upgrade this node/,
  )
  // a, the old build, is refused at start (78) for the same reason.
  const old = await runFailingStart(clusterNodeEnv({ dir, name: 'a', port: ports.a, ground: ground.env, key: KEY, leaseMs: 1500 }))
  assert.equal(old.code, 78, old.stderr)
  assert.match(
    old.stderr,
    /this build of Plinth reads formats up to 2: that node runs a newer Plinth\. Upgrade this node to it and start it again/,
  )

  // Upgraded, both catch up from where they stopped (the migration's entries and the new version included) and serve.
  a = await start('a', NEXT)
  b = await start('b', NEXT)
  serving.set('a', a.port)
  serving.set('b', b.port)
  for (const node of [a, b]) assert.equal(await page(node.port, 'one.localhost'), '200 <h1>one, v3</h1>')
  // Another failover among upgraded nodes: the migration does not run again.
  serving.delete('c')
  assert.deepEqual(await stopped(c), { code: 0, signal: null })
  const next = await waitUntil(
    async () => ((await health(a.port)).role === 'primary' ? a : (await health(b.port)).role === 'primary' ? b : null),
    'a or b to lead',
    10_000,
    API_POLL_MS,
  )
  await publish(next.port, sites[2].id, '<h1>three, v2</h1>')
  for (const node of [a, b]) assert.equal(await page(node.port, 'three.localhost'), '200 <h1>three, v2</h1>')
  for (const node of [a, b]) assert.doesNotMatch(node.stderr(), /ran a schema migration/)
  const { answers, failures } = await watch.stop()
  assert.deepEqual(failures, [])
  assert.ok(answers > 20, `sites answered ${answers} times during the upgrade`)
})
