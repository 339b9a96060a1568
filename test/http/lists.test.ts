import assert from 'node:assert/strict'
import { test } from 'node:test'
import { rawPost } from '../helpers/http.js'
import { createWebsite, startServer } from '../helpers/server.js'

test('limit is 1-100 with a default of 20; out of range is 400', async (t) => {
  const s = await startServer(t)
  for (let i = 0; i < 25; i++) await createWebsite(s, { name: `site ${i}` })
  const first = await s.api('GET', '/v1/websites')
  assert.equal(first.body.items.length, 20)
  assert.equal(typeof first.body.nextCursor, 'string')
  for (const limit of ['0', '101', '-1', '2.5']) {
    const res = await s.api('GET', `/v1/websites?limit=${limit}`)
    assert.equal(res.status, 400, limit)
    assert.equal(res.body.details.field, 'query.limit')
  }
  const all = await s.api('GET', '/v1/websites?limit=100')
  assert.equal(all.body.items.length, 25)
  assert.equal(all.body.nextCursor, null)
})

test('paging neither repeats nor skips an item while others are created', async (t) => {
  const s = await startServer(t)
  const created: string[] = []
  for (let i = 0; i < 12; i++) created.push((await createWebsite(s, { name: `before ${i}` })).id)
  const seen: string[] = []
  let cursor: string | null = null
  do {
    const res: any = await s.api('GET', `/v1/websites?limit=5${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`)
    assert.equal(res.status, 200)
    seen.push(...res.body.items.map((w: any) => w.id))
    cursor = res.body.nextCursor
    // Others create websites between pages.
    await createWebsite(s, { name: 'during' })
  } while (cursor !== null)
  assert.deepEqual(seen, [...created].reverse())
})

test('a cursor that was not made by the list is a 400 naming cursor', async (t) => {
  const s = await startServer(t)
  for (const cursor of ['garbage', Buffer.from('[9,1]').toString('base64url'), Buffer.from('{}').toString('base64url')]) {
    const res = await s.api('GET', `/v1/websites?cursor=${cursor}`)
    assert.equal(res.status, 400)
    assert.equal(res.body.details.field, 'query.cursor')
  }
})

test('every list operation takes limit (1-100, default 20) and cursor and answers {items, nextCursor}', async (t) => {
  // Spec (Lists): "Every list returns `{items, nextCursor}`; `nextCursor` is null at the end; cursors are
  // opaque." (Limits): "| list `limit` | 1-100, default 20 |".
  const s = await startServer(t)
  const doc = (await s.api('GET', '/openapi.json', { key: null })).body
  const site = await createWebsite(s, { name: 'Lists', kind: 'framework' })
  const lists: string[] = []
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    const get = item.get
    const schema = get?.responses['200']?.content['application/json'].schema
    const properties = schema?.properties ?? doc.components.schemas[schema?.$ref?.split('/').pop()]?.properties
    if (properties?.items?.type !== 'array') continue
    lists.push(get.operationId)
    assert.deepEqual(
      properties.nextCursor?.type === undefined ? properties.nextCursor?.anyOf?.map((s: any) => s.type) : [properties.nextCursor.type],
      ['string', 'null'],
      `${get.operationId} answers nextCursor`,
    )
    const limit = get.parameters.find((p: any) => p.name === 'limit' && p.in === 'query')
    assert.deepEqual(
      [limit?.schema.minimum, limit?.schema.maximum, limit?.schema.default],
      [1, 100, 20],
      `${get.operationId} takes limit 1-100, default 20`,
    )
    assert.ok(
      get.parameters.some((p: any) => p.name === 'cursor' && p.in === 'query'),
      `${get.operationId} takes cursor`,
    )
    // Out of range is refused before the list is read, whatever the list (an API key may call it).
    if (!get.security.some((s: Record<string, unknown>) => 'apiKey' in s)) continue
    const concrete = path
      .replace('{websiteId}', site.id)
      .replace(/\{(\w+)\}/g, (_, name) => (name === 'form' ? 'contact' : `${name.replace(/Id$/, '').slice(0, 3)}_x1`))
    for (const bad of ['0', '101']) {
      const res = await s.api('GET', `${concrete}?limit=${bad}`)
      assert.deepEqual([res.status, res.body.details?.field], [400, 'query.limit'], `${get.operationId} limit=${bad}`)
    }
  }
  // The lists this was written against, so a list cannot drop out of the check unnoticed.
  for (const id of [
    'websites.list',
    'domains.list',
    'domains.listAll',
    'forms.list',
    'forms.listSubmissions',
    'storage.list',
    'storage.entries',
    'storage.uploads',
    'cms.items.backreferences',
    'collaborators.list',
    'cms.items.list',
    'blog.posts.list',
    'pages.list',
    'auditLog.list',
    'apiKeys.list',
  ]) {
    assert.ok(lists.includes(id), `${id} is checked as a list`)
  }
})

