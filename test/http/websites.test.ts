import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createWebsite, startServer } from '../helpers/server.js'

test('a new website has head version 1, no published version and a draft URL', async (t) => {
  const s = await startServer(t)
  const res = await s.api('POST', '/v1/websites', { body: { name: 'Hello World' } })
  assert.equal(res.status, 201)
  const w = res.body
  assert.match(w.id, /^ws_[a-z0-9]+$/)
  assert.equal(w.kind, 'framework')
  assert.equal(w.slug, 'hello-world')
  assert.equal(w.subdomain, 'hello-world')
  assert.equal(w.headVersion, 1)
  assert.equal(w.publishedVersion, null)
  assert.equal(w.hasUnpublishedChanges, false)
  assert.equal(w.urls.draft, `http://draft--hello-world.localhost:${s.plinth.port}`)
  assert.equal(w.urls.published, null)
  const got = await s.api('GET', `/v1/websites/${w.id}`)
  assert.deepEqual(got.body, w)
})

test('kind is chosen at creation and cannot change', async (t) => {
  const s = await startServer(t)
  for (const kind of ['framework', 'static', 'storage']) {
    const w = await createWebsite(s, { name: `k ${kind}`, kind })
    assert.equal(w.kind, kind)
  }
  const bad = await s.api('POST', '/v1/websites', { body: { name: 'x', kind: 'wordpress' } })
  assert.equal(bad.status, 400)
  assert.equal(bad.body.kind, 'validation')
  assert.equal(bad.body.details.field, 'body.kind')
  const w = await createWebsite(s, { name: 'fixed', kind: 'static' })
  const patch = await s.api('PATCH', `/v1/websites/${w.id}`, { body: { kind: 'framework' } })
  assert.equal(patch.status, 400)
  assert.equal(patch.body.details.field, 'body.kind')
  assert.equal((await s.api('GET', `/v1/websites/${w.id}`)).body.kind, 'static')
})

test('a given slug is used exactly and a taken one is a 409; a derived slug gets a random suffix', async (t) => {
  const s = await startServer(t)
  const a = await createWebsite(s, { name: 'Anything', slug: 'my-slug' })
  assert.equal(a.slug, 'my-slug')
  const taken = await s.api('POST', '/v1/websites', { body: { name: 'Other', slug: 'my-slug' } })
  assert.equal(taken.status, 409)
  assert.equal(taken.body.kind, 'conflict')
  const first = await createWebsite(s, { name: 'Blog' })
  const second = await createWebsite(s, { name: 'Blog' })
  assert.equal(first.slug, 'blog')
  assert.match(second.slug, /^blog-[a-z0-9]{6}$/)
  assert.notEqual(second.subdomain, first.subdomain)
})

test('subdomain labels: 1-56 lowercase letters, digits and inner hyphens; taken is 409; invalid is 400', async (t) => {
  const s = await startServer(t)
  const max = 'a'.repeat(56)
  assert.equal((await createWebsite(s, { name: 'max', subdomain: max })).subdomain, max)
  assert.equal((await createWebsite(s, { name: 'one', subdomain: 'x' })).subdomain, 'x')
  for (const label of ['a'.repeat(57), 'Upper', '-lead', 'trail-', 'has.dot', 'under_score', '']) {
    const res = await s.api('POST', '/v1/websites', { body: { name: 'bad', subdomain: label } })
    assert.equal(res.status, 400, label)
    assert.equal(res.body.details.field, 'body.subdomain', label)
  }
  const draftPrefix = await s.api('POST', '/v1/websites', { body: { name: 'bad', subdomain: 'draft--shop' } })
  assert.equal(draftPrefix.status, 400)
  assert.match(draftPrefix.body.message, /draft--/)
  const taken = await s.api('POST', '/v1/websites', { body: { name: 'dup', subdomain: 'x' } })
  assert.equal(taken.status, 409)
})

test('generated labels stay within 40 characters, also after a collision suffix', async (t) => {
  const s = await startServer(t)
  const name = 'An extremely long website name that goes on and on beyond any reasonable length'
  const a = await createWebsite(s, { name })
  const b = await createWebsite(s, { name })
  for (const w of [a, b]) {
    assert.ok(w.subdomain.length <= 40, w.subdomain)
    assert.match(w.subdomain, /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/)
  }
  assert.notEqual(a.subdomain, b.subdomain)
  const symbols = await createWebsite(s, { name: '!!!' })
  assert.match(symbols.subdomain, /^[a-z0-9-]+$/)
})

test('update changes name, slug and description but not hostnames', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Before', slug: 'before' })
  await createWebsite(s, { name: 'Other', slug: 'other' })
  const res = await s.api('PATCH', `/v1/websites/${w.id}`, { body: { name: 'After', slug: 'after', description: 'new' } })
  assert.equal(res.status, 200)
  assert.equal(res.body.name, 'After')
  assert.equal(res.body.slug, 'after')
  assert.equal(res.body.description, 'new')
  assert.equal(res.body.subdomain, w.subdomain)
  const clash = await s.api('PATCH', `/v1/websites/${w.id}`, { body: { slug: 'other' } })
  assert.equal(clash.status, 409)
  const empty = await s.api('PATCH', `/v1/websites/${w.id}`, { body: {} })
  assert.equal(empty.status, 400)
  // The freed slug can be taken by a new website.
  assert.equal((await createWebsite(s, { name: 'x', slug: 'before' })).slug, 'before')
})

