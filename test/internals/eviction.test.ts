import assert from 'node:assert/strict'
import { request } from 'node:http'
import { test } from 'node:test'
import { createWebsite, startServer } from '../helpers/server.js'
import { waitUntil } from '../helpers/wait.js'

/**
 * Idle website actors are evicted: memory follows the sites in use. An actor a request holds (its body
 * still arriving), or that a host or the API asked for since the last sweep, stays; an evicted site
 * serves and takes commands again from the store, exactly as before.
 */
test('idle website actors are evicted and come back on their next request; one held by a request in flight is not', async (t) => {
  const server = await startServer(t, {}, { actorIdleMs: 0 })
  const { registry } = server.plinth
  const ids: string[] = []
  for (const label of ['ev-one', 'ev-two', 'ev-three']) {
    const site = await createWebsite(server, { name: label, kind: 'static', subdomain: label })
    ids.push(site.id)
    assert.equal(
      (
        await server.api('POST', `/v1/websites/${site.id}/deploy/json`, {
          body: { files: [{ path: 'index.html', content: `live ${label}` }] },
        })
      ).status,
      201,
    )
    assert.equal((await server.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
    assert.equal((await server.site(`${label}.localhost`, '/')).body.toString(), `live ${label}`)
  }
  assert.equal(registry.activeWebsites, 3)
  const held = registry.cache.stats().entries
  assert.ok(held >= 3)

  // The first sweep finds every actor used since it was made; the second evicts them all, the
  // organization's too.
  assert.equal(registry.activeOrganizations, 1)
  assert.equal(registry.evictIdle(), 0)
  assert.equal(registry.evictIdle(), 4)
  assert.equal(registry.activeWebsites, 0)
  assert.equal(registry.activeOrganizations, 0)
  assert.equal(registry.cache.stats().entries, 0, 'evicted snapshots let go of their content')

  // A site in use survives sweeps: requests between them keep its actor and its content (nothing is
  // read from the database again).
  assert.equal((await server.site('ev-one.localhost', '/')).body.toString(), 'live ev-one')
  assert.equal(registry.activeWebsites, 1)
  const reads = registry.cache.stats().reads
  for (let i = 0; i < 3; i++) {
    registry.evictIdle()
    assert.equal((await server.site('ev-one.localhost', '/')).status, 200)
  }
  assert.equal(registry.activeWebsites, 1)
  assert.equal(registry.cache.stats().reads, reads)

  // A deploy whose body is still arriving holds its actor through any number of sweeps.
  const body = JSON.stringify({ files: [{ path: 'index.html', content: 'second ev-two' }] })
  const req = request({
    host: '127.0.0.1',
    port: server.plinth.port,
    method: 'POST',
    path: `/v1/websites/${ids[1]}/deploy/json`,
    headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  })
  const answer = new Promise<{ status: number; text: string }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = ''
      res.on('data', (c) => (text += c))
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }))
    })
    req.on('error', reject)
  })
  req.write(body.slice(0, 10))
  // The server has the request once it activated ev-two's actor (beside ev-one) to authorize it.
  await waitUntil(() => registry.activeWebsites === 2, 'the request to reach its website')
  for (let i = 0; i < 3; i++) registry.evictIdle()
  assert.equal(registry.activeWebsites, 1, 'the held actor stays (the unasked ev-one goes)')
  assert.equal(registry.activeOrganizations, 1, 'and so does its organization')
  req.end(body.slice(10))
  const deployed = await answer
  assert.equal(deployed.status, 201, deployed.text)
  assert.equal((await server.site('draft--ev-two.localhost', '/')).body.toString(), 'second ev-two')
  assert.equal((await server.site('ev-two.localhost', '/')).body.toString(), 'live ev-two')

  // Evicted and asked again: the API sees the same website, and commands work on the new actor.
  registry.evictIdle()
  registry.evictIdle()
  assert.equal(registry.activeWebsites, 0)
  assert.equal(registry.activeOrganizations, 0)
  const got = await server.api('GET', `/v1/websites/${ids[1]}`)
  assert.equal(got.body.headVersion, 3)
  assert.equal((await server.api('POST', `/v1/websites/${ids[1]}/publish`)).status, 200)
  assert.equal((await server.site('ev-two.localhost', '/')).body.toString(), 'second ev-two')
  // The organization's commands work on its new actor too: a key is created and works.
  const key = await server.api('POST', '/v1/api-keys', { body: { access: { kind: 'organization', role: 'admin' } } })
  assert.equal(key.status, 201)
  assert.equal((await server.api('GET', '/v1/me', { key: key.body.secret })).status, 200)
})
