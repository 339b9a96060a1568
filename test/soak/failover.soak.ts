import assert from 'node:assert/strict'
import { createHash } from 'node:crypto'
import { test, type TestContext } from 'node:test'
import { openReadOnly, tableNames } from '../../core/backup/database.js'
import { freePort, freshRequest } from '../helpers/http.js'
import { clusterNodeEnv, startClusterGround } from '../helpers/nats.js'
import { runCli, spawnPlinth, type RunningPlinth } from '../helpers/process.js'
import { waitUntil } from '../helpers/wait.js'

/*
 * The cluster's failover soak (issue 39), run by `npm run test:soak` in `.ci/run` after the suite (it
 * takes about two minutes, more than the suite's budget allows): three nats-servers and three nodes
 * as processes, the primary SIGKILLed SOAK_KILLS times (default 20) while two writers send mixed writes
 * (websites made, deploys, publishes, API keys, form posts, anonymous sites) through every live node.
 * Each kill: a new primary accepts a write within 10 s, and the replicas answer every site request
 * meanwhile; the killed node is started again (from the newest backup when it holds a write the log
 * never took). At the end every acknowledged write is in the primary's state, and every node's
 * database holds the same records, table by table.
 */

const KILLS = Number(process.env.SOAK_KILLS ?? 20)
const LEASE_MS = 1500
const ADMIN = 'wb_' + 'S'.repeat(43)

interface Node {
  name: string
  port: number
  env: Record<string, string>
  run: RunningPlinth
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const alive = (node: Node) => node.run.child.exitCode === null && node.run.child.signalCode === null

async function api(
  port: number,
  method: string,
  path: string,
  options: { key?: string; body?: unknown; host?: string; from?: string } = {},
): Promise<{ status: number; body: any }> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: {
        ...(options.key === undefined ? {} : { authorization: `Bearer ${options.key}` }),
        'content-type': 'application/json',
        ...(options.from === undefined ? {} : { 'x-forwarded-for': options.from }),
      },
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    })
    const text = await res.text()
    return { status: res.status, body: text === '' ? null : JSON.parse(text) }
  } catch (error) {
    return { status: 0, body: String(error) }
  }
}

/** A request with its own Host (a site's) on a fresh connection; status 0 when the node does not answer (killed). */
async function hosted(
  port: number,
  host: string,
  path: string,
  method = 'GET',
  body?: string,
  from?: string,
  extra: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = {
    ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    ...(from === undefined ? {} : { 'x-forwarded-for': from }),
    ...extra,
  }
  const res = await freshRequest(port, host, path, headers, method, body).catch(() => null)
  return res === null ? { status: 0, text: '' } : { status: res.status, text: res.body.toString() }
}

/** A node's role (its health check) and how far it applied the log (its /metrics, for the operator's key: the position is not public). */
async function health(port: number): Promise<{ role: string; position: number } | null> {
  const res = await api(port, 'GET', '/_platform/health')
  if (res.status !== 200) return null
  const metrics = await hosted(port, 'localhost', '/metrics', 'GET', undefined, undefined, { authorization: `Bearer ${ADMIN}` })
  const position = /^plinth_cluster_log_position\{node="[^"]+"\} (\d+)$/m.exec(metrics.text)
  return position === null ? null : { role: res.body.role as string, position: Number(position[1]) }
}

/**
 * A node started as a supervisor starts it. A supervisor waits as long as a start takes: one that restores
 * the newest backup replays the log from the backup's position, one entry at a time (a CI run met one
 * replaying 2,126 entries past the 15 s a plain start gets).
 */
async function startNode(t: TestContext, node: Omit<Node, 'run'>): Promise<Node> {
  for (let attempt = 0; ; attempt++) {
    try {
      return { ...node, run: await spawnPlinth(t, node.env, [], undefined, 120_000) }
    } catch (error) {
      // Its name is free once its entry (two leases) expires; the server takes a moment past that.
      if (attempt > 20 || !/another node named/.test(String(error))) throw error
      await sleep(250)
    }
  }
}

/** A read, a rate limit's 429 waited out as it says. */
async function read(port: number, path: string, key: string): Promise<{ status: number; body: any }> {
  for (;;) {
    const res = await api(port, 'GET', path, { key })
    if (res.status !== 429) return res
    await sleep(1000 * (res.body?.details?.retryAfterSeconds ?? 1))
  }
}