test('soft delete moves a website to the trash and restore brings it back', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Trashy' })
  const del = await s.api('DELETE', `/v1/websites/${w.id}`)
  assert.equal(del.status, 200)
  assert.ok(del.body.deletedAt)
  const live = await s.api('GET', '/v1/websites')
  assert.ok(!live.body.items.some((x: any) => x.id === w.id))
  const trash = await s.api('GET', '/v1/websites?scope=trash')
  assert.deepEqual(
    trash.body.items.map((x: any) => x.id),
    [w.id],
  )
  const patch = await s.api('PATCH', `/v1/websites/${w.id}`, { body: { name: 'nope' } })
  assert.equal(patch.status, 409)
  assert.equal(patch.body.details.reason, 'website_deleted')
  const restored = await s.api('POST', `/v1/websites/${w.id}/restore`)
  assert.equal(restored.status, 200)
  assert.equal(restored.body.deletedAt, null)
  assert.equal(restored.body.subdomain, w.subdomain)
  assert.ok((await s.api('GET', '/v1/websites')).body.items.some((x: any) => x.id === w.id))
  assert.equal((await s.api('GET', '/v1/websites?scope=trash')).body.items.length, 0)
})

test('renaming the subdomain frees the old label', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Mover', subdomain: 'old-name' })
  const res = await s.api('PATCH', `/v1/websites/${w.id}/subdomain`, { body: { label: 'new-name' } })
  assert.equal(res.status, 200)
  assert.equal(res.body.subdomain, 'new-name')
  assert.equal(res.body.urls.draft, `http://draft--new-name.localhost:${s.plinth.port}`)
  const reuse = await createWebsite(s, { name: 'Taker', subdomain: 'old-name' })
  assert.equal(reuse.subdomain, 'old-name')
  const taken = await s.api('PATCH', `/v1/websites/${w.id}/subdomain`, { body: { label: 'old-name' } })
  assert.equal(taken.status, 409)
  const invalid = await s.api('PATCH', `/v1/websites/${w.id}/subdomain`, { body: { label: 'Bad Label' } })
  assert.equal(invalid.status, 400)
  assert.equal(invalid.body.details.field, 'body.label')
})

test('a website of another id is 404, never a crash', async (t) => {
  const s = await startServer(t)
  for (const id of ['ws_doesnotexist', 'nonsense', '%E0%A4%A']) {
    const res = await s.api('GET', `/v1/websites/${id}`)
    assert.equal(res.status, 404, id)
    assert.equal(res.body.kind, 'not_found')
  }
})

test('an API origin under the site domain reserves its label', async (t) => {
  const s = await startServer(t, { PLINTH_API_ORIGIN: 'https://api.example.test', PLINTH_SITE_DOMAIN: 'example.test' })
  const res = await s.api('POST', '/v1/websites', { body: { name: 'x', subdomain: 'api' } })
  assert.equal(res.status, 400)
  const w = await createWebsite(s, { name: 'Shop' })
  assert.equal(w.urls.draft, 'https://draft--shop.example.test')
})

test('two creations racing for one subdomain: exactly one wins, the other is a 409', async (t) => {
  const s = await startServer(t)
  const results = await Promise.all(
    Array.from({ length: 6 }, (_, i) => s.api('POST', '/v1/websites', { body: { name: `racer ${i}`, subdomain: 'contested' } })),
  )
  assert.deepEqual(results.map((r) => r.status).sort(), [201, 409, 409, 409, 409, 409])
  const w = results.find((r) => r.status === 201)!.body
  const others = await Promise.all(
    Array.from({ length: 4 }, async (_, i) => {
      const mine = await createWebsite(s, { name: `mover ${i}` })
      return s.api('PATCH', `/v1/websites/${mine.id}/subdomain`, { body: { label: 'second-contest' } })
    }),
  )
  assert.deepEqual(others.map((r) => r.status).sort(), [200, 409, 409, 409])
  assert.equal((await s.api('GET', `/v1/websites/${w.id}`)).body.subdomain, 'contested')
})

test('a storage website reports no draft URL: it has none, its files are live at once', async (t) => {
  // Spec: "A third kind, `storage`, is file sharing rather than a website: it is live at once, has no
  // source, build or publish". A draft URL would answer 404.
  const s = await startServer(t)
  const created = await s.api('POST', '/v1/websites', { body: { name: 'Files', kind: 'storage', subdomain: 'some-files' } })
  assert.equal(created.status, 201)
  assert.equal(created.body.urls.draft, null)
  assert.equal(created.body.urls.published, `http://some-files.localhost:${s.plinth.port}`)
  assert.equal((await s.api('GET', `/v1/websites/${created.body.id}`)).body.urls.draft, null)
  assert.equal((await s.site('draft--some-files.localhost', '/')).status, 404, "nothing is served at a storage site's draft host")
  assert.equal((await s.site('some-files.localhost', '/')).status, 200, 'the live host serves its folder page')
  // Other kinds keep theirs.
  assert.match((await s.api('POST', '/v1/websites', { body: { name: 'Pages', kind: 'static' } })).body.urls.draft, /^http:\/\/draft--/)
})
