import assert from 'node:assert/strict'
import { createHmac } from 'node:crypto'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import { connect as netConnect } from 'node:net'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { jetstream, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream'
import { Kvm } from '@nats-io/kv'
import { connect, headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node'
import { pack } from 'msgpackr'
import { chainDigest, ClusterTrust } from '../../cluster/trust.js'
import { readSecretFile } from '../../core/installation-secret.js'
import { packEntry, unpackEntry } from '../../core/store/write-set.js'
import { freePort, freshRequest, keyedCall } from '../helpers/http.js'
import { clusterNodeEnv, prepareExampleNats, startClusterGround } from '../helpers/nats.js'
import { runFailingStart, spawnPlinth, type RunningPlinth } from '../helpers/process.js'
import { waitUntil } from '../helpers/wait.js'

/*
 * The cluster closed to strangers (issue 49), tried as an attacker would: three nats-servers from
 * deploy/cluster/ (TLS, nkey users, Plinth's permissions) and two nodes. A client without credentials,
 * or without TLS, is refused by NATS; a client holding Plinth's own NATS credentials but not the
 * installation's secret can publish anything Plinth can, and none of it is believed: log entries it
 * injects or replays are skipped the same way by every node (and the primary's next write goes after
 * them), a lease record it writes names nobody, a primary's address it names must answer a challenge
 * only a node can, a forward it forges or replays is a plain client's request, and an `applied`
 * message it forges neither slows writes nor reaches a header.
 */

const KEY = 'wb_' + 'T'.repeat(43)
const LEASE_MS = 1000

async function startNode(t: TestContext, dir: string, name: string, ground: Record<string, string>): Promise<RunningPlinth> {
  const port = await freePort()
  return spawnPlinth(
    t,
    clusterNodeEnv(
      { dir, name, port, ground, key: KEY, leaseMs: LEASE_MS, threads: 2 },
      // Only this address may scrape /metrics without a key: a request handed on in its name shows whose it is.
      { PLINTH_METRICS_ALLOW: '10.9.9.9' },
    ),
  )
}

/** What a node refused from the cluster, by kind (its /metrics, with the admin key). */
async function refusals(port: number): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text()
  const found: Record<string, number> = {}
  for (const [, what, count] of text.matchAll(/^plinth_cluster_refused_total\{node="[^"]+",what="([^"]+)"\} (\d+)$/gm))
    found[what!] = Number(count)
  return found
}

/** The log's messages: sequence, bytes and headers. */
async function logMessages(jsm: JetStreamManager): Promise<{ seq: number; data: Uint8Array; header: (name: string) => string }[]> {
  const { state } = await jsm.streams.info('PLINTH_LOG')
  const messages = []
  for (let seq = state.first_seq; seq <= state.last_seq; seq++) {
    const message = await jsm.streams.getMessage('PLINTH_LOG', { seq })
    if (message !== null) messages.push({ seq, data: message.data, header: (name: string) => message.header.get(name) })
  }
  return messages
}

/** A log part's headers, as a node writes them. */
function partHeaders(header: { epoch: number; node: string; index: number; of: number; prev: string; digest: string }, mac: string) {
  const h = natsHeaders()
  h.set('Plinth-Epoch', String(header.epoch))
  h.set('Plinth-Node', header.node)
  h.set('Plinth-Part', `${header.index}/${header.of}`)
  h.set('Plinth-Prev', header.prev)
  h.set('Plinth-Digest', header.digest)
  h.set('Plinth-Mac', mac)
  return h
}

/** A request to a node that names a client: what a replica hands the primary, with the headers given. */
function metricsAs(port: number, headers: Record<string, string>): Promise<number> {
  return freshRequest(port, 'localhost', '/metrics', headers).then((res) => res.status)
}

test('a client with NATS credentials but not the installation secret cannot inject an entry, take the lease, forge a forward or an applied message, or stop the cluster; one without credentials or TLS is refused', async (t) => {
  const { dir, env, access } = await startClusterGround(t, 'plinth-trust-')
  const trust = new ClusterTrust(readSecretFile(env.PLINTH_SECRET_FILE!))
  const a = await startNode(t, dir, 'a', env)
  const b = await startNode(t, dir, 'b', env)
  const callA = (method: string, path: string, body?: unknown) => keyedCall(a.port, KEY, method, path, body)
  const callB = (method: string, path: string, body?: unknown) => keyedCall(b.port, KEY, method, path, body)

  // 1. NATS refuses a client without credentials, and one that does not speak TLS.
  const [host, port] = access.urls[0]!.replace('tls://', '').split(':')
  const anonymous = await connect({
    servers: `${host}:${port}`,
    tls: { caFile: access.ca, ...({ checkServerIdentity: () => undefined } as object) },
    reconnect: false,
  }).then(
    (nc) => (void nc.close(), 'connected'),
    (error: unknown) => String(error),
  )
  assert.match(anonymous, /authorization violation/i)
  const plain = await new Promise<string>((resolve) => {
    let said = ''
    const socket = netConnect(Number(port), host!, () => socket.write('CONNECT {"verbose":false}\r\nPING\r\n'))
    socket.on('data', (chunk) => (said += chunk.toString()))
    socket.on('close', () => resolve(said))
    socket.on('error', () => undefined)
  })
  assert.match(plain, /"tls_required":true/)
  assert.doesNotMatch(plain, /PONG/, 'a client without TLS is never served')
  // A node whose CA did not sign the servers' certificates refuses them (and stops, saying so).
  const otherCa = prepareExampleNats(join(dir, 'other'), 1, '127.0.0.1').ca
  const wrongCa = await runFailingStart({
    ...env,
    PLINTH_CLUSTER_NATS_CA: otherCa,
    PLINTH_DATA_DIR: join(dir, 'x'),
    PLINTH_NODE_NAME: 'x',
    PLINTH_NODE_URL: 'http://127.0.0.1:1',
  })
  assert.notEqual(wrongCa.code, 0)
  assert.match(wrongCa.stderr, /NATS \(PLINTH_CLUSTER_NATS [^)]+\) refused this node: [^\n]*certificate[^\n]*PLINTH_CLUSTER_NATS_CA/)

  // An API key, made and revoked: its creation entry is what an attacker replays below.
  const revoked = await callA('POST', '/v1/api-keys', { name: 'revoked later', access: { kind: 'organization', role: 'admin' } })
  assert.equal(revoked.status, 201, JSON.stringify(revoked.body))
  const site = await callA('POST', '/v1/websites', { name: 'Shared', kind: 'static', subdomain: 'shared' })
  assert.equal(site.status, 201)
  assert.equal(
    (await callA('POST', `/v1/websites/${site.body.id}/deploy/json`, { files: [{ path: 'index.html', content: '<h1>one</h1>' }] })).status,
    201,
  )
  assert.equal((await callA('POST', `/v1/websites/${site.body.id}/publish`)).status, 200)

  // 2. The attacker: Plinth's own NATS user, without the installation's secret.
  const nc: NatsConnection = await access.connect()
  t.after(() => nc.close())
  const js = jetstream(nc)
  const jsm = await jetstreamManager(nc, { checkAPI: false })
  const created = (await logMessages(jsm)).find((m) => {
    try {
      return unpackEntry(m.data).writes.some(([table, key]) => table === 'api-keys' && key === revoked.body.id)
    } catch {
      return false
    }
  })
  assert.ok(created, "the key's creation is an entry of the log")
  assert.equal((await callA('DELETE', `/v1/api-keys/${revoked.body.id}`)).status, 200)
  assert.equal((await keyedCall(a.port, revoked.body.secret, 'GET', '/v1/me')).status, 401)

  const acknowledged: string[] = []
  const write = async (via: (method: string, path: string, body?: unknown) => ReturnType<typeof callA>, name: string) => {
    const res = await via('POST', '/v1/websites', { name, kind: 'static', subdomain: name })
    if (res.status === 201) acknowledged.push(res.body.id)
    return res
  }
  // Garbage, the key's creation replayed as it is (signed, but out of the chain) and stripped of its
  // signature, and messages taking the ids a primary of the old scheme would have used next.
  // The log's last entry as it stands (what a forged next entry must follow).
  const lastEntry = (await logMessages(jsm)).findLast((m) => /^[0-9a-f]{64}$/.test(m.header('Plinth-Digest')))!
  const epoch = JSON.parse((await (await new Kvm(nc).open('plinth-lease')).get('primary'))!.string()).epoch as number
  const { state } = await jsm.streams.info('PLINTH_LOG')
  for (let i = 1; i <= 3; i++) await js.publish('plinth.log', Buffer.from(`garbage ${i}`), { msgID: `${epoch}-${state.last_seq + i}` })
  const replayed = natsHeaders()
  for (const name of ['Plinth-Epoch', 'Plinth-Node', 'Plinth-Part', 'Plinth-Prev', 'Plinth-Digest', 'Plinth-Mac'])
    replayed.set(name, created.header(name))
  await js.publish('plinth.log', created.data, { headers: replayed })
  await js.publish('plinth.log', created.data)
  // And the key's creation forged as the next entry: chained after the log's last entry, its MAC made
  // with a key other than the installation's.
  const forgedHeader = {
    epoch: Number(lastEntry.header('Plinth-Epoch')),
    node: 'a',
    index: 1,
    of: 1,
    prev: lastEntry.header('Plinth-Digest'),
    digest: chainDigest(lastEntry.header('Plinth-Digest'), created.data),
  }
  await js.publish('plinth.log', created.data, {
    headers: partHeaders(forgedHeader, new ClusterTrust(Buffer.alloc(32, 7)).partMac(forgedHeader, created.data)),
  })
  // The primary's next write goes after them, acknowledged; so does one handed on by the replica.
  const started = Date.now()
  assert.equal((await write(callA, 'after-garbage')).status, 201)
  assert.equal((await write(callB, 'through-b')).status, 201)
  assert.ok(Date.now() - started < 3000, `the writes after the garbage took ${Date.now() - started} ms`)
  assert.equal((await keyedCall(b.port, revoked.body.secret, 'GET', '/v1/me')).status, 401, 'the replayed key is not applied')

  // 3. Forged `applied` messages: a name that would inject a header, and a replica that never answers.
  // With the headers a node's message carries (when, and a MAC), made without the key.
  const said = () => {
    const h = natsHeaders()
    h.set('Plinth-At', String(Date.now()))
    h.set('Plinth-Mac', 'ab'.repeat(32))
    return { headers: h }
  }
  nc.publish('plinth.applied', JSON.stringify({ node: 'ghost\r\nset-cookie: stolen=1', seq: 0 }), said())
  nc.publish('plinth.applied', JSON.stringify({ node: 'ghost', seq: 0 }), said())
  nc.publish('plinth.views', Buffer.from('not page views'))
  // A replica's own applied message, said again: each copy is refused (and counted).
  const heard = nc.subscribe('plinth.applied', { max: 1 })
  const [captured1] = await Promise.all([
    (async () => {
      for await (const m of heard) return m
    })(),
    Promise.resolve(),
  ])
  const before = (await refusals(a.port)).message ?? 0
  for (let i = 0; i < 3; i++) nc.publish('plinth.applied', captured1!.data, { headers: captured1!.headers })
  await nc.flush()
  await waitUntil(
    async () => ((await refusals(a.port)).message ?? 0) >= before + 3 || null,
    'the primary to refuse the replayed applied messages',
  )
  const timed = Date.now()
  const fast = await write(callA, 'not-slowed')
  assert.equal(fast.status, 201)
  assert.ok(Date.now() - timed < 1500, `a write after forged applied messages took ${Date.now() - timed} ms`)
  assert.equal(fast.headers.get('x-plinth-lagging'), null)
  assert.equal(fast.headers.get('set-cookie'), null)

  // 4. Forwards. A replica's signature names the client, once, within seconds, to the primary only.
  const secret = readSecretFile(env.PLINTH_SECRET_FILE!)
  const oldStatic = createHmac('sha256', secret).update('cluster forward').digest('hex')
  const signed = (at: number) => trust.signForward({ method: 'GET', host: 'localhost', target: '/metrics', peer: '10.9.9.9' }, at)
  assert.equal(await metricsAs(a.port, {}), 401, 'the test itself may not scrape without a key')
  assert.equal(await metricsAs(a.port, { 'x-plinth-forward': oldStatic, 'x-plinth-peer': '10.9.9.9' }), 401, 'the static secret of before')
  assert.equal(
    await metricsAs(a.port, {
      'x-plinth-cluster-forward': `${Date.now()}.${'0'.repeat(32)}.${'f'.repeat(64)}`,
      'x-plinth-cluster-peer': '10.9.9.9',
    }),
    401,
  )
  const once = signed(Date.now())
  assert.equal(
    await metricsAs(a.port, { 'x-plinth-cluster-forward': once, 'x-plinth-cluster-peer': '10.9.9.9' }),
    200,
    'a signed forward names its client',
  )
  assert.equal(await metricsAs(a.port, { 'x-plinth-cluster-forward': once, 'x-plinth-cluster-peer': '10.9.9.9' }), 401, 'replayed')
  assert.equal(
    await metricsAs(a.port, { 'x-plinth-cluster-forward': signed(Date.now() - 60_000), 'x-plinth-cluster-peer': '10.9.9.9' }),
    401,
    'a minute old',
  )
  assert.equal(
    await metricsAs(a.port, { 'x-plinth-cluster-forward': signed(Date.now()), 'x-plinth-cluster-peer': '10.9.9.8' }),
    401,
    'another client than it names',
  )
  assert.equal(
    await metricsAs(b.port, { 'x-plinth-cluster-forward': signed(Date.now()), 'x-plinth-cluster-peer': '10.9.9.9' }),
    401,
    'a replica takes none',
  )

  // 5. The lease. A record no node signed, naming an outside address, then a deletion: the primary leads
  // on, writes it back, and nothing reaches the outside address; a signed record naming it (a key stolen
  // elsewhere) is challenged first, and the address cannot answer (relaying the challenge to the real
  // primary gets a proof for the primary's address): no API request reaches it either.
  // The outside address relays a challenge to the real primary and answers with its proof.
  let relayTo = a.port
  const captured: { url: string; headers: IncomingHttpHeaders }[] = []
  const capture = createServer((req, res) => {
    captured.push({ url: req.url ?? '', headers: req.headers })
    if (req.url !== '/_platform/cluster/challenge') return void res.end('{}')
    void fetch(`http://127.0.0.1:${relayTo}/_platform/cluster/challenge`, {
      headers: { 'x-plinth-challenge': String(req.headers['x-plinth-challenge']) },
    }).then(
      async (relayed) => res.writeHead(relayed.status, { 'content-type': 'application/json' }).end(await relayed.text()),
      () => res.end('{}'),
    )
  })
  await new Promise<void>((resolve) => capture.listen(0, '127.0.0.1', resolve))
  t.after(() => void capture.close())
  const outside = `http://127.0.0.1:${(capture.address() as { port: number }).port}`
  const lease = await new Kvm(nc).open('plinth-lease')
  type Record = { node: string; url: string; epoch: number; renewal: number }
  const record = () => lease.get('primary').then((entry) => JSON.parse(entry!.string()) as Record)
  const leads = (r: Record, than: Record) => r.node === than.node && r.url === than.url && r.epoch === than.epoch
  const ours = await record()
  const rewritten = (after: Record) =>
    waitUntil(async () => {
      const now = await record()
      return leads(now, ours) && now.renewal > after.renewal ? now : null
    }, 'the primary to write its own record back').catch(async (error: Error) => {
      throw new Error(
        `${error.message}; record ${JSON.stringify(await record())}; a: ${a.stderr().slice(-3000)}; b: ${b.stderr().slice(-2000)}`,
      )
    })
  await lease.put('primary', JSON.stringify({ node: 'evil', url: outside, epoch: ours.epoch + 1000, renewal: 1 }))
  for (let i = 0; i < 6; i++) {
    assert.equal((await callB('GET', '/v1/me')).status, 200, 'the API through the replica, with a forged lease record')
    // Pauses that are the point: the forged record stands for two leases, and nothing follows it.
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS / 3))
  }
  await rewritten(ours)
  await lease.delete('primary')
  // A pause that is the point: two leases with the record deleted, and no replica takes over.
  await new Promise((resolve) => setTimeout(resolve, 2 * LEASE_MS))
  assert.ok(leads(await rewritten(ours), ours), 'a deletion makes no replica take over')
  // The primary's own record of before, said again over and over: older than the live one, it names nobody.
  const replaying = setInterval(() => void lease.put('primary', JSON.stringify(ours)).catch(() => undefined), 50)
  // A pause that is the point: two leases of replays, and the primary stays.
  await new Promise((resolve) => setTimeout(resolve, 2 * LEASE_MS))
  clearInterval(replaying)
  assert.equal(JSON.parse((await freshRequest(a.port, 'localhost', '/_platform/health')).body.toString()).role, 'primary')
  assert.equal((await callB('GET', '/v1/me')).status, 200)
  assert.equal((await write(callA, 'lease-kept')).status, 201)

  // 6. The primary killed, its last record said again all along by the attacker: b leads once that record
  // goes a lease without moving on, after reading every message above; a restarts and reads them all.
  await rewritten(ours)
  a.child.kill('SIGKILL')
  await a.exited
  const lastRecord = await record()
  const deadRecord = setInterval(() => void lease.put('primary', JSON.stringify(lastRecord)).catch(() => undefined), 100)
  await waitUntil(
    async () => ((await write(callB, `after-failover-${acknowledged.length}`)).status === 201 ? true : null),
    'b to lead',
    20_000,
    300,
  )
  clearInterval(deadRecord)
  // Started again once its name is free (its node entry lives two leases after its last renewal).
  const again = await waitUntil(
    () =>
      startNode(t, dir, 'a', env).catch((error: Error) => (/another node named "a"/.test(error.message) ? null : Promise.reject(error))),
    'a to start again',
    20_000,
    500,
  )
  assert.match(again.stdout(), /listening on/)

  // An entry signed with the secret (what a node's bug, or another build, could write) whose record has
  // not its table's shape: it would make the key list unreadable. Every node skips it, the primary's
  // next write goes after it.
  const messages = await logMessages(jsm)
  const tail = messages.findLast((m) => m.header('Plinth-Mac') !== '' && m.header('Plinth-Part') === '1/1')!
  const bytes = packEntry({ writes: [['api-keys', 'key_broken', pack({ v: 1, broken: true })]], blobs: [] })
  const prev = tail.header('Plinth-Digest')
  const header = { epoch: Number(tail.header('Plinth-Epoch')), node: 'b', index: 1, of: 1, prev, digest: chainDigest(prev, bytes) }
  await js.publish('plinth.log', bytes, { headers: partHeaders(header, trust.partMac(header, bytes)) })
  assert.equal((await write(callB, 'after-malformed')).status, 201)
  for (const port of [b.port, again.port]) {
    assert.equal((await keyedCall(port, KEY, 'GET', '/v1/api-keys')).status, 200, 'the key list reads on every node')
    assert.equal((await keyedCall(port, revoked.body.secret, 'GET', '/v1/me')).status, 401, 'the revoked key stays revoked on every node')
  }
  for (const id of acknowledged)
    assert.equal((await keyedCall(again.port, KEY, 'GET', `/v1/websites/${id}`)).status, 200, `acknowledged write ${id}`)
  assert.equal((await freshRequest(again.port, 'shared.localhost', '/')).body.toString(), '<h1>one</h1>')
  const counted = await refusals(b.port)
  assert.ok((counted.log_unsigned ?? 0) >= 5, JSON.stringify(counted))
  assert.ok((counted.log_unchained ?? 0) >= 1, JSON.stringify(counted))
  assert.equal(counted.log_malformed, 1, JSON.stringify(counted))
  assert.ok((counted.message ?? 0) >= 2, JSON.stringify(counted))
  assert.equal((await refusals(again.port)).log_malformed, 1)
  assert.match(b.stderr(), /a message of the log was not applied \(every node skips it the same way\)/)

  // 6b. A signed record of a new epoch (the secret stolen elsewhere) naming the outside address, which
  // relays the challenge to the real primary (b): b steps down, and the replica hands the outside address
  // nothing; a node takes the lease once that record goes a lease without moving on.
  relayTo = b.port
  const live = await record()
  await lease.put('primary', JSON.stringify(trust.signLease({ ...live, url: outside, epoch: live.epoch + 1, renewal: 1 })))
  for (let i = 0; i < 6; i++) {
    const res = await keyedCall(again.port, KEY, 'GET', '/v1/me')
    assert.ok(res.status === 200 || res.status === 503, `through a while the lease names the outside address: ${res.status}`)
    // Pauses that are the point: the record naming the outside address stands for a lease and a half.
    await new Promise((resolve) => setTimeout(resolve, LEASE_MS / 4))
  }
  assert.ok(
    captured.every(
      (c) => c.url === '/_platform/cluster/challenge' && c.headers.authorization === undefined && c.headers.cookie === undefined,
    ),
    `the outside address was sent ${JSON.stringify(captured)}`,
  )
  assert.ok(captured.length > 0, 'a replica challenged the address the signed record named')
  await waitUntil(
    async () => ((await keyedCall(again.port, KEY, 'GET', '/v1/me')).status === 200 ? true : null),
    'a node to lead again',
    15_000,
    200,
  )

  // 7. The log going on from an entry a node could not apply (what nodes of two builds would do): the
  // replica stops (exit 75) saying why, rather than follow nothing.
  const role = async (node: RunningPlinth) =>
    JSON.parse((await freshRequest(node.port, 'localhost', '/_platform/health')).body.toString()).role
  const replica = (await role(b)) === 'replica' ? b : again
  const now = (await logMessages(jsm)).findLast((m) => m.header('Plinth-Mac') !== '' && m.header('Plinth-Part') === '1/1')!
  const stranger = {
    epoch: Number(now.header('Plinth-Epoch')),
    node: 'b',
    index: 1,
    of: 1,
    prev: now.header('Plinth-Digest'),
    digest: chainDigest(now.header('Plinth-Digest'), bytes),
  }
  await js.publish('plinth.log', bytes, { headers: partHeaders(stranger, trust.partMac(stranger, bytes)) })
  const empty = packEntry({ writes: [], blobs: [] })
  const after = { ...stranger, prev: stranger.digest, digest: chainDigest(stranger.digest, empty) }
  await js.publish('plinth.log', empty, { headers: partHeaders(after, trust.partMac(after, empty)) })
  assert.equal((await replica.exited).code, 75)
  assert.match(replica.stderr(), /the log goes on at \d+ from an entry this node could not apply[^\n]*Run the same Plinth on every node/)
})
