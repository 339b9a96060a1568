import assert from 'node:assert/strict'
import { createHash, randomBytes } from 'node:crypto'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { freePort, freshRequest, keyedCall } from '../helpers/http.js'
import { clusterNodeEnv, startClusterGround, type NatsAccess } from '../helpers/nats.js'
import { Kvm } from '@nats-io/kv'
import { Objm } from '@nats-io/obj'
import { jetstreamManager } from '@nats-io/jetstream'
import { runCli, spawnPlinth, type RunningPlinth } from '../helpers/process.js'
import { shareFiles, ticketDeployLarge } from '../helpers/ticket.js'
import { smtpEnv, startSmtp } from '../helpers/smtp.js'
import { API_POLL_MS, waitUntil } from '../helpers/wait.js'

/*
 * Several nodes on NATS JetStream (issue 39), as an operator runs them: three nats-servers clustered on
 * loopback, Plinth nodes started as processes with PLINTH_CLUSTER_NATS. The first node leads; the
 * others follow the log and serve every site from their own database.
 */

const KEY = 'wb_' + 'C'.repeat(43)
const CHROME = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36'

const call = (port: number, method: string, path: string, body?: unknown) => keyedCall(port, KEY, method, path, body)

async function startNode(
  t: TestContext,
  dir: string,
  name: string,
  ground: Record<string, string>,
  leaseMs = 1500,
  backups?: string,
): Promise<RunningPlinth> {
  const port = await freePort()
  return spawnPlinth(t, clusterNodeEnv({ dir, name, port, ground, key: KEY, leaseMs, threads: 2, backups }))
}

/**
 * `count` calls through each key at once (each key has its own rate limit), a 429 waited out as its
 * Retry-After says and asked again; every other answer must be `expected`. Resolves how many were.
 */
async function throughKeys(
  keys: string[],
  count: number,
  expected: number,
  send: (key: string, k: number, i: number) => Promise<{ status: number; headers: Headers; body: any }>,
): Promise<number> {
  let answered = 0
  await Promise.all(
    keys.map(async (key, k) => {
      for (let i = 0; i < count; i++) {
        const res = await send(key, k, i)
        if (res.status === 429) {
          await new Promise((resolve) => setTimeout(resolve, Number(res.headers.get('retry-after') ?? 1) * 1000))
          i--
          continue
        }
        assert.equal(res.status, expected, JSON.stringify(res.body))
        answered++
      }
    }),
  )
  return answered
}

/** Starts a node again under its name once the name is free (its node entry lives two leases after its last renewal). */
async function restartNode(
  t: TestContext,
  dir: string,
  name: string,
  ground: Record<string, string>,
  backups?: string,
): Promise<RunningPlinth> {
  for (let attempt = 0; ; attempt++) {
    const node = await startNode(t, dir, name, ground, 1500, backups).catch((error: Error) => {
      // The server expires a KV entry a moment after its age passes: the name may take a little longer.
      if (attempt < 5 && new RegExp(`another node named "${name}" is running`).test(error.message)) return null
      throw error
    })
    if (node !== null) return node
  }
}