/** Every item of a listing, page by page. */
async function everything(port: number, path: string): Promise<any[]> {
  const items: any[] = []
  for (let cursor: string | null = null; ;) {
    const res = await read(port, `${path}${path.includes('?') ? '&' : '?'}limit=100${cursor === null ? '' : `&cursor=${cursor}`}`, ADMIN)
    assert.equal(res.status, 200, JSON.stringify(res.body))
    items.push(...res.body.items)
    cursor = res.body.nextCursor ?? null
    if (cursor === null) return items
  }
}

/** A digest of each table of a stopped node's database (its keys and values as stored). */
function tableDigests(dataDir: string): Map<string, string> {
  const env = openReadOnly(`${dataDir}/db`)
  try {
    const digests = new Map<string, string>()
    for (const name of tableNames(env)) {
      const hash = createHash('sha256')
      for (const { key, value } of env.openDB<Buffer>({ name, encoding: 'binary' }).getRange({})) {
        hash.update(JSON.stringify(key))
        hash.update(value)
      }
      digests.set(name, hash.digest('hex'))
    }
    return digests
  } finally {
    void env.close()
  }
}

test(`the primary SIGKILLed ${KILLS} times under mixed writes: nothing acknowledged is lost, a new primary writes within 10 s, the replicas serve throughout, and every node ends with the same records`, async (t) => {
  const { dir, env: ground, backups } = await startClusterGround(t, 'plinth-soak-')
  const nodes: Node[] = []
  for (const name of ['a', 'b', 'c']) {
    const port = await freePort()
    nodes.push(
      await startNode(t, {
        name,
        port,
        env: clusterNodeEnv({ dir, name, port, ground, key: ADMIN, leaseMs: LEASE_MS, backups }, { PLINTH_TRUSTED_PROXIES: '127.0.0.1' }),
      }),
    )
  }
  let leader = 'a'
  const [a] = nodes as [Node, Node, Node]
  // Keys for the expensive class (each key has its own rate limit): a new one every 18 calls.
  const keys: string[] = []
  for (let i = 0; i < 8; i++) {
    const made = await api(a.port, 'POST', '/v1/api-keys', {
      key: ADMIN,
      body: { name: `soak ${i}`, access: { kind: 'organization', role: 'admin' } },
    })
    assert.equal(made.status, 201, JSON.stringify(made.body))
    keys.push(made.body.secret)
  }
  let used = 0
  const key = () => keys[Math.floor(used++ / 18) % keys.length]!
  // A backup to restore a node that holds a write the log never took (the cluster trims the log to backups).
  assert.equal((await runCli(['backup', backups], { PLINTH_DATA_DIR: `${dir}/a`, PLINTH_SECRET_FILE: ground.PLINTH_SECRET_FILE! })).code, 0)
  const shared = (await api(a.port, 'POST', '/v1/websites', { key: ADMIN, body: { name: 'Shared', kind: 'static', subdomain: 'shared' } }))
    .body
  assert.equal(
    (
      await api(a.port, 'POST', `/v1/websites/${shared.id}/deploy/json`, {
        key: key(),
        body: { files: [{ path: 'index.html', content: '<p>shared</p>' }] },
      })
    ).status,
    201,
  )
  assert.equal((await api(a.port, 'POST', `/v1/websites/${shared.id}/publish`, { key: key() })).status, 200)

  const acked = {
    websites: [] as string[],
    versions: [] as [string, number][],
    published: new Map<string, number>(),
    keys: [] as string[],
    submissions: [] as [string, string][],
    anonymous: [] as [string, string][],
  }
  let writing = true
  let lastAck = 0
  let refused = 0
  let broken: unknown = null
  const live = () => nodes.filter(alive)
  // A client address per write: the rate limits of one network would otherwise end the form posts and anonymous creates.
  let client = 0
  const from = () => `198.51.${Math.floor(client / 250) % 250}.${(client++ % 250) + 1}`
  const writer = async (lane: number) => {
    let mine: { id: string; subdomain: string; deployed: boolean } | null = null
    for (let n = 0; writing; n++) {
      const node = live()[n % live().length]!
      const step = mine === null ? 0 : n % 6
      // A form posts to a site's host: only to a website whose deploy was acknowledged.
      if (step === 4 && !mine!.deployed) continue
      let res: { status: number; body: any }
      if (step === 0) {
        const subdomain = `w${lane}-${n}`
        res = await api(node.port, 'POST', '/v1/websites', { key: ADMIN, body: { name: subdomain, kind: 'static', subdomain } })
        if (res.status === 201) acked.websites.push((mine = { id: res.body.id, subdomain, deployed: false }).id)
      } else if (step === 1) {
        res = await api(node.port, 'POST', `/v1/websites/${mine!.id}/deploy/json`, {
          key: key(),
          body: { files: [{ path: 'index.html', content: `${lane}-${n}` }] },
        })
        if (res.status === 201) {
          acked.versions.push([mine!.id, res.body.version])
          mine!.deployed = true
        }
      } else if (step === 2) {
        res = await api(node.port, 'POST', `/v1/websites/${mine!.id}/publish`, { key: key() })
        if (res.status === 200) acked.published.set(mine!.id, res.body.website.publishedVersion)
      } else if (step === 3) {
        res = await api(node.port, 'POST', '/v1/api-keys', {
          key: ADMIN,
          body: { name: `k${lane}-${n}`, access: { kind: 'organization', role: 'content_editor' } },
        })
        if (res.status === 201) acked.keys.push(res.body.id)
      } else if (step === 4) {
        const posted = await hosted(
          node.port,
          `draft--${mine!.subdomain}.localhost`,
          '/_platform/forms/contact',
          'POST',
          JSON.stringify({ message: `${lane}-${n}` }),
          from(),
        )
        res = { status: posted.status, body: posted.text }
        if (posted.status === 200) acked.submissions.push([mine!.id, `${lane}-${n}`])
      } else {
        const address = from()
        const credential = await api(node.port, 'POST', '/public/v1/anonymous/credentials', { from: address })
        res = credential
        if (credential.status === 201) {
          res = await api(node.port, 'POST', '/public/v1/anonymous/sites', {
            key: credential.body.token,
            from: address,
            body: { name: `a${lane}-${n}`, kind: 'static', files: [{ path: 'index.html', content: `anonymous ${lane}-${n}` }] },
          })
          if (res.status === 201) acked.anonymous.push([credential.body.token, res.body.id])
        }
      }
      if (res.status >= 200 && res.status < 300) lastAck = performance.now()
      // Refused while the cluster fails over (503 with Retry-After), a node just killed (no answer), a
      // rate limit, and a publish of a website whose deploy was refused (its head is empty).
      else if (res.status === 503 || res.status === 0) refused++
      else if (res.status !== 429 && !(step === 2 && (res.status === 400 || res.status === 409)))
        throw new Error(`a write (step ${step}) answered ${res.status}: ${JSON.stringify(res.body)}`)
      // The writers' pace, not a wait for something.
      await sleep(20)
    }
  }
  const writers = [writer(1), writer(2)].map((w) => w.catch((error: unknown) => void (broken ??= error)))

  const failovers: number[] = []
  let siteRequests = 0
  const siteFailures: string[] = []
  for (let kill = 0; kill < KILLS && broken === null; kill++) {
    const primary = nodes.find((n) => alive(n) && n.name === leader)!
    // A pause that is the point: a second of writes between kills.
    await sleep(1000)
    primary.run.child.kill('SIGKILL')
    const t0 = performance.now()
    const replicas = nodes.filter((n) => n !== primary)
    // Until the first write after the kill is acknowledged, the replicas are asked for the shared site.
    while (lastAck < t0 || performance.now() - t0 < 200) {
      for (const replica of replicas) {
        siteRequests++
        const res = await hosted(replica.port, 'shared.localhost', '/')
        if (res.status !== 200 || res.text !== '<p>shared</p>') siteFailures.push(`kill ${kill + 1}, ${replica.name}: ${res.status}`)
      }
      if (broken !== null) throw broken
      assert.ok(performance.now() - t0 < 30_000, `kill ${kill + 1}: no write accepted within 30 s`)
    }
    failovers.push(lastAck - t0)
    await primary.run.exited
    // The killed node comes back, as a supervisor starts it (it restores the newest backup itself when
    // it holds a write the log never took, or exits 75 to be started again for that).
    const started = performance.now()
    let back = await startNode(t, primary).catch((error: Error) => error)
    if (back instanceof Error) {
      assert.match(back.message, /exited with 75/, back.message)
      back = await startNode(t, primary)
    }
    const replayed = /replaying the log from its position.*"position":(\d+),"log":(\d+)/.exec(back.run.stderr())
    if (replayed !== null)
      t.diagnostic(
        `kill ${kill + 1}: ${primary.name} restored the backup and replayed ${Number(replayed[2]) - Number(replayed[1])} entries; it listened ${Math.round(performance.now() - started)} ms after its start`,
      )
    nodes[nodes.indexOf(primary)] = back
    leader = await waitUntil(
      async () => {
        const states = await Promise.all(nodes.map((n) => health(n.port)))
        const lead = states.find((s) => s?.role === 'primary')
        if (lead == null) return null
        const current = states.every((s) => s !== null && s.position >= lead.position - 2)
        return current ? nodes[states.indexOf(lead)]!.name : null
      },
      'a primary, and every node within two entries of it',
      120_000,
      100,
    )
  }
  writing = false
  await Promise.all(writers)
  if (broken !== null) throw broken
  t.diagnostic(
    `failover over ${failovers.length} kills: median ${[...failovers].sort((x, y) => x - y)[Math.floor(failovers.length / 2)]!.toFixed(0)} ms, worst ${Math.max(...failovers).toFixed(0)} ms; ${refused} writes refused meanwhile; ${siteRequests} site requests to the replicas`,
  )
  assert.equal(failovers.length, KILLS)
  assert.ok(Math.max(...failovers) < 10_000, `failovers: ${failovers.map((ms) => ms.toFixed(0)).join(', ')} ms`)
  assert.deepEqual(siteFailures, [], 'site requests to the replicas while the primary was down')

  // Every acknowledged write, in the primary's state.
  const lead = nodes.find((n) => n.name === leader)!
  const websites = new Map((await everything(lead.port, '/v1/websites')).map((w) => [w.id as string, w]))
  const lost: string[] = []
  for (const id of acked.websites) if (!websites.has(id)) lost.push(`website ${id}`)
  // Versions only grow: a head at or past a deploy's version holds it; a published version at or past a publish's.
  for (const [id, version] of acked.versions) if ((websites.get(id)?.headVersion ?? 0) < version) lost.push(`version ${version} of ${id}`)
  for (const [id, version] of acked.published)
    if ((websites.get(id)?.publishedVersion ?? 0) < version) lost.push(`publish of version ${version} of ${id}`)
  const keysNow = new Set((await everything(lead.port, '/v1/api-keys')).map((k) => k.id as string))
  for (const id of acked.keys) if (!keysNow.has(id)) lost.push(`key ${id}`)
  const messages = new Map<string, Set<string>>()
  for (const id of new Set(acked.submissions.map(([id]) => id)))
    messages.set(
      id,
      new Set((await everything(lead.port, `/v1/websites/${id}/forms/contact/submissions`)).map((s) => s.data.message as string)),
    )
  for (const [id, message] of acked.submissions) if (!messages.get(id)!.has(message)) lost.push(`submission ${message} to ${id}`)
  for (const [token, id] of acked.anonymous)
    if ((await read(lead.port, `/public/v1/anonymous/sites/${id}`, token)).status !== 200) lost.push(`anonymous site ${id}`)
  const writes =
    acked.websites.length +
    acked.versions.length +
    acked.published.size +
    acked.keys.length +
    acked.submissions.length +
    acked.anonymous.length
  t.diagnostic(
    `${writes} writes acknowledged (${acked.websites.length} websites, ${acked.versions.length} deploys, ${acked.published.size} publishes, ${acked.keys.length} keys, ${acked.submissions.length} form posts, ${acked.anonymous.length} anonymous sites), ${lost.length} lost`,
  )
  for (const kind of Object.values(acked))
    assert.ok((kind instanceof Map ? kind.size : kind.length) > 0, 'each kind of write was acknowledged')
  assert.deepEqual(lost, [])

  // Every node, stopped once it applied the log's end, holds the same records, table by table.
  await waitUntil(
    async () => {
      const states = await Promise.all(nodes.map((n) => health(n.port)))
      return states.every((s) => s !== null && s.position === states[0]!.position)
    },
    "every node at the log's end",
    120_000,
    100,
  )
  for (const node of nodes) {
    node.run.child.kill('SIGTERM')
    assert.equal((await node.run.exited).code, 0, node.run.stderr())
  }
  const [first, ...others] = nodes.map((n) => tableDigests(n.env.PLINTH_DATA_DIR!))
  assert.ok(first!.size > 30, `${first!.size} tables`)
  for (const [i, digests] of others.entries())
    for (const [table, digest] of first!)
      assert.equal(digests.get(table), digest, `table ${table} of ${nodes[i + 1]!.name} against ${nodes[0]!.name}`)
})
