import assert from 'node:assert/strict'
import { test } from 'node:test'
import { createKey, createWebsite, startServer, type TestServer } from '../helpers/server.js'

async function site(s: TestServer, label: string, files: Record<string, string>) {
  const w = await createWebsite(s, { name: label, kind: 'static', subdomain: label })
  await deployFiles(s, w.id, files)
  return w
}

async function deployFiles(s: TestServer, id: string, files: Record<string, string>) {
  const res = await s.api('POST', `/v1/websites/${id}/deploy/json`, {
    body: { files: Object.entries(files).map(([path, content]) => ({ path, content })) },
  })
  assert.ok(res.status === 201 || res.status === 200, JSON.stringify(res.body))
  return res.body
}

async function live(s: TestServer, label: string, path = '/') {
  const res = await s.site(`${label}.localhost`, path)
  return { status: res.status, body: res.body.toString() }
}

test('nothing goes live until publish; publishing an empty head is a 400 with diagnostics', async (t) => {
  const s = await startServer(t)
  const empty = await createWebsite(s, { name: 'empty', kind: 'static' })
  const refused = await s.api('POST', `/v1/websites/${empty.id}/publish`)
  assert.equal(refused.status, 400)
  assert.equal(refused.body.kind, 'validation')
  assert.equal(refused.body.details.diagnostics[0].step, 'publish')
  assert.deepEqual(refused.body.details.renderFailures, [])
  assert.equal((await s.api('GET', `/v1/websites/${empty.id}`)).body.publishedVersion, null)

  const w = await site(s, 'shop', { 'index.html': 'v2' })
  assert.equal((await live(s, 'shop')).status, 404)
  assert.equal((await s.site('draft--shop.localhost', '/')).body.toString(), 'v2')
  const status = await s.api('GET', `/v1/websites/${w.id}/deployments/status`)
  assert.deepEqual([status.body.status, status.body.canPublish, status.body.version, status.body.routes], ['ready', true, 2, ['/']])
  const published = await s.api('POST', `/v1/websites/${w.id}/publish`)
  assert.equal(published.status, 200)
  assert.equal(published.body.website.publishedVersion, 2)
  assert.equal(published.body.website.urls.published, `http://shop.localhost:${s.plinth.port}`)
  assert.equal(published.body.deployment.status, 'ready')
  // The first request after the 2xx sees the new state.
  assert.deepEqual(await live(s, 'shop'), { status: 200, body: 'v2' })
  assert.equal(published.body.website.hasUnpublishedChanges, false)
  await deployFiles(s, w.id, { 'index.html': 'v3' })
  assert.equal((await live(s, 'shop')).body, 'v2')
  assert.equal((await s.site('draft--shop.localhost', '/')).body.toString(), 'v3')
  assert.equal((await s.api('GET', `/v1/websites/${w.id}`)).body.hasUnpublishedChanges, true)
})

test('publish and unpublish take no body: a stray or malformed one is a 400 and changes nothing', async (t) => {
  const s = await startServer(t)
  const w = await site(s, 'strict', { 'index.html': 'hello' })
  const cases: [string, { raw?: string; body?: unknown; headers?: Record<string, string> }, string][] = [
    ['publish', { raw: 'garbage' }, 'body'],
    ['publish', { body: { x: 1 } }, 'body.x'],
    ['publish', { raw: 'version=1', headers: { 'content-type': 'text/plain' } }, 'body'],
  ]
  for (const [action, options, field] of cases) {
    const res = await s.api('POST', `/v1/websites/${w.id}/${action}`, options)
    assert.equal(res.status, 400, JSON.stringify(options))
    assert.equal(res.body.details.field, field)
  }
  assert.equal((await live(s, 'strict')).status, 404, 'nothing was published')
  // No body, or an empty JSON object, is how clients call them.
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/publish`, { body: {} })).status, 200)
  assert.equal((await live(s, 'strict')).status, 200)
  const bad = await s.api('POST', `/v1/websites/${w.id}/unpublish`, { raw: 'garbage' })
  assert.equal(bad.status, 400)
  assert.equal((await live(s, 'strict')).status, 200, 'still live')
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/unpublish`)).status, 200)
})

