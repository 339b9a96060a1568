import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { test } from 'node:test'
import { freePort, freshRequest, keyedCall } from '../helpers/http.js'
import { clusterNodeEnv, startClusterGround } from '../helpers/nats.js'
import { runCli, spawnPlinth } from '../helpers/process.js'
import { archived, publishPage, stopPlinth } from '../helpers/archive.js'
import { shareFiles } from '../helpers/ticket.js'
import { API_POLL_MS, waitUntil } from '../helpers/wait.js'
import { listBackups } from '../../core/backup/root.js'

/*
 * The continuous archive on a cluster's node (issue 53, part 4): the node the operator tells to
 * (PLINTH_BACKUP_ARCHIVE, a replica here) archives the log's entries as it applies them, and its own
 * once it leads; a point in time restores into a data directory of its own, served by a single server.
 */

const KEY = 'wb_' + 'R'.repeat(43)

test("a replica told to archive keeps the cluster's archive, and its own commits once it leads; a point in time restores into a single server's data directory", async (t) => {
  const ground = await startClusterGround(t, 'plinth-cluster-archive-')
  const { dir } = ground
  const root = join(dir, 'archive-root')
  const node = async (name: string, extra: Record<string, string> = {}) =>
    spawnPlinth(t, clusterNodeEnv({ dir, name, port: await freePort(), ground: ground.env, key: KEY, leaseMs: 1500 }, extra))
  const a = await node('a')
  const b = await node('b', { PLINTH_BACKUP_ARCHIVE: root })
  await waitUntil(
    () => listBackups(root).some((backup) => backup.complete),
    "the archive's base, taken by the replica",
    15_000,
    API_POLL_MS,
  )
  assert.match(b.stderr(), /the backup archive begins/)

  const site = (await keyedCall(a.port, KEY, 'POST', '/v1/websites', { name: 'Kept', kind: 'static', subdomain: 'kept' })).body
  await publishPage(a.port, KEY, site.id, '<h1>one</h1>')
  const storage = (await keyedCall(a.port, KEY, 'POST', '/v1/websites', { name: 'Files', kind: 'storage', subdomain: 'files' })).body
  const bytes = randomBytes(200_000)
  const [file] = await shareFiles(a.port, KEY, storage.id, [{ name: 'one.bin', bytes }])
  const link = new URL(file!.url)
  await archived(b.port, KEY)
  const first = Date.now()
  await new Promise((resolve) => setTimeout(resolve, 5))
  await publishPage(a.port, KEY, site.id, '<h1>two</h1>')
  await archived(b.port, KEY)
  // The primary goes: b leads and archives its own commits.
  await stopPlinth(a)
  await waitUntil(
    async () => JSON.parse((await freshRequest(b.port, 'localhost', '/_platform/health')).body.toString()).role === 'primary',
    'b to lead',
    10_000,
    API_POLL_MS,
  )
  await publishPage(b.port, KEY, site.id, '<h1>three</h1>')
  const last = await archived(b.port, KEY)

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
    await stopPlinth(single)
  }
})
