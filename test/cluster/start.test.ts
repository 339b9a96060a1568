import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { cpSync } from 'node:fs'
import { test, type TestContext } from 'node:test'
import { freePort } from '../helpers/http.js'
import { startNatsCluster } from '../helpers/nats.js'
import { launchPlinth, runFailingStart, spawnPlinth } from '../helpers/process.js'
import { tempDir } from '../helpers/server.js'
import { waitUntil } from '../helpers/wait.js'

/*
 * A cluster node's start as an operator meets it (issue 39): bad configuration named, NATS waited for,
 * a server that cannot hold the log refused, one name per node, a data directory ahead of the log refused.
 */

const KEY = 'wb_' + 'D'.repeat(43)

function nodeEnv(dir: string, name: string, nats: string, port: number): Record<string, string> {
  return {
    PORT: String(port),
    PLINTH_DATA_DIR: `${dir}/${name}`,
    PLINTH_ADMIN_KEY: KEY,
    PLINTH_SERVE_THREADS: '1',
    PLINTH_CLUSTER_NATS: nats,
    PLINTH_NODE_NAME: name,
    PLINTH_NODE_URL: `http://127.0.0.1:${port}`,
    PLINTH_CLUSTER_LEASE_MS: '1000',
  }
}

test('bad cluster settings are refused at start, each naming its variable', async (t) => {
  const dir = tempDir(t)
  const base = nodeEnv(dir, 'a', '127.0.0.1:4222', 0)
  for (const [name, value, says] of [
    ['PLINTH_CLUSTER_NATS', 'http://x y', /PLINTH_CLUSTER_NATS: must be comma-separated NATS server addresses/],
    ['PLINTH_NODE_NAME', 'Node A', /PLINTH_NODE_NAME: must name this node/],
    ['PLINTH_NODE_URL', 'localhost:8080', /PLINTH_NODE_URL: must be the origin other nodes reach/],
    ['PLINTH_CLUSTER_LEASE_MS', '10', /PLINTH_CLUSTER_LEASE_MS: must be a number of milliseconds/],
  ] as const) {
    const { code, stderr } = await runFailingStart({ ...base, [name]: value })
    assert.equal(code, 2, stderr)
    assert.match(stderr, says)
  }
})

test('a node waits for NATS, naming the servers, and starts when one comes; a second node with its name is refused', async (t: TestContext) => {
  const dir = tempDir(t)
  const natsPort = await freePort()
  const port = await freePort()
  const a = launchPlinth(t, nodeEnv(dir, 'a', `127.0.0.1:${natsPort}`, port))
  await waitUntil(() => /cannot reach NATS[^\n]*127\.0\.0\.1:\d+/.test(a.stdout() + a.stderr()), 'the node to say it cannot reach NATS')
  const server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(natsPort), '-js', '-sd', `${dir}/nats`], { stdio: 'ignore' })
  t.after(() => void server.kill('SIGKILL'))
  await waitUntil(() => /listening on/.test(a.stdout()), 'the node to start once NATS answers', 20_000)
  assert.match(a.stdout() + a.stderr(), /leads the cluster/)
  // Another data directory, the same name.
  const twin = await runFailingStart({ ...nodeEnv(dir, 'a', `127.0.0.1:${natsPort}`, await freePort()), PLINTH_DATA_DIR: `${dir}/twin` })
  assert.notEqual(twin.code, 0)
  assert.match(twin.stderr, /another node named "a" is running[^\n]*give each node its own PLINTH_NODE_NAME/)
})

test('a nats-server without JetStream is refused with what to change', async (t) => {
  const dir = tempDir(t)
  const natsPort = await freePort()
  const server = spawn('nats-server', ['-a', '127.0.0.1', '-p', String(natsPort)], { stdio: 'ignore' })
  t.after(() => void server.kill('SIGKILL'))
  await new Promise((resolve) => setTimeout(resolve, 300))
  const { code, stderr } = await runFailingStart(nodeEnv(dir, 'a', `127.0.0.1:${natsPort}`, await freePort()))
  assert.notEqual(code, 0)
  assert.match(stderr, /runs without JetStream; start it with `jetstream \{\}`/)
})

test('a data directory that reached further than the log (its last writes never acknowledged) is refused', async (t) => {
  const dir = tempDir(t)
  const [first] = await startNatsCluster(t, `${dir}/one`, 1)
  const a = await spawnPlinth(t, nodeEnv(dir, 'a', first!.url, await freePort()))
  a.child.kill('SIGTERM')
  await a.exited
  // The same data directory against another cluster's log, which never had its entries.
  const [other] = await startNatsCluster(t, `${dir}/two`, 1)
  // (the control socket is left out: a socket file cannot be copied, and one left by a slow exit may remain)
  cpSync(`${dir}/a`, `${dir}/b`, { recursive: true, filter: (source) => !source.endsWith('control.sock') })
  const { code, stderr } = await runFailingStart(nodeEnv(dir, 'b', other!.url, await freePort()))
  assert.notEqual(code, 0)
  assert.match(
    stderr,
    /reached log entry \d+ \(epoch \d+\), which the cluster's log does not have \(it ends at 0\)[^\n]*Set PLINTH_CLUSTER_BACKUPS to a backup root/,
  )
})

test("an embedded server's data directory is refused as a cluster's node, with what to do", async (t) => {
  const dir = tempDir(t)
  const [server] = await startNatsCluster(t, `${dir}/nats`, 1)
  const embedded = await spawnPlinth(t, { PLINTH_DATA_DIR: `${dir}/a`, PLINTH_ADMIN_KEY: KEY, PLINTH_SERVE_THREADS: '1' })
  embedded.child.kill('SIGTERM')
  await embedded.exited
  const { code, stderr } = await runFailingStart(nodeEnv(dir, 'a', server!.url, await freePort()))
  assert.notEqual(code, 0)
  assert.match(stderr, /holds an installation made outside the cluster[^\n]*start a cluster's first node on an empty PLINTH_DATA_DIR/)
})
