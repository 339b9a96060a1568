import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { cpSync, existsSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { headers, nkeys } from '@nats-io/transport-node'
import { jetstream } from '@nats-io/jetstream'
import { open } from 'lmdb'
import { chainDigest, ClusterTrust } from '../../cluster/trust.js'
import { readSecretFile } from '../../core/installation-secret.js'
import { packEntry } from '../../core/store/write-set.js'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { freePort, keyedCall } from '../helpers/http.js'
import { clusterNodeEnv, clusterSecret, startNatsCluster, type NatsAccess } from '../helpers/nats.js'
import { launchPlinth, portOpen, runCli, runFailingStart, spawnPlinth, untilUp } from '../helpers/process.js'
import { tempDir } from '../helpers/server.js'
import { waitUntil } from '../helpers/wait.js'

/*
 * A cluster node's start as an operator meets it (issue 39): bad configuration named, NATS waited for,
 * a server that cannot hold the log refused, one name per node, a data directory ahead of the log refused.
 */

const KEY = 'wb_' + 'D'.repeat(43)

/** The installation's secret file of a test's nodes (made once per directory). */
function secretFile(dir: string): string {
  const file = join(dir, 'installation.key')
  if (!existsSync(file)) clusterSecret(dir)
  return file
}

/** A node's settings; on loopback plain NATS without credentials is allowed (the tests that give it `access` use TLS and a user). */
function nodeEnv(dir: string, name: string, nats: string, port: number, access?: NatsAccess): Record<string, string> {
  const ground = { PLINTH_SECRET_FILE: secretFile(dir), PLINTH_API_ORIGIN: 'http://localhost', ...(access === undefined ? {} : access.env) }
  return clusterNodeEnv({ dir, name, port, ground, key: KEY, leaseMs: 1000 }, { PLINTH_CLUSTER_NATS: nats })
}

test('bad cluster settings are refused at start, each naming its variable: NATS off this machine without TLS and credentials, credentials in the address, no installation secret, no API origin', async (t) => {
  const dir = tempDir(t)
  const base = nodeEnv(dir, 'a', '127.0.0.1:4222', 0)
  writeFileSync(`${dir}/garbage`, 'not a credential\nat all\n')
  writeFileSync(`${dir}/short.key`, 'abc123\n', { mode: 0o600 })
  for (const [name, value, says] of [
    ['PLINTH_CLUSTER_NATS', 'http://x y', /PLINTH_CLUSTER_NATS: must be comma-separated NATS server addresses/],
    [
      'PLINTH_CLUSTER_NATS',
      '10.0.0.1:4222',
      /PLINTH_CLUSTER_NATS: names 10\.0\.0\.1:4222, which is not on this machine, and the connection has neither credentials nor TLS: anyone on the network could read every record[^\n]*tls:\/\/host:port with PLINTH_CLUSTER_NATS_CA[^\n]*PLINTH_CLUSTER_NATS_CREDS/,
    ],
    [
      'PLINTH_CLUSTER_NATS',
      'tls://10.0.0.1:4222',
      /PLINTH_CLUSTER_NATS_CREDS: names 10\.0\.0\.1:4222, which is not on this machine, and the connection has no credentials/,
    ],
    [
      'PLINTH_CLUSTER_NATS',
      'nats://plinth:hunter2@10.0.0.1:4222',
      /PLINTH_CLUSTER_NATS: must not carry credentials[^\n]*PLINTH_CLUSTER_NATS_CREDS/,
    ],
    ['PLINTH_CLUSTER_NATS_CREDS', `${dir}/garbage`, /PLINTH_CLUSTER_NATS_CREDS: names [^\n]*garbage, which holds none of what NATS takes/],
    [
      'PLINTH_SECRET_FILE',
      '',
      /PLINTH_SECRET_FILE: must name the installation's secret file on every node of a cluster[^\n]*openssl rand -hex 32/,
    ],
    ['PLINTH_SECRET_FILE', `${dir}/absent.key`, /PLINTH_SECRET_FILE: names [^\n]*absent\.key, which does not exist/],
    ['PLINTH_SECRET_FILE', `${dir}/short.key`, /secret file [^\n]*short\.key does not hold 64 hex digits/],
    ['PLINTH_NODE_NAME', 'Node A', /PLINTH_NODE_NAME: must name this node/],
    ['PLINTH_NODE_URL', 'localhost:8080', /PLINTH_NODE_URL: must be the origin other nodes reach/],
    ['PLINTH_CLUSTER_LEASE_MS', '10', /PLINTH_CLUSTER_LEASE_MS: must be a number of milliseconds/],
    ['PLINTH_API_ORIGIN', '', /PLINTH_API_ORIGIN: must be set on every node of a cluster, the same on each/],
  ] as const) {
    const { code, stderr } = await runFailingStart({ ...base, [name]: value })
    assert.equal(code, 2, stderr)
    assert.match(stderr, says)
  }
  // The seed of a NATS user key, made for the nodes: written to its file alone, its public key printed.
  const made = await runCli(['nats-key', `${dir}/nats.nk`], {})
  assert.equal(made.code, 0, made.stderr)
  const seed = readFileSync(`${dir}/nats.nk`, 'utf8').trim()
  assert.equal(statSync(`${dir}/nats.nk`).mode & 0o777, 0o600)
  assert.match(made.stdout, new RegExp(`\\n${nkeys.fromSeed(new TextEncoder().encode(seed)).getPublicKey()}\\n$`))
  const again = await runCli(['nats-key', `${dir}/nats.nk`], {})
  assert.equal(again.code, 2)
  assert.match(again.stderr, /exists already; choose a new file/)
  assert.equal(readFileSync(`${dir}/nats.nk`, 'utf8').trim(), seed)
})

test('a node waits for NATS, naming the servers, and starts when one comes (a user and password from a file); a second node with its name is refused; the node killed and started again a second later takes its name back; a node giving another API origin is refused', async (t: TestContext) => {
  const dir = tempDir(t)
  const natsPort = await freePort()
  const port = await freePort()
  writeFileSync(`${dir}/nats.pass`, 'plinth:s3cret:with:colons\n', { mode: 0o600 })
  // The default lease (its name entry lives two: 10 s), so a restart a second after a kill finds the old entry on a slow day too.
  const withPassword = (env: Record<string, string>) => ({
    ...env,
    PLINTH_CLUSTER_NATS_CREDS: `${dir}/nats.pass`,
    PLINTH_CLUSTER_LEASE_MS: '5000',
  })
  const a = launchPlinth(t, withPassword(nodeEnv(dir, 'a', `127.0.0.1:${natsPort}`, port)))
  await waitUntil(() => /cannot reach NATS[^\n]*127\.0\.0\.1:\d+/.test(a.stdout() + a.stderr()), 'the node to say it cannot reach NATS')
  const server = spawn(
    'nats-server',
    ['-a', '127.0.0.1', '-p', String(natsPort), '-js', '-sd', `${dir}/nats`, '--user', 'plinth', '--pass', 's3cret:with:colons'],
    { stdio: 'ignore' },
  )
  t.after(() => void server.kill('SIGKILL'))
  await waitUntil(() => /listening on/.test(a.stdout()), 'the node to start once NATS answers', 20_000)
  assert.match(a.stdout() + a.stderr(), /leads the cluster/)
  // Another data directory, the same name.
  const twin = await runFailingStart(
    withPassword({ ...nodeEnv(dir, 'a', `127.0.0.1:${natsPort}`, await freePort()), PLINTH_DATA_DIR: `${dir}/twin` }),
  )
  assert.notEqual(twin.code, 0)
  assert.match(twin.stderr, /another node named "a" is running[^\n]*give each node its own PLINTH_NODE_NAME/)

  // Killed, and started again a second later as systemd does (plinth.service: Restart=always, RestartSec=1):
  // its name is still held by its own entry (two leases), and it takes it over instead of exiting.
  a.child.kill('SIGKILL')
  await a.exited
  await new Promise((resolve) => setTimeout(resolve, 1000)) // the unit's RestartSec, the point of the test
  const again = await spawnPlinth(t, withPassword(nodeEnv(dir, 'a', `127.0.0.1:${natsPort}`, await freePort())))
  assert.match(again.stderr(), /this node's name was still held by its own run before this start \(the same data directory\): taken over/)
  assert.match(again.stdout() + again.stderr(), /leads the cluster/)

  // Every node serves the API at the origin the cluster recorded (its first primary's): another is refused.
  const elsewhere = await runFailingStart(
    withPassword({ ...nodeEnv(dir, 'b', `127.0.0.1:${natsPort}`, await freePort()), PLINTH_API_ORIGIN: 'http://localhost:9999' }),
  )
  assert.equal(elsewhere.code, 2, elsewhere.stderr)
  assert.match(
    elsewhere.stderr,
    /PLINTH_API_ORIGIN: is http:\/\/localhost:9999 on this node, and the cluster serves its API at http:\/\/localhost \(recorded by the first node that led it\): give every node PLINTH_API_ORIGIN=http:\/\/localhost/,
  )
})

test('a nats-server without JetStream is refused with what to change', async (t) => {
  const dir = tempDir(t)
  const natsPort = await freePort()
  const server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(natsPort)], { stdio: ['ignore', 'ignore', 'pipe'] })
  let said = ''
  server.stderr!.on('data', (c: Buffer) => (said += c.toString()))
  t.after(() => void server.kill('SIGKILL'))
  await untilUp(
    server,
    () => portOpen(natsPort),
    'nats-server without JetStream',
    () => said,
  )
  const { code, stderr } = await runFailingStart(nodeEnv(dir, 'a', `127.0.0.1:${natsPort}`, await freePort()))
  assert.notEqual(code, 0)
  assert.match(stderr, /runs without JetStream; start it with `jetstream \{\}`/)
})