test('unpublish takes the site offline and leaves head and history alone', async (t) => {
  const s = await startServer(t)
  const w = await site(s, 'gone', { 'index.html': 'hello' })
  await s.api('POST', `/v1/websites/${w.id}/publish`)
  const res = await s.api('POST', `/v1/websites/${w.id}/unpublish`)
  assert.equal(res.status, 200)
  assert.equal(res.body.website.publishedVersion, null)
  assert.equal(res.body.website.urls.published, null)
  assert.equal((await live(s, 'gone')).status, 404)
  assert.doesNotMatch((await live(s, 'gone')).body, /hello/)
  assert.equal((await s.site('draft--gone.localhost', '/')).body.toString(), 'hello')
  assert.equal(res.body.website.headVersion, 2)
  assert.equal((await s.api('GET', `/v1/websites/${w.id}/source/versions`)).body.items.length, 2)
})

test('rollback commits the old version as a new head, then publishes it', async (t) => {
  const s = await startServer(t)
  const w = await site(s, 'roll', { 'index.html': 'one' })
  await s.api('POST', `/v1/websites/${w.id}/publish`)
  await deployFiles(s, w.id, { 'index.html': 'two' })
  await s.api('POST', `/v1/websites/${w.id}/publish`)
  assert.equal((await live(s, 'roll')).body, 'two')
  const back = await s.api('POST', `/v1/websites/${w.id}/rollback`, { body: { version: 2 } })
  assert.equal(back.status, 200)
  assert.deepEqual([back.body.website.headVersion, back.body.website.publishedVersion], [4, 4])
  assert.equal((await live(s, 'roll')).body, 'one')
  assert.equal((await s.site('draft--roll.localhost', '/')).body.toString(), 'one')
  const versions = (await s.api('GET', `/v1/websites/${w.id}/source/versions`)).body.items
  assert.deepEqual([versions[0].source, versions[0].message], ['rollback', 'Rollback to version 2'])
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/rollback`, { body: { version: 99 } })).status, 404)
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/rollback`, { body: { version: 1 } })).status, 400)
  assert.equal((await live(s, 'roll')).body, 'one')
})

test('head restore copies the published state or a version into a new head without publishing', async (t) => {
  const s = await startServer(t)
  const w = await site(s, 'restore', { 'index.html': 'published' })
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/head/restore`, { body: { to: 'published' } })).status, 400)
  await s.api('POST', `/v1/websites/${w.id}/publish`)
  await deployFiles(s, w.id, { 'index.html': 'draft work', 'extra.html': 'x' })
  const restored = await s.api('POST', `/v1/websites/${w.id}/head/restore`, { body: { to: 'published' } })
  assert.deepEqual([restored.status, restored.body.version, restored.body.changed], [200, 4, true])
  assert.equal((await s.site('draft--restore.localhost', '/')).body.toString(), 'published')
  const website = (await s.api('GET', `/v1/websites/${w.id}`)).body
  assert.deepEqual([website.publishedVersion, website.hasUnpublishedChanges], [2, false])
  const toThree = await s.api('POST', `/v1/websites/${w.id}/head/restore`, { body: { to: 3 } })
  assert.equal(toThree.body.version, 5)
  assert.equal((await s.site('draft--restore.localhost', '/extra')).body.toString(), 'x')
  assert.equal((await live(s, 'restore')).body, 'published')
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/head/restore`, { body: { to: 42 } })).status, 404)
  for (const to of [0, '3', 'head']) {
    const bad = await s.api('POST', `/v1/websites/${w.id}/head/restore`, { body: { to } })
    assert.equal(bad.status, 400)
    assert.deepEqual([bad.body.message, bad.body.details.field], ['body.to must be "published" or a version number', 'body.to'])
  }
})