/** How far a node's database reached in the log (its /metrics, with the admin key). */
async function logPosition(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text()
  return Number(/^plinth_cluster_log_position\{node="[^"]+"\} (\d+)$/m.exec(text)?.[1] ?? NaN)
}

/** On the primary: the replicas it heard from within two leases, whose applying a write's answer waits for (its /metrics). */
async function liveReplicas(port: number): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text()
  return Number(/^plinth_cluster_replicas_live\{node="[^"]+"\} (\d+)$/m.exec(text)?.[1] ?? NaN)
}

/** Stops a replica (SIGSTOP) and waits until the primary no longer counts it live (two leases unheard): writes stop waiting for it. */
async function pauseReplica(primaryPort: number, replica: RunningPlinth): Promise<void> {
  const before = await liveReplicas(primaryPort)
  replica.child.kill('SIGSTOP')
  await waitUntil(
    async () => (await liveReplicas(primaryPort)) === before - 1,
    'the primary to stop counting the stopped replica',
    10_000,
    API_POLL_MS,
  )
}

/** Waits until a stopped node's entry in plinth-nodes has expired (two leases after its last renewal): its name is free again. */
async function nameFree(access: NatsAccess, name: string): Promise<void> {
  const nc = await access.admin()
  try {
    const nodes = await new Kvm(nc).open('plinth-nodes')
    await waitUntil(async () => (await nodes.get(name)) === null, `the node entry of ${name} to expire`, 15_000, 100)
  } finally {
    await nc.close()
  }
}

/** The page a node serves for a host (a fresh connection each time, so every serving thread is asked in turn). */
async function page(port: number, host: string, path = '/'): Promise<string> {
  const res = await freshRequest(port, host, path)
  return `${res.status} ${res.body.toString()}`
}

/**
 * Asks a node for a page over and over (fresh connections, so every serving thread in turn) until
 * stopped: each answer's version (X-Plinth-Version) with its body. Every answer of a version's
 * files carries the version it came from, so a torn answer (a page of one version holding another's
 * bytes) shows as two bodies under one version.
 */
function watchVersions(t: TestContext, port: number, host: string): { stop: () => Promise<Map<number, Set<string>>> } {
  const seen = new Map<number, Set<string>>()
  let running = true
  // A test that failed before stopping it ends all the same.
  t.after(() => (running = false))
  const loop = (async () => {
    while (running) {
      const res = await freshRequest(port, host, '/').catch(() => null)
      if (res === null || res.status !== 200) continue
      const version = Number(res.headers['x-plinth-version'])
      assert.ok(version > 0, `an answer without its version: ${JSON.stringify(res.headers)}`)
      if (!seen.has(version)) seen.set(version, new Set())
      seen.get(version)!.add(res.body.toString())
    }
  })()
  return {
    stop: async () => {
      running = false
      await loop
      return seen
    },
  }
}

/** A dashboard form post to a node (the dashboard's own origin: the cluster's, PLINTH_API_ORIGIN), with a session cookie if given; the session cookie it sets, if any. */
async function formPost(
  port: number,
  path: string,
  form: Record<string, string>,
  cookie = '',
): Promise<{ status: number; cookie: string }> {
  const res = await fetch(`http://127.0.0.1:${port}${path}`, {
    method: 'POST',
    headers: {
      host: `localhost:${port}`,
      origin: 'http://localhost',
      'content-type': 'application/x-www-form-urlencoded',
      ...(cookie === '' ? {} : { cookie }),
    },
    body: new URLSearchParams(form),
    redirect: 'manual',
  })
  const set = /^(plinth_session=[^;]*)/.exec(res.headers.get('set-cookie') ?? '')
  return { status: res.status, cookie: set?.[1] ?? '' }
}

/** What the API answers a dashboard session on a node. */
async function withSession(port: number, cookie: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/websites`, { headers: { cookie, origin: 'http://localhost' } })
  return res.status
}

test('a replica serves what the primary published from the first request after each 2xx, takes over when the primary is killed, and the old primary rejoins as a replica; mail is sent by the primary alone', async (t) => {
  const ground = await startClusterGround(t, 'plinth-cluster-')
  const { dir, access } = ground
  // Both nodes name the same relay: only the primary may hand it a message.
  const smtp = await startSmtp(t)
  const env = { ...ground.env, ...smtpEnv(smtp) }
  const a = await startNode(t, dir, 'a', env)
  assert.match(a.stdout() + a.stderr(), /leads the cluster/)
  // Each node's banner says which it is.
  assert.match(a.stdout(), /cluster node a: the primary, taking writes; at entry \d+ of the log/)
  // The owner sets up (a session the replica will have read at its start), then b starts.
  const token = /#token=([^\s]+)/.exec(a.stdout())?.[1]
  assert.ok(token, a.stdout())
  const early = await formPost(a.port, '/app/setup', {
    token,
    email: 'owner@example.com',
    name: 'Olive Owner',
    password: 'owner-password-1',
  })
  assert.equal(early.status, 303)
  const b = await startNode(t, dir, 'b', env)
  assert.match(
    b.stdout(),
    /cluster node b: a replica following a, serving sites and handing the rest to the primary; at entry \d+ of the log/,
  )
  // After b started: that session ends (sign-out), and a new one begins.
  assert.equal((await formPost(a.port, '/app/sign-out', {}, early.cookie)).status, 303)
  const late = await formPost(a.port, '/app/sign-in', { email: 'owner@example.com', password: 'owner-password-1' })
  assert.equal(late.status, 303)
  assert.equal(await withSession(a.port, late.cookie), 200)
  // An invitation's mail, queued on the primary, is sent by it; the replica holds the message as sent, and sent nothing.
  const invited = await call(a.port, 'POST', '/v1/members/invitations', { email: 'mia@example.com', role: 'full_editor' })
  assert.equal(invited.status, 201, JSON.stringify(invited.body))
  await smtp.message(1)
  await waitUntil(
    async () => / sent +invitation +mia@example\.com/.test((await runCli(['mail', 'list'], { PLINTH_DATA_DIR: join(dir, 'b') })).stdout),
    'the replica to hold the message as sent',
  )
  assert.equal(smtp.offered, 1, 'the replica handed the relay nothing')
  assert.equal(await withSession(a.port, early.cookie), 401)

  const site = (await call(a.port, 'POST', '/v1/websites', { name: 'Shared', kind: 'static', subdomain: 'shared' })).body
  assert.ok(site.id, JSON.stringify(site))
  // Two files that do not compress: one deploy's entry is over the server's max_payload (1 MiB).
  const noise = randomBytes(525_000).toString('base64')
  const deploy = async (html: string) => {
    const res = await call(a.port, 'POST', `/v1/websites/${site.id}/deploy/json`, {
      files: [
        { path: 'index.html', content: html },
        { path: 'about.html', content: '<p>about</p>' },
        { path: 'big-1.txt', content: noise },
        { path: 'big-2.txt', content: noise.split('').reverse().join('') },
      ],
    })
    assert.equal(res.status, 201, JSON.stringify(res.body))
    return res.body
  }
  await deploy('<h1>one</h1>')
  const published = await call(a.port, 'POST', `/v1/websites/${site.id}/publish`)
  assert.equal(published.status, 200)
  // The answer went only once the replica applied it: the first request to the replica after the 2xx
  // sees the new version, on both of its serving threads. It does not say the log's position (a count
  // of every tenant's writes), nor does the public health check.
  assert.equal(published.headers.get('x-plinth-seq'), null)
  assert.equal(published.headers.get('x-plinth-lagging'), null)
  assert.deepEqual(Object.keys(JSON.parse((await freshRequest(b.port, 'localhost', '/_platform/health')).body.toString())).sort(), [
    'logFormat',
    'node',
    'primary',
    'role',
    'status',
  ])
  for (let i = 0; i < 4; i++) assert.equal(await page(b.port, 'shared.localhost'), '200 <h1>one</h1>')
  // From here through the failover, the replica is asked for the page all along.
  const versions = watchVersions(t, b.port, 'shared.localhost')
  const expected = new Map<number, string>()
  /** The version the replica serves now, with the page it is expected to be. */
  const servedVersion = async (html: string) => {
    const res = await freshRequest(b.port, 'shared.localhost', '/')
    assert.equal(res.body.toString(), html)
    expected.set(Number(res.headers['x-plinth-version']), html)
  }
  await servedVersion('<h1>one</h1>')
  // An entry larger than the server's max_payload (1 MiB) travels in parts.
  assert.equal((await freshRequest(b.port, 'shared.localhost', '/big-2.txt')).body.toString(), noise.split('').reverse().join(''))

  const deployed = await call(a.port, 'POST', `/v1/websites/${site.id}/deploy/json`, {
    files: [{ path: 'index.html', content: '<h1>two</h1>' }],
  })
  assert.equal(deployed.status, 201)
  assert.equal(await page(b.port, 'draft--shared.localhost'), '200 <h1>two</h1>', 'the draft host follows the head')
  // A version's own address is served by the replica itself, from its own database: nothing handed to the primary.
  const handedOn = async () => {
    const text = await (await fetch(`http://127.0.0.1:${b.port}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text()
    return Number(/^plinth_cluster_forwarded_total\{node="b",outcome="answered"\} (\d+)$/m.exec(text)?.[1] ?? 0)
  }
  const handedBefore = await handedOn()
  // (version 1 is the website's empty first draft: the first deploy made version 2)
  assert.equal(await page(b.port, 'v2--shared.localhost'), '200 <h1>one</h1>', "version 2's own address")
  assert.equal(await page(b.port, 'v3--shared.localhost'), '200 <h1>two</h1>', "version 3's own address")
  assert.equal(await handedOn(), handedBefore, 'version addresses handed to the primary')
  for (let round = 1; round <= 3; round++) {
    const html = `<h1>round ${round}</h1>`
    const next = await call(a.port, 'POST', `/v1/websites/${site.id}/deploy/json`, { files: [{ path: 'index.html', content: html }] })
    assert.equal(next.status, 201)
    assert.equal((await call(a.port, 'POST', `/v1/websites/${site.id}/publish`)).status, 200)
    assert.equal(await page(b.port, 'shared.localhost'), `200 ${html}`, `publish ${round}: the first request after the 2xx`)
    await servedVersion(html)
    // A rollback publishes a new version with version 2's files.
    assert.equal((await call(a.port, 'POST', `/v1/websites/${site.id}/rollback`, { version: 2 })).status, 200)
    assert.equal(await page(b.port, 'shared.localhost'), '200 <h1>one</h1>', `rollback ${round}: the first request after the 2xx`)
    await servedVersion('<h1>one</h1>')
  }

  // Blob files (a ticket deploy's large file, a storage website's shared file) reach the replica before the entry naming them.
  const big = randomBytes((1 << 20) + 4096)
  const large = (await call(a.port, 'POST', '/v1/websites', { name: 'Large', kind: 'static', subdomain: 'large' })).body
  await ticketDeployLarge(a.port, KEY, large.id, '<p>large</p>', big)
  assert.equal((await call(a.port, 'POST', `/v1/websites/${large.id}/publish`)).status, 200)
  const served = await waitUntil(async () => {
    const res = await freshRequest(b.port, 'large.localhost', '/media/big.bin')
    return res.status === 200 ? res.body : null
  }, 'the replica to serve the large file')
  assert.ok(served.equals(big), 'the large file byte for byte')
  const storage = (await call(a.port, 'POST', '/v1/websites', { name: 'Files', kind: 'storage', subdomain: 'files' })).body
  const shared = randomBytes(200_000)
  const [file] = await shareFiles(a.port, KEY, storage.id, [{ name: 'report.bin', bytes: shared }])
  const link = new URL(file!.url)
  const fetched = await waitUntil(async () => {
    const res = await freshRequest(b.port, link.hostname, link.pathname)
    return res.status === 200 ? res.body : null
  }, 'the replica to serve the shared file')
  assert.ok(fetched.equals(shared), 'the shared file byte for byte')
  // Deleted on the primary: the replica stops serving it and removes its own copy of the bytes.
  const sharedHash = createHash('sha256').update(shared).digest('hex')
  const replicaCopy = join(dir, 'b', 'files', sharedHash.slice(0, 2), sharedHash.slice(2))
  assert.ok(existsSync(replicaCopy), "the replica holds the shared file's bytes")
  const deleted = await call(a.port, 'DELETE', `/v1/websites/${storage.id}/objects/${file!.objectId}`)
  assert.equal(deleted.status, 200, JSON.stringify(deleted.body))
  assert.equal((await freshRequest(b.port, link.hostname, link.pathname)).status, 404)
  await waitUntil(() => !existsSync(replicaCopy), "the replica to remove the deleted file's bytes", 5000)

  // The API asked of the replica is the primary's: handed on, answered as the primary answers.
  const viaReplica = await call(b.port, 'POST', '/v1/websites', { name: 'Via replica', kind: 'static', subdomain: 'via' })
  assert.equal(viaReplica.status, 201, JSON.stringify(viaReplica.body))
  const listed = await call(a.port, 'GET', '/v1/websites?limit=100')
  assert.ok(
    listed.body.items.some((w: any) => w.id === viaReplica.body.id),
    'the website made through the replica is on the primary',
  )
  const viaDeploy = await call(b.port, 'POST', `/v1/websites/${viaReplica.body.id}/deploy/json`, {
    files: [{ path: 'index.html', content: '<p>via</p>' }],
  })
  assert.equal(viaDeploy.status, 201, JSON.stringify(viaDeploy.body))
  await waitUntil(
    async () => (await page(b.port, 'draft--via.localhost')) === '200 <p>via</p>',
    'the replica to serve the draft it handed on',
  )

  // Page views served by the replica are counted by the primary (one message a second from each replica).
  for (let i = 0; i < 3; i++) assert.equal((await freshRequest(b.port, 'shared.localhost', '/about', { 'user-agent': CHROME })).status, 200)
  await waitUntil(
    async () => {
      const report = await call(a.port, 'GET', `/v1/websites/${site.id}/analytics?period=24h`)
      return report.body.pages?.find((p: any) => p.name === '/about')?.pageviews === 3
    },
    "the replica's page views in the primary's analytics",
    10_000,
    250,
  )
  assert.doesNotMatch(b.stdout() + b.stderr(), /leads the cluster/, 'b follows while a leads')
  // A replica that stops answering holds a write's answer up for two seconds at most, and is named in it.
  b.child.kill('SIGSTOP')
  const stoppedAt = Date.now()
  const meanwhile = await call(a.port, 'POST', '/v1/websites', { name: 'Meanwhile', kind: 'static', subdomain: 'meanwhile' })
  b.child.kill('SIGCONT')
  assert.equal(meanwhile.status, 201)
  assert.equal(meanwhile.headers.get('x-plinth-lagging'), 'b')
  const held = Date.now() - stoppedAt
  assert.ok(held >= 1900 && held < 4000, `the answer waited ${held} ms`)

  // The primary dies: the replica takes the lease and accepts writes, and serves throughout.
  a.child.kill('SIGKILL')
  const killedAt = Date.now()
  // The replica's health check names the dead primary only until a renewal is missed (two thirds of a
  // lease), then nobody, then itself once it leads; never the dead one for its whole lease.
  const primaries: (string | null)[] = []
  let watching = true
  t.after(() => (watching = false))
  const healthWatch = (async () => {
    while (watching) {
      const res = await freshRequest(b.port, 'localhost', '/_platform/health').catch(() => null)
      const primary = res === null ? undefined : (JSON.parse(res.body.toString()).primary as string | null)
      if (primary !== undefined && primaries.at(-1) !== primary) primaries.push(primary)
      // A sampler, not a wait: the health answer every 50 ms through the failover.
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  })()
  const refused: string[] = []
  const sites: string[] = []
  const created = await waitUntil(
    async () => {
      const res = await call(b.port, 'POST', '/v1/websites', { name: 'After', kind: 'static', subdomain: 'after' })
      // Until it leads, a write is refused as unavailable, saying when to try again (never a 5xx that says nothing).
      if (res.status !== 201 && !(res.status === 503 && res.headers.get('retry-after') !== null && res.body.kind === 'unavailable'))
        refused.push(`${res.status} ${JSON.stringify(res.body)}`)
      sites.push(await page(b.port, 'shared.localhost'))
      return res.status === 201 ? res : null
    },
    'a write accepted by the new primary',
    15_000,
    API_POLL_MS,
  )
  assert.match(b.stdout() + b.stderr(), /leads the cluster/)
  watching = false
  await healthWatch
  assert.deepEqual(primaries.slice(primaries.indexOf(null)), [null, 'b'], `the health check named ${JSON.stringify(primaries)}`)
  assert.ok(
    primaries.slice(0, primaries.indexOf(null)).every((p) => p === 'a'),
    JSON.stringify(primaries),
  )
  // The dead primary is logged once when it stops answering, not once for each write handed to it meanwhile.
  const unreached = b.stderr().match(/a replica could not reach the primary/g) ?? []
  assert.ok(unreached.length <= 1, `${unreached.length} lines for one primary that stopped answering:\n${b.stderr()}`)
  assert.deepEqual(new Set(sites), new Set(['200 <h1>one</h1>']), 'the site served throughout')
  // Through publishes, rollbacks and the failover, every answer named its version and held that version's page, never another's.
  const seen = await versions.stop()
  assert.ok(seen.size >= 4, `versions seen: ${[...seen.keys()].join(', ')}`)
  for (const [version, bodies] of seen) {
    assert.equal(bodies.size, 1, `version ${version} answered ${[...bodies].join(' and ')}`)
    const html = expected.get(version)
    if (html !== undefined) assert.deepEqual([...bodies], [html], `version ${version}`)
  }
  assert.deepEqual(refused, [], 'answers during the failover')
  assert.ok(Date.now() - killedAt < 10_000, `a new primary accepted a write ${Date.now() - killedAt} ms after the kill`)
  assert.ok(created.body.id)
  assert.equal(await page(b.port, 'shared.localhost'), '200 <h1>one</h1>')
  // The new primary knows the sessions as the log left them, not as they were when it started: the
  // session begun after its start works, the one ended after its start does not.
  assert.equal(await withSession(b.port, late.cookie), 200, 'a session begun on the old primary')
  assert.equal(await withSession(b.port, early.cookie), 401, 'a session ended on the old primary')
  const after = await call(b.port, 'POST', `/v1/websites/${created.body.id}/deploy/json`, {
    files: [{ path: 'index.html', content: '<p>after</p>' }],
  })
  assert.equal(after.status, 201)

  // The old primary, started again once its name is free (its node entry lives two leases), rejoins as a
  // replica: it catches up with what the new primary wrote, serves it, and hands the API on.
  await nameFree(access, 'a')
  const again = await restartNode(t, dir, 'a', env)
  assert.doesNotMatch(again.stdout() + again.stderr(), /leads the cluster/)
  // It said how far behind it started and that it caught up (what b wrote meanwhile), then which it is.
  const caughtUp = /caught up with the log \{"entries":(\d+),"seconds":[\d.]+,"perSecond":\d+\}/.exec(again.stderr())
  assert.ok(caughtUp && Number(caughtUp[1]) >= 2, again.stderr())
  assert.match(again.stderr(), /catching up with the log \{"behind":\d+/)
  assert.match(again.stdout(), /cluster node a: a replica following b/)
  assert.equal(await page(again.port, 'draft--after.localhost'), '200 <p>after</p>')
  assert.equal(await page(again.port, 'shared.localhost'), '200 <h1>one</h1>')
  const listed2 = await call(again.port, 'GET', '/v1/websites?limit=100')
  assert.ok(
    listed2.body.items.some((w: any) => w.id === created.body.id),
    "the API asked of the old primary is the new one's",
  )

  // /metrics says how a replica keeps up, whose lease it follows, and what it handed to the primary.
  const later = await call(b.port, 'POST', `/v1/websites/${created.body.id}/deploy/json`, {
    files: [{ path: 'index.html', content: '<p>later</p>' }],
  })
  assert.equal(later.status, 201)
  await waitUntil(
    async () => (await page(again.port, 'draft--after.localhost')) === '200 <p>later</p>',
    'the replica to serve the later deploy',
  )
  const scrape = async (port: number) => {
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text()
    return (series: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `))
      return line === undefined ? undefined : Number(line.slice(series.length + 1))
    }
  }
  const replica = await scrape(again.port)
  assert.equal(replica('plinth_cluster_replication_lag_entries{node="a"}'), 0)
  const lag = replica('plinth_cluster_replication_lag_seconds{node="a"}')
  assert.ok(lag !== undefined && lag >= 0 && lag < 10, `lag ${lag} s`)
  const appliedAt = replica('plinth_cluster_last_applied_timestamp_seconds{node="a"}')
  assert.ok(appliedAt !== undefined && Math.abs(Date.now() / 1000 - appliedAt) < 60, `last applied at ${appliedAt}`)
  assert.ok((replica('plinth_cluster_lease_epoch{node="a",holder="b"}') ?? 0) > 0, 'the lease b holds, with its epoch')
  assert.ok((replica('plinth_cluster_forwarded_total{node="a",outcome="answered"}') ?? 0) >= 1, 'the API request handed on')
  const primary = await scrape(b.port)
  assert.ok((primary('plinth_cluster_forwarded_total{node="b",outcome="unreachable"}') ?? 0) >= 1, 'writes handed to the dead primary')
  assert.equal(primary('plinth_cluster_last_applied_timestamp_seconds{node="b"}'), undefined, 'the primary applies nothing from the log')
})

test("a replica applies no entry before the cluster's blob store has its bytes, in order and retrying; a consumer the server dropped is made again", async (t) => {
  const { dir, env, nats, access } = await startClusterGround(t, 'plinth-blobs-')
  const a = await startNode(t, dir, 'a', env)
  const b = await startNode(t, dir, 'b', env)
  const storage = (await call(a.port, 'POST', '/v1/websites', { name: 'Files', kind: 'storage', subdomain: 'files' })).body
  const [first] = await shareFiles(a.port, KEY, storage.id, [{ name: 'first.bin', bytes: randomBytes(100_000) }])
  const firstLink = new URL(first!.url)
  assert.equal((await freshRequest(b.port, firstLink.hostname, firstLink.pathname)).status, 200, 'b serves the first file')
  const later = await call(a.port, 'POST', '/v1/websites', { name: 'Later', kind: 'static', subdomain: 'later' })
  assert.equal(later.status, 201)
  const deploy = (html: string) =>
    call(a.port, 'POST', `/v1/websites/${later.body.id}/deploy/json`, { files: [{ path: 'index.html', content: html }] })
  assert.equal((await deploy('<p>before</p>')).status, 201)
  assert.equal(await page(b.port, 'draft--later.localhost'), '200 <p>before</p>')
  // A deploy of 100 small files: their bytes travel in the log entry, so b asks the object store for
  // none of them (a miss is a JetStream API error: it once asked for each one).
  const api = async () => {
    let calls = 0
    let errors = 0
    for (const server of nats) {
      const jsz = (await (await fetch(`${server.monitor}/jsz`)).json()) as { api: { total: number; errors: number } }
      calls += jsz.api.total
      errors += jsz.api.errors
    }
    return { calls, errors }
  }
  const before = await api()
  const small = Array.from({ length: 100 }, (_, i) => ({ path: `p${i}.html`, content: `<p>page ${i}</p>` }))
  const many = await call(a.port, 'POST', `/v1/websites/${later.body.id}/deploy/json`, {
    files: [{ path: 'index.html', content: '<p>before</p>' }, ...small],
  })
  assert.equal(many.status, 201)
  assert.equal((await freshRequest(b.port, 'draft--later.localhost', '/p99')).body.toString(), '<p>page 99</p>')
  const after100 = await api()
  assert.ok(
    after100.errors - before.errors < 10,
    `JetStream API errors during a 100-file deploy: ${after100.errors - before.errors} (${after100.calls - before.calls} calls)`,
  )
  const nc = await access.admin()
  t.after(() => nc.close())
  const blobStore = await new Objm(nc).open('plinth-blobs')

  // b stops answering (SIGSTOP) until writes no longer wait for it; a shares a file, then deploys a website b serves.
  t.after(() => void b.child.kill('SIGCONT'))
  await pauseReplica(a.port, b)
  const bytes = randomBytes(120_000)
  const [second] = await shareFiles(a.port, KEY, storage.id, [{ name: 'second.bin', bytes }])
  assert.equal((await deploy('<p>later</p>')).status, 201)
  // The file's bytes leave the blob store before b reads the entry that lists them.
  const hash = createHash('sha256').update(bytes).digest('hex')
  assert.equal((await blobStore.info(hash))?.deleted, false, 'the primary put the bytes in the blob store before the entry')
  await blobStore.delete(hash)
  b.child.kill('SIGCONT')
  const secondLink = new URL(second!.url)
  // b tries again and again, and meanwhile serves what it had: not the file without its bytes, nor what came after it.
  for (let i = 0; i < 5; i++) {
    // Pauses that are the point: b keeps serving what it had while 2.5 s of retries go by.
    await new Promise((resolve) => setTimeout(resolve, 500))
    assert.equal((await freshRequest(b.port, secondLink.hostname, secondLink.pathname)).status, 404, 'the file whose bytes b lacks')
    assert.equal((await freshRequest(b.port, firstLink.hostname, firstLink.pathname)).status, 200, 'the file b had')
    assert.equal(await page(b.port, 'draft--later.localhost'), '200 <p>before</p>', 'a deploy after the file')
  }
  assert.ok((b.stderr().match(/the cluster's blob store lacks/g) ?? []).length >= 2, `b tried more than once: ${b.stderr()}`)
  // The bytes come back (as an operator restoring them would put them): b applies the entry and the ones after it.
  await blobStore.put({ name: hash }, new Blob([bytes]).stream())
  const served = await waitUntil(async () => {
    const res = await freshRequest(b.port, secondLink.hostname, secondLink.pathname)
    return res.status === 200 ? res.body : null
  }, 'b to serve the file once its bytes are back')
  assert.ok(served.equals(bytes))
  assert.equal(
    await waitUntil(async () => {
      const html = await page(b.port, 'draft--later.localhost')
      return html === '200 <p>later</p>' ? html : null
    }, 'b to apply what came after the file'),
    '200 <p>later</p>',
  )

  // The server drops b's consumer (as after a NATS restart that lost it): b notices the log moving without it and follows again.
  const jsm = await jetstreamManager(nc, { checkAPI: false })
  for (const consumer of await jsm.consumers.list('PLINTH_LOG').next()) await jsm.consumers.delete('PLINTH_LOG', consumer.name)
  const after = await call(a.port, 'POST', `/v1/websites/${later.body.id}/deploy/json`, {
    files: [{ path: 'index.html', content: '<p>after</p>' }],
  })
  assert.equal(after.status, 201)
  assert.equal(
    await waitUntil(
      async () => {
        const html = await page(b.port, 'draft--later.localhost')
        return html === '200 <p>after</p>' ? html : null
      },
      'b to follow the log again',
      20_000,
    ),
    '200 <p>after</p>',
  )
  assert.match(b.stderr(), /following the log stalled \(the log moved on, nothing arrived\); making the consumer again/)
})

test('a new node joins a cluster of 1,000 websites through the newest backup, replaying only the log after it', async (t) => {
  const { dir, env, backups, access } = await startClusterGround(t, 'plinth-join-')
  const a = await startNode(t, dir, 'a', env, 1500, backups)
  // 1,000 websites, made through eight keys at once (each key has its own rate limit).
  const keys: string[] = []
  for (let i = 0; i < 8; i++) {
    const key = await call(a.port, 'POST', '/v1/api-keys', { name: `maker ${i}`, access: { kind: 'organization', role: 'admin' } })
    assert.equal(key.status, 201, JSON.stringify(key.body))
    keys.push(key.body.secret)
  }
  const made = await throughKeys(keys, 125, 201, (key, k, i) =>
    keyedCall(a.port, key, 'POST', '/v1/websites', { name: `Site ${k}-${i}`, kind: 'static', subdomain: `s${k}-${i}` }),
  )
  assert.equal(made, 1000)
  const site = (await call(a.port, 'GET', '/v1/websites?limit=1')).body.items[0]
  await call(a.port, 'POST', `/v1/websites/${site.id}/deploy/json`, { files: [{ path: 'index.html', content: '<p>before</p>' }] })
  assert.equal((await call(a.port, 'POST', `/v1/websites/${site.id}/publish`)).status, 200)

  // A backup of the primary (a running node: it goes on writing), then more writes the backup lacks.
  const taken = await runCli(['backup', backups], { PLINTH_DATA_DIR: `${dir}/a`, PLINTH_SECRET_FILE: env.PLINTH_SECRET_FILE! })
  assert.equal(taken.code, 0, taken.stderr)
  const after = await call(a.port, 'POST', `/v1/websites/${site.id}/deploy/json`, {
    files: [{ path: 'index.html', content: '<p>after</p>' }],
  })
  assert.equal(after.status, 201)
  assert.equal((await call(a.port, 'POST', `/v1/websites/${site.id}/publish`)).status, 200)
  const logEnd = await logPosition(a.port)

  // The new node restores the backup, then reads only the entries after its position.
  const c = await startNode(t, dir, 'c', env, 1500, backups)
  const restored = /restored the newest backup; replaying the log from its position.*"position":(\d+),"log":(\d+)/.exec(c.stderr())
  assert.ok(restored, c.stderr())
  const [position, log] = [Number(restored[1]), Number(restored[2])]
  assert.ok(position > 1000, `the backup's position: ${position}`)
  assert.ok(log - position <= 5, `entries replayed: ${log - position} of ${log}`)
  assert.equal(log, logEnd)
  assert.equal(await page(c.port, `${site.subdomain}.localhost`), '200 <p>after</p>')
  // A website made before the backup (not published) answers on the new node as on the primary.
  const other = site.subdomain === 's0-0' ? 's0-1' : 's0-0'
  assert.equal(await page(c.port, `${other}.localhost`), await page(a.port, `${other}.localhost`))

  // A node without a backup root replays the whole log (over 1,000 entries: in batches, each one
  // transaction), and serves what the primary serves; then it leaves.
  const d = await startNode(t, dir, 'd', env, 1500)
  const replayed = /caught up with the log \{"entries":(\d+)/.exec(d.stderr())
  assert.ok(replayed && Number(replayed[1]) > 1000, d.stderr())
  assert.equal(await page(d.port, `${site.subdomain}.localhost`), '200 <p>after</p>')
  assert.equal(await page(d.port, `${other}.localhost`), await page(a.port, `${other}.localhost`))
  // Websites made early and late in the log: each one's draft host is a site of d's own (not the 404 of an unknown host).
  for (const made of ['s0-1', 's3-60', 's7-124']) {
    const [there, here] = [await page(a.port, `draft--${made}.localhost`), await page(d.port, `draft--${made}.localhost`)]
    assert.equal(here, there, made)
    assert.notEqual(here, await page(d.port, 'draft--nowhere.localhost'))
  }
  d.child.kill('SIGTERM')
  await d.exited
  // Two leases unheard, the primary stops counting d among the replicas its writes wait for (c alone is left).
  await waitUntil(async () => (await liveReplicas(a.port)) === 1, 'the primary to stop counting the node that left', 10_000, API_POLL_MS)

  // The log keeps only the entries after the second-newest backup's position. c stops (SIGSTOP: what its
  // consumer was sent stays in its socket) while the primary writes more than that holds and two more
  // backups are taken: the log is trimmed to the first backup, then past c's position.
  t.after(() => void c.child.kill('SIGCONT'))
  // Two leases unheard, c is no longer a live replica that writes wait for.
  await pauseReplica(a.port, c)
  const websites = (await call(a.port, 'GET', '/v1/websites?limit=100')).body.items as { id: string }[]
  const updated = await throughKeys(keys, 40, 200, (key, k, i) =>
    keyedCall(a.port, key, 'PATCH', `/v1/websites/${websites[(k * 40 + i) % websites.length]!.id}`, { description: `update ${k}-${i}` }),
  )
  assert.equal(updated, 320)
  // Two shared files: one stays named, one is deleted (the primary removes its copy; the cluster's blob store keeps it while the log lists it).
  const storage = (await call(a.port, 'POST', '/v1/websites', { name: 'Kept files', kind: 'storage', subdomain: 'kept' })).body
  const [keptBytes, goneBytes] = [randomBytes(150_000), randomBytes(150_000)]
  const [kept, gone] = await shareFiles(a.port, KEY, storage.id, [
    { name: 'kept.bin', bytes: keptBytes },
    { name: 'gone.bin', bytes: goneBytes },
  ])
  const [keptHash, goneHash] = [keptBytes, goneBytes].map((bytes) => createHash('sha256').update(bytes).digest('hex'))
  assert.equal((await call(a.port, 'DELETE', `/v1/websites/${storage.id}/objects/${gone!.objectId}`)).status, 200)
  const nc = await access.admin()
  t.after(() => nc.close())
  const blobStore = await new Objm(nc).open('plinth-blobs')
  const inBlobStore = async (hash: string) => (await blobStore.info(hash))?.deleted === false
  const sweeps = () => [...a.stderr().matchAll(/swept the cluster's blob store[^\n]*"removed":(\d+)/g)].map((m) => Number(m[1]))
  const trims = () => [...a.stderr().matchAll(/trimmed the log[^\n]*"removed":(\d+),"first":(\d+)/g)].map((m) => Number(m[2]))
  assert.equal((await runCli(['backup', backups], { PLINTH_DATA_DIR: `${dir}/a`, PLINTH_SECRET_FILE: env.PLINTH_SECRET_FILE! })).code, 0)
  // Two backups: the log now starts at the first one's position (its last entry kept whole).
  const [toFirst] = await waitUntil(() => (trims().length === 1 ? trims() : null), 'the primary to trim the log to the first backup')
  assert.ok(toFirst! <= position && toFirst! > position - 5, `the log starts at ${toFirst} (the first backup's position: ${position})`)
  assert.deepEqual(await waitUntil(() => (sweeps().length === 1 ? sweeps() : null), 'the first sweep of the blob store'), [0])
  assert.ok(await inBlobStore(goneHash!), 'a deleted file an entry in the log lists stays in the blob store')
  await call(a.port, 'POST', `/v1/websites/${site.id}/deploy/json`, { files: [{ path: 'index.html', content: '<p>latest</p>' }] })
  assert.equal((await call(a.port, 'POST', `/v1/websites/${site.id}/publish`)).status, 200)
  assert.equal((await runCli(['backup', backups], { PLINTH_DATA_DIR: `${dir}/a`, PLINTH_SECRET_FILE: env.PLINTH_SECRET_FILE! })).code, 0)
  const [, past] = await waitUntil(() => (trims().length === 2 ? trims() : null), 'the primary to trim the log to the second backup')
  assert.ok(past! > logEnd + 256, `the log starts at ${past}, past c's position ${logEnd} and what c was sent`)
  // The entries listing the deleted file are gone from the log: so is the file from the blob store; the named one stays.
  assert.deepEqual(await waitUntil(() => (sweeps().length === 2 ? sweeps() : null), 'the second sweep of the blob store'), [0, 1])
  assert.equal(await inBlobStore(goneHash!), false, 'the deleted file left the blob store')
  assert.ok(await inBlobStore(keptHash!), 'a file a record names stays in the blob store')
  // The same bytes shared again go back into the blob store (the removed file's marker is not the file): c replays that entry below.
  const [again1] = await shareFiles(a.port, KEY, storage.id, [{ name: 'back.bin', bytes: goneBytes }])
  // c goes on: it applies what it was sent, then finds the log starts past its position, and stops for a restart.
  c.child.kill('SIGCONT')
  const stopped = await Promise.race([c.exited, new Promise<null>((resolve) => setTimeout(() => resolve(null), 15_000))])
  assert.deepEqual(stopped && { ...stopped }, { code: 75, signal: null }, `c, 15 s after it went on: ${c.stderr()}`)
  assert.match(c.stderr(), /the log was trimmed past this node's position/)
  // Started again, it restores the newest backup (its directory moved aside) and serves what the primary serves.
  const again = await restartNode(t, dir, 'c', env, backups)
  assert.match(again.stderr(), /restored the newest backup/)
  assert.equal(await page(again.port, `${site.subdomain}.localhost`), '200 <p>latest</p>')
  const keptLink = new URL(kept!.url)
  assert.equal((await freshRequest(again.port, keptLink.hostname, keptLink.pathname)).status, 200, 'the kept file, from the backup')
  const backLink = new URL(again1!.url)
  const back = await waitUntil(async () => {
    const res = await freshRequest(again.port, backLink.hostname, backLink.pathname)
    return res.status === 200 ? res.body : null
  }, 'c to serve the file shared again after its bytes left the blob store')
  assert.ok(back.equals(goneBytes))
})