test('an operation without query parameters refuses one rather than ignoring it', async (t) => {
  const s = await startServer(t)
  const site = await createWebsite(s, { name: 'No query' })
  const res = await s.api('GET', `/v1/websites/${site.id}/source/summary?limit=0`)
  assert.deepEqual([res.status, res.body.details.field], [400, 'query.limit'])
  assert.match(res.body.message, /query\.limit is not a known field/)
})

test('domains, forms and uploads in progress page like every list', async (t) => {
  // Spec (Lists): "Every list returns `{items, nextCursor}`; `nextCursor` is null at the end".
  const s = await startServer(t)
  const site = await createWebsite(s, { name: 'Paged', kind: 'static', subdomain: 'paged' })
  for (const host of ['c.example.com', 'a.example.com', 'b.example.com'])
    assert.equal((await s.api('POST', `/v1/websites/${site.id}/domains`, { body: { hostname: host } })).status, 201)
  const walk = async (path: string, name: (item: any) => string) => {
    const seen: string[][] = []
    let cursor: string | null = null
    do {
      const res: any = await s.api(
        'GET',
        `${path}${path.includes('?') ? '&' : '?'}limit=2${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`,
      )
      assert.equal(res.status, 200, JSON.stringify(res.body))
      seen.push(res.body.items.map(name))
      cursor = res.body.nextCursor
    } while (cursor !== null)
    return seen
  }
  assert.deepEqual(await walk(`/v1/websites/${site.id}/domains`, (d) => d.hostname), [
    ['a.example.com', 'b.example.com'],
    ['c.example.com'],
  ])
  assert.deepEqual(await walk('/v1/domains', (d) => d.hostname), [['a.example.com', 'b.example.com'], ['c.example.com']])

  await s.api('POST', `/v1/websites/${site.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: 'hi' }] } })
  assert.equal((await s.api('POST', `/v1/websites/${site.id}/publish`)).status, 200)
  for (const name of ['zeta', 'alpha', 'mid']) {
    const sent = await rawPost(s.plinth.port, 'paged.localhost', `/_platform/forms/${name}`, JSON.stringify({ x: 1 }), {
      'content-type': 'application/json',
    })
    assert.equal(sent.status, 200)
  }
  assert.deepEqual(await walk(`/v1/websites/${site.id}/forms`, (f) => f.name), [['alpha', 'mid'], ['zeta']])
  const forms = await s.api('GET', `/v1/websites/${site.id}/forms?limit=1`)
  assert.match(forms.body.webhookSigning.secret, /^whsec_/, 'figures beside the page stay')

  const storage = await createWebsite(s, { name: 'Files', kind: 'storage', subdomain: 'paged-files' })
  const begun = await s.api('POST', `/v1/websites/${storage.id}/objects/uploads`, {
    body: {
      files: [
        { name: 'a', byteSize: 10 },
        { name: 'b', byteSize: 20 },
        { name: 'c', byteSize: 30 },
      ],
    },
  })
  assert.equal(begun.status, 201, JSON.stringify(begun.body))
  const pages = await walk('/v1/storage/uploads', (u) => u.uploadId ?? u.id)
  assert.deepEqual(
    pages.map((p) => p.length),
    [2, 1],
  )
  assert.deepEqual(pages.flat().sort(), begun.body.files.map((u: any) => u.id).sort())
  const first = await s.api('GET', '/v1/storage/uploads?limit=1')
  assert.equal(first.body.inProgressBytes, 60, 'the allowance counts every upload, not the page')
})