test('every transition of the website state table is in the audit log with the acting key', async (t) => {
  const s = await startServer(t)
  const key = await createKey(s, { kind: 'organization', role: 'full_editor' })
  const w = await createWebsite(s, { name: 'audited', kind: 'static', subdomain: 'audited' })
  const as = { key: key.secret }
  await s.api('POST', `/v1/websites/${w.id}/deploy/json`, {
    ...as,
    body: { files: [{ path: 'index.html', content: '1' }], message: 'first' },
  })
  await s.api('POST', `/v1/websites/${w.id}/publish`, as)
  await s.api('POST', `/v1/websites/${w.id}/deploy/json`, { ...as, body: { files: [{ path: 'x.html', content: '2' }] } })
  await s.api('DELETE', `/v1/websites/${w.id}/source/files`, { ...as, body: { paths: ['x.html'] } })
  await s.api('POST', `/v1/websites/${w.id}/head/restore`, { ...as, body: { to: 3 } })
  await s.api('POST', `/v1/websites/${w.id}/rollback`, { ...as, body: { version: 2 } })
  await s.api('POST', `/v1/websites/${w.id}/unpublish`, as)
  // A no-op deploy changes nothing and records nothing.
  await s.api('POST', `/v1/websites/${w.id}/deploy/json`, { ...as, body: { files: [] } })
  const log = await s.api('GET', `/v1/audit-log?websiteId=${w.id}&actorId=${key.id}`)
  assert.deepEqual(
    log.body.items.map((e: any) => [e.eventType, e.metadata.source ?? null, e.metadata.version ?? null]),
    [
      ['website.unpublished', null, 6],
      ['website.rolled_back', null, 6],
      ['website.version_created', 'restore', 5],
      ['website.version_created', 'delete', 4],
      ['website.version_created', 'deploy', 3],
      ['website.published', null, 2],
      ['website.version_created', 'deploy', 2],
    ],
  )
  assert.equal(log.body.items.at(-1).metadata.message, 'first')
})

