import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { test } from 'node:test'
import { createWebsite, startServer } from '../helpers/server.js'

/**
 * PLINTH_CACHE_BYTES bounds the served content kept in memory: a site larger than the budget serves
 * every file with its exact bytes (evicted content is read again from the database on request), the
 * resident bytes never pass the budget, and content in use stays resident.
 */
test('served content beyond the cache budget is read from the database on request, byte for byte, within the budget', async (t) => {
  const budget = 1024 * 1024
  // The main thread's cache alone (a serving thread keeps its own share, read by its own requests).
  const server = await startServer(t, { PLINTH_CACHE_BYTES: '1MiB', PLINTH_SERVE_THREADS: '1' })
  const cache = server.plinth.registry.cache
  const site = await createWebsite(server, { name: 'Big', kind: 'static', subdomain: 'big' })
  // Random bytes do not compress: each file is held once, 200 KiB, and the eight are 1.6 MiB.
  const files = Array.from({ length: 8 }, (_, i) => ({ path: `f${i}.bin`, bytes: randomBytes(200 * 1024) }))
  const deploy = await server.api('POST', `/v1/websites/${site.id}/deploy/json`, {
    body: { files: files.map((f) => ({ path: f.path, content: f.bytes.toString('base64'), encoding: 'base64' })) },
  })
  assert.equal(deploy.status, 201, JSON.stringify(deploy.body))
  assert.equal((await server.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)

  for (let round = 0; round < 2; round++) {
    for (const file of files) {
      const res = await server.site('big.localhost', `/${file.path}`)
      assert.equal(res.status, 200)
      assert.ok(res.body.equals(file.bytes), `${file.path} served its exact bytes (round ${round})`)
      assert.ok(cache.stats().residentBytes <= budget, `resident ${cache.stats().residentBytes} bytes within ${budget}`)
    }
  }
  // Eight files that do not fit were read more than once each.
  assert.ok(cache.stats().reads > files.length, `reads ${cache.stats().reads}`)
  // A range of an evicted file is cut from the bytes read again.
  const range = await server.site('big.localhost', '/f0.bin', { range: 'bytes=100-199' })
  assert.equal(range.status, 206)
  assert.ok(range.body.equals(files[0].bytes.subarray(100, 200)))

  // A hot file stays resident while colder ones come and go: asked for between each of them, it is
  // read from the database only once.
  await server.site('big.localhost', '/f0.bin')
  await server.site('big.localhost', '/f0.bin')
  for (let round = 0; round < 2; round++) {
    for (let i = 1; i < files.length; i++) {
      await server.site('big.localhost', `/f${i}.bin`)
      const before = cache.stats().reads
      assert.ok((await server.site('big.localhost', '/f0.bin')).body.equals(files[0].bytes))
      assert.equal(cache.stats().reads, before, `f0 stayed resident after f${i} was read (round ${round})`)
    }
  }
  // Revalidation needs no bytes at all.
  const etag = (await server.site('big.localhost', '/f7.bin')).headers['etag'] as string
  const reads = cache.stats().reads
  assert.equal((await server.site('big.localhost', '/f7.bin', { 'if-none-match': etag })).status, 304)
  assert.equal(cache.stats().reads, reads)
})
