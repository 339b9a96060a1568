import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { test } from 'node:test'
import { freePort, freshRequest, keyedCall } from '../helpers/http.js'
import { clusterNodeEnv, startClusterGround } from '../helpers/nats.js'
import { runCli, spawnPlinth, type RunningPlinth } from '../helpers/process.js'
import { shareFiles } from '../helpers/ticket.js'
import { API_POLL_MS, waitUntil } from '../helpers/wait.js'
import { listBackups } from '../../core/backup/root.js'

/*
 * The continuous archive on a cluster's node (issue 53, part 4): the node the operator tells to
 * (PLINTH_BACKUP_ARCHIVE, a replica here) archives the log's entries as it applies them, and its own
 * once it leads; a point in time restores into a data directory of its own, served by a single server.
 */

const KEY = 'wb_' + 'R'.repeat(43)

const call = (port: number, method: string, path: string, body?: unknown) => keyedCall(port, KEY, method, path, body)

async function publish(port: number, websiteId: string, html: string): Promise<void> {
  assert.equal(
    (await call(port, 'POST', `/v1/websites/${websiteId}/deploy/json`, { files: [{ path: 'index.html', content: html }] })).status,
    201,
  )
  assert.equal((await call(port, 'POST', `/v1/websites/${websiteId}/publish`)).status, 200)
}

/** Waits until a node's archive holds everything it applied or committed (its /metrics); its position then. */
async function archived(port: number): Promise<number> {
  const text = await waitUntil(
    async () => {
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${KEY}` } })).text()
      return /^plinth_backup_archive_behind_entries 0$/m.test(text) ? text : null
    },
    'the archive to hold every entry',
    5000,
    50,
  )
  return Number(/^plinth_backup_archive_position (\d+)$/m.exec(text)![1])
}

async function stop(node: RunningPlinth): Promise<void> {
  node.child.kill('SIGTERM')
  assert.deepEqual(await node.exited, { code: 0, signal: null })
}

test("a replica told to archive keeps the cluster's archive, and its own commits once it leads; a point in time restores into a single server's data directory", async (t) => {
  const ground = await startClusterGround(t, 'plinth-cluster-archive-')
  const { dir } = ground
  const root = join(dir, 'archive-root')
  const node = async (name: string, extra: Record<string, string> = {}) =>
    spawnPlinth(t, clusterNodeEnv({ dir, name, port: await freePort(), ground: ground.env, key: KEY, leaseMs: 1000 }, extra))
  const a = await node('a')
  const b = await node('b', { PLINTH_BACKUP_ARCHIVE: root })
  await waitUntil(
    () => listBackups(root).some((backup) => backup.complete),
    "the archive's base, taken by the replica",
    15_000,
    API_POLL_MS,
  )
  assert.match(b.stderr(), /the backup archive begins/)

  const site = (await call(a.port, 'POST', '/v1/websites', { name: 'Kept', kind: 'static', subdomain: 'kept' })).body
  await publish(a.port, site.id, '<h1>one</h1>')
  const storage = (await call(a.port, 'POST', '/v1/websites', { name: 'Files', kind: 'storage', subdomain: 'files' })).body
  const bytes = randomBytes(200_000)
  const [file] = await shareFiles(a.port, KEY, storage.id, [{ name: 'one.bin', bytes }])
  const link = new URL(file!.url)
  await archived(b.port)
  const first = Date.now()
  await new Promise((resolve) => setTimeout(resolve, 5))
  await publish(a.port, site.id, '<h1>two</h1>')
  await archived(b.port)
  // The primary goes: b leads and archives its own commits.
  await stop(a)
  await waitUntil(
    async () => JSON.parse((await freshRequest(b.port, 'localhost', '/_platform/health')).body.toString()).role === 'primary',
    'b to lead',
    10_000,
    API_POLL_MS,
  )
  await publish(b.port, site.id, '<h1>three</h1>')
  const last = await archived(b.port)

  const secret = ground.env.PLINTH_SECRET_FILE!
  const verified = await runCli(['backup', 'verify', root], { PLINTH_DATA_DIR: join(dir, 'b'), PLINTH_SECRET_FILE: secret })
  assert.equal(verified.code, 0, verified.stderr)
  assert.match(verified.stdout, /every archive segment authentic, the chain without a gap/)
  for (const [point, html, shared] of [
    [['--at', new Date(first).toISOString()], '<h1>one</h1>', 200],
    [['--position', String(last)], '<h1>three</h1>', 200],
  ] as const) {
    const into = join(dir, `restored-${point[0]}`)
    const restored = await runCli(['restore', root, ...point], { PLINTH_DATA_DIR: into, PLINTH_SECRET_FILE: secret })
    assert.equal(restored.code, 0, restored.stderr)
    // A data directory of its own: a single server starts on it (no cluster settings) and serves that point.
    const single = await spawnPlinth(t, { PLINTH_DATA_DIR: into, PLINTH_SECRET_FILE: secret })
    assert.equal((await freshRequest(single.port, 'kept.localhost', '/')).body.toString(), html)
    const got = await freshRequest(single.port, link.hostname, link.pathname)
    assert.equal(got.status, shared)
    assert.ok(got.body.equals(bytes), 'the shared file, byte for byte')
    await stop(single)
  }
})