test('soft-deleted sites are offline on every host; restore brings them back', async (t) => {
  const s = await startServer(t)
  const w = await site(s, 'trashed', { 'index.html': 'TRASHED-SITE-BODY' })
  await s.api('POST', `/v1/websites/${w.id}/publish`)
  await s.api('DELETE', `/v1/websites/${w.id}`)
  for (const host of ['trashed.localhost', 'draft--trashed.localhost']) {
    const res = await s.site(host, '/')
    assert.equal(res.status, 404, host)
    assert.doesNotMatch(res.body.toString(), /TRASHED-SITE-BODY/)
  }
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/publish`)).status, 409)
  await s.api('POST', `/v1/websites/${w.id}/restore`)
  assert.equal((await live(s, 'trashed')).body, 'TRASHED-SITE-BODY')
})

test('renaming the subdomain moves both hosts at once', async (t) => {
  const s = await startServer(t)
  const w = await site(s, 'before', { 'index.html': 'moving' })
  await s.api('POST', `/v1/websites/${w.id}/publish`)
  await s.api('PATCH', `/v1/websites/${w.id}/subdomain`, { body: { label: 'after' } })
  assert.equal((await live(s, 'before')).status, 404)
  assert.equal((await live(s, 'after')).body, 'moving')
  assert.equal((await s.site('draft--before.localhost', '/')).status, 404)
  assert.equal((await s.site('draft--after.localhost', '/')).body.toString(), 'moving')
})

test('deployment status and ensure report a version; rebuilding a static version serves the same bytes and ETag', async (t) => {
  const s = await startServer(t)
  const w = await site(s, 'status', { 'index.html': 'x', 'blog/index.html': 'b', 'about.html': 'a', 'style.css': 's' })
  const status = await s.api('GET', `/v1/websites/${w.id}/deployments/status?target=head`)
  assert.deepEqual(status.body.routes, ['/', '/about', '/blog/', '/style.css'])
  const me = await s.api('GET', '/v1/me')
  assert.equal(status.body.apiKeyId, me.body.actor.id)
  assert.equal((await s.api('GET', `/v1/websites/${w.id}/deployments/status?target=published`)).status, 404)
  const v1 = await s.api('GET', `/v1/websites/${w.id}/deployments/status?version=1`)
  assert.deepEqual([v1.body.status, v1.body.canPublish], ['ready', false])
  assert.equal((await s.api('GET', `/v1/websites/${w.id}/deployments/status?version=1&target=head`)).status, 400)
  const ensured = await s.api('POST', `/v1/websites/${w.id}/deployments/ensure`, { body: {} })
  assert.deepEqual([ensured.status, ensured.body.status, ensured.body.version], [200, 'ready', 2])
  await s.api('POST', `/v1/websites/${w.id}/publish`)
  const before = await s.site('status.localhost', '/about')
  // A static version has nothing to render: a rebuild prepares its snapshot again from stored
  // content (what an upgrade that changed headers needs), and a visitor sees exactly what they saw.
  // What a rebuild changes is asserted for framework sites (builds.test.ts), which render again.
  const rebuilt = await s.api('POST', `/v1/websites/${w.id}/rebuild`, { body: { target: 'published' } })
  assert.deepEqual([rebuilt.status, rebuilt.body.isPublished, rebuilt.body.status], [200, true, 'ready'])
  const after = await s.site('status.localhost', '/about')
  assert.deepEqual([after.body.toString(), after.headers.etag], [before.body.toString(), before.headers.etag])
  assert.equal(after.body.toString(), 'a')
})

test('an empty site says so: its draft host, its deployment status and publish say nothing is there yet and what to write first', async (t) => {
  const s = await startServer(t)
  const fw = await createWebsite(s, { name: 'fresh', subdomain: 'fresh' })
  const status = (await s.api('GET', `/v1/websites/${fw.id}/deployments/status`)).body
  assert.deepEqual([status.version, status.isHead, status.status, status.canPublish], [1, true, 'failed', false])
  assert.match(
    status.diagnostics[0].message,
    /^Version 1 is empty: nothing is built yet, and there is nothing to publish; write a page with .*put_source_file/,
  )
  assert.ok(!/superseded/.test(status.diagnostics[0].message))
  const draft = await s.site('draft--fresh.localhost', '/')
  assert.equal(draft.status, 404)
  assert.match(draft.body.toString(), /Nothing here yet.*This draft has no files yet/)
  const publish = await s.api('POST', `/v1/websites/${fw.id}/publish`)
  assert.equal(publish.status, 400)
  assert.match(publish.body.message, /nothing to publish; write a page with .*put_source_file.*then publish$/)
  // The live host of the same site says nothing about it; an unknown draft host neither.
  assert.match((await s.site('fresh.localhost', '/')).body.toString(), /Site not found/)
  assert.match((await s.site('draft--nobody.localhost', '/')).body.toString(), /Site not found/)
  // Once a page is written, the draft says it is building until its first build is ready.
  const lease = (await s.api('POST', `/v1/websites/${fw.id}/source/lease`)).body.leaseToken
  const written = await s.api('PUT', `/v1/websites/${fw.id}/source/file`, {
    body: {
      leaseToken: lease,
      file: { type: 'page', name: 'home' },
      content: "import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <p>hello</p> })\n",
    },
  })
  assert.equal(written.status, 201)
  const early = await s.site('draft--fresh.localhost', '/')
  if (early.status === 404) assert.match(early.body.toString(), /Not built yet/)
  const st = await s.api('GET', `/v1/websites/${fw.id}/deployments/status`)
  assert.notEqual(st.body.status, 'failed', JSON.stringify(st.body))

  const empty = await createWebsite(s, { name: 'files', kind: 'static', subdomain: 'files' })
  assert.match((await s.site('draft--files.localhost', '/')).body.toString(), /Nothing here yet/)
  const refused = await s.api('POST', `/v1/websites/${empty.id}/publish`)
  assert.match(refused.body.message, /nothing to publish; deploy files with .*deploy_files/)
})
