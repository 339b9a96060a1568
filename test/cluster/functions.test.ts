import assert from 'node:assert/strict'
import { test } from 'node:test'
import { freePort, freshRequest, keyedCall } from '../helpers/http.js'
import { clusterNodeEnv, startClusterGround } from '../helpers/nats.js'
import { spawnPlinth } from '../helpers/process.js'
import { API_POLL_MS, waitUntil } from '../helpers/wait.js'

/*
 * Functions on a cluster (issue 54): every node runs a site's functions (the compiled script is a file of
 * the version, so it replicates with it); a replica's KV writes go to the primary, which commits them and
 * answers once the replicas applied them, so the function reads its write back on the node it ran on.
 */

const KEY = 'wb_' + 'F'.repeat(43)

const COUNT = `export async function onRequestGet({ env }) {
  const count = Number((await env.KV.get('count')) ?? 0) + 1
  console.log('counted ' + count)
  await env.KV.put('count', String(count))
  return new Response(String(count))
}`
const READ = `export async function onRequestGet({ env }) {
  return Response.json({ count: (await env.KV.get('count')) ?? '0', greeting: env.GREETING ?? null })
}`

/** As much as a request may log: 100 lines of 4,096 control characters (six bytes each in JSON: 2.4 MB, over a NATS message). */
const NOISY = `export function onRequestGet() {
  for (let i = 0; i < 100; i++) console.log(String.fromCharCode(1).repeat(4096))
  return new Response('logged')
}`

test("a replica serves a site's functions: its KV writes land on the primary and read back on both, its variables arrive with the log, its log lines are read through either node", async (t) => {
  const ground = await startClusterGround(t, 'plinth-cluster-functions-')
  const { dir } = ground
  const node = async (name: string) =>
    spawnPlinth(t, clusterNodeEnv({ dir, name, port: await freePort(), ground: ground.env, key: KEY, leaseMs: 1500 }))
  const a = await node('a')
  const b = await node('b')
  const role = async (port: number) => JSON.parse((await freshRequest(port, 'localhost', '/_platform/health')).body.toString()).role
  assert.deepEqual([await role(a.port), await role(b.port)], ['primary', 'replica'])

  const site = (await keyedCall(a.port, KEY, 'POST', '/v1/websites', { name: 'Counter', kind: 'static', subdomain: 'counter' })).body
  const deployed = await keyedCall(a.port, KEY, 'POST', `/v1/websites/${site.id}/deploy/json`, {
    files: [
      { path: 'functions/count.js', content: COUNT },
      { path: 'functions/read.js', content: READ },
      { path: 'functions/noisy.js', content: NOISY },
    ],
  })
  assert.equal(deployed.status, 201, JSON.stringify(deployed.body))
  assert.equal((await keyedCall(a.port, KEY, 'POST', `/v1/websites/${site.id}/publish`)).status, 200)
  const read = async (port: number) => JSON.parse((await freshRequest(port, 'counter.localhost', '/read')).body.toString())
  // The replica runs the published version's functions from its own copy.
  await waitUntil(
    async () => (await freshRequest(b.port, 'counter.localhost', '/read')).status === 200,
    'the function on b',
    10_000,
    API_POLL_MS,
  )
  assert.deepEqual(await read(b.port), { count: '0', greeting: null })

  // Each count on the replica writes through the primary and reads its own write back on the next request.
  const counted = []
  for (let i = 0; i < 3; i++) counted.push((await freshRequest(b.port, 'counter.localhost', '/count')).body.toString())
  assert.deepEqual(counted, ['1', '2', '3'])
  assert.deepEqual(await read(a.port), { count: '3', greeting: null }, 'committed on the primary')
  assert.deepEqual(await read(b.port), { count: '3', greeting: null })
  // The primary's own count, then the replica's again: one store.
  assert.equal((await freshRequest(a.port, 'counter.localhost', '/count')).body.toString(), '4')
  await waitUntil(async () => (await read(b.port)).count === '4', "the primary's write on b", 10_000, API_POLL_MS)
  assert.equal((await freshRequest(b.port, 'counter.localhost', '/count')).body.toString(), '5')

  // A variable set through the API (on the primary) reaches the replica's functions with the log.
  assert.equal(
    (await keyedCall(a.port, KEY, 'PUT', `/v1/websites/${site.id}/functions/variables/GREETING`, { value: 'from the primary' })).status,
    200,
  )
  await waitUntil(async () => (await read(b.port)).greeting === 'from the primary', 'the variable on b', 10_000, API_POLL_MS)

  // The logs: each node's lines, read through the API of either (a replica hands API calls to the primary).
  for (const port of [a.port, b.port]) {
    const lines = await waitUntil(
      async () => {
        const logs = (await keyedCall(port, KEY, 'GET', `/v1/websites/${site.id}/functions/logs?limit=1000`)).body.logs as any[]
        const counted = logs.filter((l) => l.type === 'console').map((l) => `${l.message} on ${l.node}`)
        return counted.length === 5 ? counted : null
      },
      `the five counts' lines through ${port === a.port ? 'a' : 'b'}`,
      10_000,
      API_POLL_MS,
    )
    assert.deepEqual([...lines].sort(), ['counted 1 on b', 'counted 2 on b', 'counted 3 on b', 'counted 4 on a', 'counted 5 on b'])
  }

  // A request that logs as much as it may, on the replica: its lines reach the primary in batches NATS
  // takes, and neither node stops.
  assert.equal((await freshRequest(b.port, 'counter.localhost', '/noisy')).body.toString(), 'logged')
  await waitUntil(
    async () => {
      const logs = (await keyedCall(a.port, KEY, 'GET', `/v1/websites/${site.id}/functions/logs?limit=1000`)).body.logs as any[]
      return logs.filter((l) => l.type === 'console' && l.node === 'b' && l.message.length === 4096).length === 100
    },
    "the noisy request's 100 lines on a",
    10_000,
    API_POLL_MS,
  )
  assert.deepEqual([await role(a.port), await role(b.port)], ['primary', 'replica'])
})