test('a data directory that reached further than the log (its last writes never acknowledged) is refused', async (t) => {
  const dir = tempDir(t)
  const one = await startNatsCluster(t, `${dir}/one`, 1)
  const a = await spawnPlinth(t, nodeEnv(dir, 'a', one[0]!.url, await freePort(), one.access))
  a.child.kill('SIGTERM')
  await a.exited
  // The same data directory against another cluster's log, which never had its entries.
  const two = await startNatsCluster(t, `${dir}/two`, 1)
  // (the control socket is left out: a socket file cannot be copied, and one left by a slow exit may remain)
  cpSync(`${dir}/a`, `${dir}/b`, { recursive: true, filter: (source) => !source.endsWith('control.sock') })
  const { code, stderr } = await runFailingStart(nodeEnv(dir, 'b', two[0]!.url, await freePort(), two.access))
  assert.notEqual(code, 0)
  assert.match(
    stderr,
    /reached log entry \d+ \(epoch \d+\), which the cluster's log does not have \(it ends at 0\)[^\n]*Set PLINTH_CLUSTER_BACKUPS to a backup root/,
  )
})

test("an embedded server's data directory is refused as a cluster's node, with what to do", async (t) => {
  const dir = tempDir(t)
  const nats = await startNatsCluster(t, `${dir}/nats`, 1)
  const embedded = await spawnPlinth(t, { PLINTH_DATA_DIR: `${dir}/a`, PLINTH_ADMIN_KEY: KEY, PLINTH_SERVE_THREADS: '1' })
  embedded.child.kill('SIGTERM')
  await embedded.exited
  const { code, stderr } = await runFailingStart(nodeEnv(dir, 'a', nats[0]!.url, await freePort(), nats.access))
  assert.notEqual(code, 0)
  assert.match(stderr, /holds an installation made outside the cluster[^\n]*start a cluster's first node on an empty PLINTH_DATA_DIR/)
})

test("a primary's data directory whose last entries are in the log only as copies no node applies (after a message it did not write) is refused, not followed", async (t) => {
  const dir = tempDir(t)
  const nats = await startNatsCluster(t, `${dir}/nats`, 1)
  const env = nodeEnv(dir, 'a', nats[0]!.url, await freePort(), nats.access)
  const a = await spawnPlinth(t, env)
  assert.equal((await keyedCall(a.port, KEY, 'POST', '/v1/websites', { name: 'Before', kind: 'static', subdomain: 'before' })).status, 201)
  a.child.kill('SIGTERM')
  await a.exited
  // As a primary stopped in the middle of a repair leaves it: its position an entry sealed after the last
  // one known in, whose copy sits in the log where no reader applies it (it follows an entry that is not
  // there), after a message no node signed.
  const db = open({ path: `${dir}/a/db`, maxDbs: 128 })
  const replication = db.openDB<{ seq: number; epoch: number; digest: string }, string>({ name: 'replication', encoding: 'msgpack' })
  const known = replication.get('position')!
  const nc = await nats.access.connect()
  t.after(() => nc.close())
  const js = jetstream(nc)
  const junk = await js.publish('plinth.log', Buffer.from('junk'))
  const bytes = packEntry({ writes: [], blobs: [] })
  const prev = 'ab'.repeat(32)
  const header = { epoch: known.epoch, node: 'a', index: 1, of: 1, prev, digest: chainDigest(prev, bytes) }
  const h = headers()
  for (const [name, value] of Object.entries({
    'Plinth-Epoch': String(header.epoch),
    'Plinth-Node': 'a',
    'Plinth-Part': '1/1',
    'Plinth-Prev': prev,
    'Plinth-Digest': header.digest,
    'Plinth-Mac': new ClusterTrust(readSecretFile(env.PLINTH_SECRET_FILE!)).partMac(header, bytes),
  }))
    h.set(name, value)
  await js.publish('plinth.log', bytes, { headers: h })
  await replication.put('position', { seq: junk.seq + 1, epoch: known.epoch, digest: header.digest })
  await replication.put('acked', known)
  await db.close()
  const { code, stderr } = await runFailingStart(env)
  assert.notEqual(code, 0)
  assert.match(
    stderr,
    new RegExp(`holds entries after log entry ${known.seq} \\(up to its own ${junk.seq + 1}, epoch ${known.epoch}\\) that no node applies`),
  )
})
