import assert from 'node:assert/strict'
import { test } from 'node:test'
import sharp from 'sharp'
import { createKey, createWebsite, startServer, type TestServer } from '../helpers/server.js'
import { API_POLL_MS, waitUntil } from '../helpers/wait.js'

async function imageAsset(server: TestServer, websiteId: string): Promise<string> {
  const png = await sharp({ create: { width: 8, height: 6, channels: 3, background: '#f00' } })
    .png()
    .toBuffer()
  const form = new FormData()
  form.set('file', new Blob([png], { type: 'image/png' }), 'red.png')
  const res = await fetch(`${server.origin}/v1/websites/${websiteId}/assets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.adminKey}` },
    body: form,
  })
  return ((await res.json()) as { id: string }).id
}

test('CMS schema: every field type validates its values with a message naming the field; type changes convert or say which items block them; a referenced collection cannot go', async (t) => {
  const server = await startServer(t)
  const w = await createWebsite(server, { name: 'Shop', subdomain: 'cms-shop' })
  const api = (method: string, path: string, body?: unknown) =>
    server.api(method, `/v1/websites/${w.id}${path}`, body === undefined ? {} : { body })
  const authors = await api('POST', '/collections', { name: 'Authors', fields: [{ name: 'Name', type: 'text', required: true }] })
  assert.equal(authors.status, 201, JSON.stringify(authors.body))
  const fields = [
    { name: 'Title', type: 'text', required: true },
    { name: 'Body', type: 'rich_text' },
    { name: 'Price', type: 'number' },
    { name: 'In stock', type: 'boolean' },
    { name: 'Release', type: 'date' },
    { name: 'Starts', type: 'datetime' },
    { name: 'Size', type: 'select', options: ['s', 'm', 'l'] },
    { name: 'Tags', type: 'multi_select', options: ['new', 'sale', 'eco'] },
    { name: 'Link', type: 'url' },
    { name: 'Contact', type: 'email' },
    { name: 'Color', type: 'color' },
    { name: 'Photo', type: 'image' },
    { name: 'Manual', type: 'file' },
    { name: 'Gallery', type: 'gallery' },
    { name: 'Author', type: 'reference', collection: 'authors' },
    { name: 'Related', type: 'multi_reference', collection: 'products' },
    { name: 'Specs', type: 'json' },
    { name: 'Sku', type: 'text', unique: true },
  ]
  const products = await api('POST', '/collections', { name: 'Products', fields })
  assert.equal(products.status, 201, JSON.stringify(products.body))
  assert.deepEqual(
    products.body.fields.map((f: any) => f.key),
    [
      'title',
      'body',
      'price',
      'inStock',
      'release',
      'starts',
      'size',
      'tags',
      'link',
      'contact',
      'color',
      'photo',
      'manual',
      'gallery',
      'author',
      'related',
      'specs',
      'sku',
    ],
  )
  const photo = await imageAsset(server, w.id)
  const ada = (await api('POST', '/collections/authors/items', { values: { name: 'Ada' }, publish: true })).body
  const good = {
    title: 'Lamp',
    body: '# A lamp',
    price: 19.5,
    inStock: true,
    release: '2026-02-01',
    starts: '2026-02-01T09:00:00Z',
    size: 'm',
    tags: ['new', 'eco'],
    link: 'https://example.com/lamp',
    contact: 'shop@example.com',
    color: '#ffcc00',
    photo,
    manual: photo,
    gallery: [photo],
    author: ada.id,
    specs: { watts: 9 },
    sku: 'L-1',
  }
  const lamp = await api('POST', '/collections/products/items', { values: good })
  assert.equal(lamp.status, 201, JSON.stringify(lamp.body))
  assert.deepEqual([lamp.body.slug, lamp.body.status, lamp.body.price, lamp.body.tags], ['lamp', 'draft', 19.5, ['new', 'eco']])
  const bad: [string, unknown, RegExp][] = [
    ['title', undefined, /title \(Title\) is required/],
    ['price', '19', /price \(number\) must be a number/],
    ['inStock', 'yes', /inStock \(boolean\) must be true or false/],
    ['release', '2026-02-30', /release \(date\) must be a date as YYYY-MM-DD/],
    ['starts', '2026-02-01 09:00', /starts \(datetime\)/],
    ['size', 'xl', /size \(select\) must be one of s, m, l/],
    ['tags', ['new', 'new'], /tags \(multi_select\)/],
    ['link', 'ftp://x', /link \(url\) must be an http\(s\) URL/],
    ['contact', 'nobody', /contact \(email\)/],
    ['color', 'red', /color \(color\)/],
    ['photo', 'ast_missing', /photo \(image\) must be an asset of this website/],
    ['gallery', ['nope'], /gallery \(gallery\)/],
    ['author', lamp.body.id, /author \(reference\) must be an item of the referenced collection/],
    ['related', [ada.id], /related \(multi_reference\)/],
    ['sku', 'L-1', /sku must be unique; item lamp already has "L-1"/],
    ['nope', 1, /products has no field nope/],
  ]
  for (const [key, value, pattern] of bad) {
    const values: Record<string, unknown> = { ...good, sku: `S-${key}`, [key]: value }
    if (value === undefined) delete values[key]
    const res = await api('POST', '/collections/products/items', { slug: `bad-${key.toLowerCase()}`, values })
    assert.ok(res.status === 400 || res.status === 409, `${key}: ${res.status}`)
    assert.match(res.body.message, pattern, key)
  }
  const related = await api('POST', '/collections/products/items', {
    values: { ...good, title: 'Shade', sku: 'S-1', related: [lamp.body.id] },
  })
  assert.equal(related.status, 201, JSON.stringify(related.body))

  // Type changes: number to text converts; text to number blocks on the items that are not numbers.
  const priceField = products.body.fields.find((f: any) => f.key === 'price')
  assert.equal((await api('PATCH', `/fields/${priceField.id}`, { type: 'text' })).status, 200)
  assert.equal((await api('GET', `/items/${lamp.body.id}`)).body.price, '19.5')
  const titleField = products.body.fields.find((f: any) => f.key === 'title')
  const blocked = await api('PATCH', `/fields/${titleField.id}`, { type: 'number' })
  assert.equal(blocked.status, 409)
  assert.match(blocked.body.message, /2 items would not fit the changed field title: lamp \(a number\), shade \(a number\)/)
  const required = await api('POST', '/collections/products/fields', { name: 'Weight', type: 'number', required: true })
  assert.equal(required.status, 409)
  // Authors are referenced by products.author: 409 naming it.
  const referenced = await api('DELETE', '/collections/authors')
  assert.equal(referenced.status, 409)
  assert.match(referenced.body.message, /products\.author/)
  const back = await api('GET', `/items/${ada.id}/backreferences`)
  assert.deepEqual(
    back.body.items.map((r: any) => [r.collection, r.field, r.item.slug]),
    [
      ['products', 'author', 'lamp'],
      ['products', 'author', 'shade'],
    ],
  )
  // Spec (Lists): "Every list returns `{items, nextCursor}`": a page at a time, like every list.
  const first = await api('GET', `/items/${ada.id}/backreferences?limit=1`)
  assert.deepEqual([first.body.items.map((r: any) => r.item.slug), typeof first.body.nextCursor], [['lamp'], 'string'])
  const second = await api('GET', `/items/${ada.id}/backreferences?limit=1&cursor=${encodeURIComponent(first.body.nextCursor)}`)
  assert.deepEqual([second.body.items.map((r: any) => r.item.slug), second.body.nextCursor], [['shade'], null])
  // Depth resolves references and assets.
  const deep = (await api('GET', `/items/${lamp.body.id}?depth=1`)).body
  assert.equal(deep.author.name, 'Ada')
  assert.deepEqual([deep.photo.kind, deep.photo.width, deep.photo.height, deep.photo.filename], ['image', 8, 6, 'red.png'])
  const schema = (await api('GET', '/schema')).body
  assert.deepEqual(
    schema.collections.map((c: any) => [c.slug, c.itemCount]),
    [
      ['authors', 1],
      ['products', 2],
    ],
  )
  const audit = await server.api('GET', '/v1/audit-log?eventType=cms.collection_created,cms.field_updated')
  assert.deepEqual(audit.body.items.map((e: any) => e.eventType).sort(), [
    'cms.collection_created',
    'cms.collection_created',
    'cms.field_updated',
  ])
})

test('CMS items: every filter operator, and/or, sort, search, paging; soft delete and restore; publish, schedule on the clock and unpublish; content editors write items but not the schema; OpenAPI marks it deprecated', async (t) => {
  const server = await startServer(t)
  const w = await createWebsite(server, { name: 'Blog', subdomain: 'cms-blog' })
  const api = (method: string, path: string, body?: unknown, key?: string) =>
    server.api(method, `/v1/websites/${w.id}${path}`, { ...(body === undefined ? {} : { body }), ...(key === undefined ? {} : { key }) })
  await api('POST', '/collections', {
    name: 'Posts',
    fields: [
      { name: 'Title', type: 'text' },
      { name: 'Views', type: 'number' },
      { name: 'Tags', type: 'multi_select', options: ['a', 'b', 'c'] },
      { name: 'Note', type: 'text' },
    ],
  })
  const rows: [string, number, string[], string | undefined][] = [
    ['Alpha news', 10, ['a'], 'x'],
    ['Beta story', 20, ['b'], undefined],
    ['Gamma news', 30, ['a', 'c'], 'y'],
    ['Delta', 40, [], undefined],
  ]
  const ids: Record<string, string> = {}
  for (const [title, views, tags, note] of rows) {
    const made = await api('POST', '/collections/posts/items', {
      values: { title, views, tags, ...(note === undefined ? {} : { note }) },
      publish: true,
    })
    ids[made.body.slug] = made.body.id
  }
  const list = async (query: string) => {
    const res = await api('GET', `/collections/posts/items?${query}`)
    assert.equal(res.status, 200, JSON.stringify(res.body))
    return res.body.items.map((i: any) => i.slug)
  }
  const f = (filter: unknown) => `filter=${encodeURIComponent(JSON.stringify(filter))}`
  assert.deepEqual(await list(f({ views: { eq: 20 } })), ['beta-story'])
  assert.deepEqual(await list(f({ views: { neq: 20 } })), ['alpha-news', 'gamma-news', 'delta'])
  assert.deepEqual(await list(f({ title: { contains: 'NEWS' } })), ['alpha-news', 'gamma-news'])
  assert.deepEqual(await list(f({ tags: { contains: 'a' } })), ['alpha-news', 'gamma-news'])
  assert.deepEqual(await list(f({ title: { startsWith: 'be' } })), ['beta-story'])
  assert.deepEqual(await list(f({ title: { endsWith: 'story' } })), ['beta-story'])
  assert.deepEqual(await list(f({ views: { gt: 20 } })), ['gamma-news', 'delta'])
  assert.deepEqual(await list(f({ views: { gte: 20, lt: 40 } })), ['beta-story', 'gamma-news'])
  assert.deepEqual(await list(f({ views: { lte: 10 } })), ['alpha-news'])
  assert.deepEqual(await list(f({ views: { in: [10, 40] } })), ['alpha-news', 'delta'])
  assert.deepEqual(await list(f({ tags: { nin: ['a'] } })), ['beta-story', 'delta'])
  assert.deepEqual(await list(f({ note: { exists: true } })), ['alpha-news', 'gamma-news'])
  assert.deepEqual(await list(f({ note: { exists: false } })), ['beta-story', 'delta'])
  assert.deepEqual(await list(`${f({ views: { eq: 10 }, title: { eq: 'Delta' } })}&filterLogic=or`), ['alpha-news', 'delta'])
  assert.deepEqual(await list(`${f({ views: { eq: 10 }, title: { eq: 'Delta' } })}&filterLogic=and`), [])
  assert.deepEqual(await list('sort=views:desc'), ['delta', 'gamma-news', 'beta-story', 'alpha-news'])
  assert.deepEqual(await list(`sort=${encodeURIComponent(JSON.stringify({ field: 'title', direction: 'asc' }))}`), [
    'alpha-news',
    'beta-story',
    'delta',
    'gamma-news',
  ])
  assert.deepEqual(await list('search=news'), ['alpha-news', 'gamma-news'])
  const page = (await api('GET', '/collections/posts/items?limit=3')).body
  // Spec (Lists): "cursors are opaque": one made by the list's codec, not an offset in clear.
  assert.deepEqual([page.items.length, page.total, typeof page.nextCursor], [3, 4, 'string'])
  assert.deepEqual(
    (await api('GET', `/collections/posts/items?limit=3&cursor=${encodeURIComponent(page.nextCursor)}`)).body.items.map((i: any) => i.slug),
    ['delta'],
  )
  assert.equal((await api('GET', '/collections/posts/items?limit=3&cursor=3')).status, 400, 'a cursor the list did not make')
  assert.deepEqual(
    (await api('GET', '/collections/posts/items?limit=3&offset=3')).body.items.map((i: any) => i.slug),
    ['delta'],
    'offset still starts a page where asked',
  )
  const unknown = await api('GET', `/collections/posts/items?${f({ nope: { eq: 1 } })}`)
  assert.equal(unknown.status, 400)
  assert.match(unknown.body.message, /posts has no field nope/)
  assert.equal((await api('GET', `/collections/posts/items?${f({ views: { like: 1 } })}`)).status, 400)

  // Soft delete and restore.
  await api('DELETE', `/items/${ids.delta}`)
  assert.deepEqual(await list(''), ['alpha-news', 'beta-story', 'gamma-news'])
  assert.deepEqual(await list('deleted=true'), ['delta'])
  await api('POST', `/items/${ids.delta}/restore`)
  assert.deepEqual(await list('sort=views:desc&limit=1'), ['delta'])

  // Publication: unpublish, schedule an hour ahead, the clock moves.
  assert.equal((await api('POST', `/items/${ids['beta-story']}/set-published`, { action: 'unpublish' })).body.status, 'draft')
  const at = new Date(server.clock.now() + 60 * 60 * 1000).toISOString()
  const scheduled = await api('POST', `/items/${ids['beta-story']}/set-published`, { action: 'schedule', publishAt: at })
  assert.deepEqual([scheduled.body.status, scheduled.body.publishAt], ['scheduled', at])
  assert.deepEqual(await list('status=scheduled'), ['beta-story'])
  server.clock.advance(61 * 60 * 1000)
  const due = (await api('GET', `/items/${ids['beta-story']}`)).body
  assert.deepEqual([due.status, due.publishedAt], ['published', at])
  assert.equal(
    (
      await api('POST', `/items/${ids['beta-story']}/set-published`, {
        action: 'schedule',
        publishAt: new Date(server.clock.now() - 1000).toISOString(),
      })
    ).status,
    400,
  )

  // Roles: a content editor writes items, not the schema.
  const editor = await createKey(server, { kind: 'organization', role: 'content_editor' })
  assert.equal((await api('POST', '/collections/posts/items', { values: { title: 'By the editor' } }, editor.secret)).status, 201)
  const schema = await api('POST', '/collections', { name: 'Nope' }, editor.secret)
  assert.deepEqual([schema.status, schema.body.details.capability], [403, 'cms.schema.write'])

  const doc = (await server.api('GET', '/openapi.json', { key: null })).body
  assert.equal(doc.paths['/v1/websites/{websiteId}/collections/{colId}/items'].get.deprecated, true)
  assert.equal(doc.paths['/v1/websites/{websiteId}/assets'].get.deprecated, undefined, 'assets are not deprecated')
})

test('legacy page records are stored, listed, read, changed and deleted through the API, and never served by the site', async (t) => {
  const server = await startServer(t)
  const w = await createWebsite(server, { name: 'Old', kind: 'static', subdomain: 'legacy-old' })
  await server.api('POST', `/v1/websites/${w.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: '<h1>Home</h1>' }] } })
  await server.api('POST', `/v1/websites/${w.id}/publish`)
  const api = (method: string, path: string, body?: unknown, key?: string) =>
    server.api(method, `/v1/websites/${w.id}${path}`, { ...(body === undefined ? {} : { body }), ...(key === undefined ? {} : { key }) })
  const made = await api('POST', '/pages', { title: 'About us', content: '# About\nWe make lamps.', description: 'Who we are' })
  assert.equal(made.status, 201, JSON.stringify(made.body))
  assert.deepEqual([made.body.slug, made.body.format, made.body.rendered], ['about-us', 'markdown', false])
  assert.equal((await api('POST', '/pages', { title: 'Again', slug: 'about-us' })).status, 409)
  await api('POST', '/pages', { title: 'Contact', format: 'html', content: '<p>Write to us</p>' })
  assert.deepEqual(
    (await api('GET', '/pages')).body.items.map((p: any) => p.slug),
    ['about-us', 'contact'],
  )
  assert.equal((await api('GET', '/pages/about-us')).body.id, made.body.id)
  const changed = await api('PATCH', `/pages/${made.body.id}`, { slug: 'about', content: 'New text' })
  assert.deepEqual([changed.body.slug, changed.body.content], ['about', 'New text'])
  // Never rendered: the site has no such page.
  for (const path of ['/about', '/about-us', '/about/', '/contact'])
    assert.equal((await server.site('legacy-old.localhost', path)).status, 404, path)
  const editor = await createKey(server, { kind: 'organization', role: 'content_editor' })
  assert.equal((await api('GET', '/pages', undefined, editor.secret)).status, 200, 'content editors read pages')
  assert.equal((await api('POST', '/pages', { title: 'X' }, editor.secret)).status, 403, 'and do not write them')
  assert.equal((await api('DELETE', '/pages/about')).status, 200)
  assert.equal((await api('GET', '/pages/about')).status, 404)
  const doc = (await server.api('GET', '/openapi.json', { key: null })).body
  assert.equal(doc.paths['/v1/websites/{websiteId}/pages'].post.deprecated, true)
})

test('framework pages read the CMS at build: cms.<collection> of @platform lists the published items, references resolved one level; at check time placeholder items stand in', async (t) => {
  const server = await startServer(t)
  const w = await createWebsite(server, { name: 'Journal', subdomain: 'cms-journal' })
  const api = (method: string, path: string, body?: unknown) =>
    server.api(method, `/v1/websites/${w.id}${path}`, body === undefined ? {} : { body })
  await api('POST', '/collections', { name: 'Authors', fields: [{ name: 'Name', type: 'text' }] })
  await api('POST', '/collections', {
    name: 'Blog posts',
    slug: 'blog-posts',
    fields: [
      { name: 'Title', type: 'text' },
      { name: 'Author', type: 'reference', collection: 'authors' },
    ],
  })
  const ada = (await api('POST', '/collections/authors/items', { values: { name: 'Ada' }, publish: true })).body
  await api('POST', '/collections/blog-posts/items', { values: { title: 'Beta', author: ada.id }, publish: true })
  await api('POST', '/collections/blog-posts/items', { values: { title: 'Alpha', author: ada.id }, publish: true })
  await api('POST', '/collections/blog-posts/items', { values: { title: 'Draft only', author: ada.id } })
  const token = (await api('POST', '/source/lease')).body.leaseToken
  const page = [
    "import { definePage, cms } from '@platform'",
    'export default definePage({',
    "  route: '/',",
    "  queries: () => ({ posts: cms.blogPosts.list({ sort: { field: 'title', direction: 'asc' } }), first: cms.blogPosts.bySlug('alpha') }),",
    '  render: ({ data }) => (',
    '    <main>',
    '      <ul>{data.posts.items.map((p) => <li key={p.id}>{String(p.title)} by {(p.author as { name: string } | null)?.name}</li>)}</ul>',
    '      <p id="count">{data.posts.total}</p><p id="first">{data.first === null ? "none" : String(data.first.title)}</p>',
    '    </main>',
    '  ),',
    '})',
  ].join('\n')
  const written = await api('PUT', '/source/file', { leaseToken: token, file: { type: 'page', name: 'home' }, content: page })
  assert.ok(written.status === 200 || written.status === 201, JSON.stringify(written.body))
  const ensured = await api('POST', '/deployments/ensure', { version: written.body.version })
  assert.equal(ensured.body.status, 'ready', JSON.stringify(ensured.body))
  assert.equal((await api('POST', '/publish')).status, 200)
  const html = (await server.site('cms-journal.localhost', '/')).body.toString()
  assert.match(html, /<li>Alpha<!-- --> by <!-- -->Ada<\/li><li>Beta<!-- --> by <!-- -->Ada<\/li><\/ul>/)
  assert.doesNotMatch(html, /Draft only/, 'only published items reach the site')
  assert.match(html, /<p id="count">2<\/p><p id="first">Alpha<\/p>/)
  // A dynamic route: one page per published post, its metadata template resolved per page.
  const postPage = [
    "import { definePage, cms } from '@platform'",
    'export default definePage({',
    "  route: '/blog/:slug',",
    "  metadata: { title: '{{ data.post.title }}' },",
    '  queries: ({ params }) => ({ post: cms.blogPosts.bySlug(params.slug) }),',
    '  render: ({ data }) => {',
    "    if (data.post !== null && data.post.title === 'Crash') throw new Error('this post cannot be shown')",
    '    return <article><h1>{data.post === null ? "Not found" : String(data.post.title)}</h1></article>',
    '  },',
    '})',
  ].join('\n')
  const second = await api('PUT', '/source/file', { leaseToken: token, file: { type: 'page', name: 'post' }, content: postPage })
  const built = await api('POST', '/deployments/ensure', { version: second.body.version })
  assert.equal(built.body.status, 'ready')
  assert.deepEqual(built.body.diagnostics, [], 'a route bound to CMS items is not warned about')
  assert.equal((await api('POST', '/publish')).status, 200)
  const alpha = await server.site('cms-journal.localhost', '/blog/alpha')
  assert.equal(alpha.status, 200)
  assert.match(alpha.body.toString(), /<title>Alpha<\/title>[\s\S]*<h1>Alpha<\/h1>/)
  assert.match((await server.site('cms-journal.localhost', '/blog/beta')).body.toString(), /<h1>Beta<\/h1>/)
  assert.equal((await server.site('cms-journal.localhost', '/blog/draft-only')).status, 404, 'a draft has no page')
  // Unpublished, beta is gone from the next render.
  const beta = (await api('GET', '/items/find?collection=blog-posts&slug=beta')).body
  await api('POST', `/items/${beta.id}/set-published`, { action: 'unpublish' })
  const third = await api('PUT', '/source/file', {
    leaseToken: token,
    file: { type: 'page', name: 'post' },
    content: `// The next render.\n${postPage}`,
  })
  const rebuilt = await api('POST', '/deployments/ensure', { version: third.body.version })
  assert.equal(rebuilt.body.status, 'ready', JSON.stringify(rebuilt.body))
  assert.equal((await api('POST', '/publish')).status, 200)
  assert.equal((await server.site('cms-journal.localhost', '/blog/beta')).status, 404)
  assert.equal((await server.site('cms-journal.localhost', '/blog/alpha')).status, 200)
  // Item changes re-render the live site within a few seconds, without a new version.
  const until = async (path: string, pattern: RegExp, status = 200) => {
    await waitUntil(async () => {
      const res = await server.site('cms-journal.localhost', path)
      return res.status === status && pattern.test(res.body.toString())
    }, `${path} to answer ${status} matching ${pattern}`)
  }
  await api('POST', '/collections/blog-posts/items', { values: { title: 'Gamma', author: ada.id }, publish: true })
  await until('/', /Gamma<!-- --> by <!-- -->Ada/)
  await until('/blog/gamma', /<h1>Gamma<\/h1>/)
  // A scheduled post appears when its time comes on the clock.
  const at = new Date(server.clock.now() + 60 * 60 * 1000).toISOString()
  const delta = (await api('POST', '/collections/blog-posts/items', { values: { title: 'Delta', author: ada.id }, publishAt: at })).body
  assert.equal(delta.status, 'scheduled')
  assert.equal((await server.site('cms-journal.localhost', '/blog/delta')).status, 404)
  server.clock.advance(61 * 60 * 1000)
  await until('/blog/delta', /<h1>Delta<\/h1>/)
  // A re-render that fails leaves the live site as it was and says so in deployments.status.
  await api('POST', '/collections/blog-posts/items', { values: { title: 'Crash', author: ada.id }, publish: true })
  let status: any
  await waitUntil(
    async () => {
      status = (await api('GET', '/deployments/status?target=published')).body
      return status.diagnostics.some((d: any) => /re-render after a CMS change failed/.test(d.message))
    },
    'the failed re-render to be reported',
    15_000,
    API_POLL_MS,
  ).catch(() => undefined)
  const warning = status.diagnostics.find((d: any) => /re-render after a CMS change failed/.test(d.message))
  assert.ok(warning, JSON.stringify(status))
  assert.match(warning.message, /this post cannot be shown/)
  assert.equal(status.status, 'ready')
  assert.equal(
    (await server.site('cms-journal.localhost', '/blog/gamma')).status,
    200,
    'the live site still serves the rendering before it',
  )
  assert.equal((await server.site('cms-journal.localhost', '/blog/crash')).status, 404)
  // At check time the same page renders against placeholders that satisfy the schema.
  const checked = await api('POST', '/head/check')
  assert.equal(checked.status, 200, JSON.stringify(checked.body))
  assert.equal(checked.body.ok, true, JSON.stringify(checked.body))
})

test("@platform types cms from the site's schema: a typo in a field name and a read through two references are type errors; a field added is a type the next check knows", async (t) => {
  const server = await startServer(t)
  const w = await createWebsite(server, { name: 'Typed CMS', subdomain: 'cms-typed' })
  const api = (method: string, path: string, body?: unknown) =>
    server.api(method, `/v1/websites/${w.id}${path}`, body === undefined ? {} : { body })
  await api('POST', '/collections', { name: 'Companies', fields: [{ name: 'Name', type: 'text', required: true }] })
  await api('POST', '/collections', {
    name: 'Authors',
    fields: [
      { name: 'Name', type: 'text', required: true },
      { name: 'Company', type: 'reference', collection: 'companies' },
    ],
  })
  const posts = (
    await api('POST', '/collections', {
      name: 'Posts',
      fields: [
        { name: 'Title', type: 'text', required: true },
        { name: 'Author', type: 'reference', collection: 'authors' },
        { name: 'Size', type: 'select', options: ['s', 'm'] },
      ],
    })
  ).body
  const token = (await api('POST', '/source/lease')).body.leaseToken
  const check = async (expression: string) => {
    const page = `import { definePage, cms } from '@platform'\nexport default definePage({ route: '/', queries: () => ({ posts: cms.posts.list().items }), render: ({ data }) => <ul>{data.posts.map((p) => <li key={p.id}>{${expression}}</li>)}</ul> })\n`
    const written = await api('PUT', '/source/file', { leaseToken: token, file: { type: 'page', name: 'home' }, content: page })
    assert.ok(written.status === 200 || written.status === 201, JSON.stringify(written.body))
    return (await api('POST', '/head/check')).body
  }
  const fine = await check(
    "p.title.toUpperCase() + ' ' + (p.author?.name ?? '') + ' ' + (p.author?.company ?? '') + (p.size === 's' ? 'small' : '')",
  )
  assert.equal(fine.ok, true, JSON.stringify(fine.diagnostics))
  const typo = await check('p.titel')
  assert.equal(typo.ok, false)
  assert.match(typo.diagnostics[0].message, /Property 'titel' does not exist/)
  const deep = await check('p.author?.company?.name')
  assert.equal(deep.ok, false, "a reference resolves one level deep: the author's company is an id")
  assert.match(deep.diagnostics[0].message, /'name' does not exist on type 'string'/)
  const before = await check('p.subtitle')
  assert.equal(before.ok, false)
  await api('POST', `/collections/${posts.id}/fields`, { name: 'Subtitle', type: 'text' })
  const after = await check("p.subtitle ?? 'none'")
  assert.equal(after.ok, true, JSON.stringify(after.diagnostics))
})

test('the managed blog: the first post makes the collection and scaffolds /blog and /blog/:slug on a framework site; posts by id or slug; an existing collection is completed', async (t) => {
  const server = await startServer(t)
  const w = await createWebsite(server, { name: 'Blogged', subdomain: 'cms-blogged' })
  const api = (method: string, path: string, body?: unknown) =>
    server.api(method, `/v1/websites/${w.id}${path}`, body === undefined ? {} : { body })
  const token = (await api('POST', '/source/lease')).body.leaseToken
  await api('PUT', '/source/file', {
    leaseToken: token,
    file: { type: 'page', name: 'home' },
    content: "import { definePage } from '@platform'\nexport default definePage({ route: '/', render: () => <h1>Home</h1> })\n",
  })
  assert.equal((await api('GET', '/blog')).body.collection, null)
  const first = await api('POST', '/blog/posts', {
    title: 'Hello world',
    body: '# Hello\n\nFirst paragraph.\n\nSecond paragraph.',
    excerpt: 'The first post',
    date: '2026-01-01',
    tags: ['news'],
  })
  assert.equal(first.status, 201, JSON.stringify(first.body))
  assert.deepEqual(first.body.collection, { created: true, addedFields: ['title', 'date', 'excerpt', 'body', 'tags', 'cover'] })
  assert.deepEqual(first.body.rendering, {
    kind: 'framework',
    connected: true,
    scaffolded: true,
    indexPath: '/blog',
    postPathPattern: '/blog/:slug',
  })
  assert.match(first.body.notes.join(' '), /took the edit lease/)
  assert.equal(
    (await api('PUT', '/source/file', { leaseToken: token, file: { type: 'page', name: 'home' }, content: 'x' })).status,
    409,
    'the old lease token stopped working',
  )
  const second = await api('POST', '/blog/posts', { title: 'Second post', body: 'More.', date: '2026-02-01' })
  assert.deepEqual(
    [second.body.collection.created, second.body.rendering.scaffolded, second.body.rendering.connected],
    [false, false, true],
  )
  const head = (await api('GET', '/deployments/status')).body
  const built = await api('POST', '/deployments/ensure', { version: head.version })
  assert.equal(built.body.status, 'ready', JSON.stringify(built.body))
  assert.equal((await api('POST', '/publish')).status, 200)
  const index = (await server.site('cms-blogged.localhost', '/blog')).body.toString()
  assert.match(index, /Second post[\s\S]*Hello world/, 'newest first')
  const post = (await server.site('cms-blogged.localhost', '/blog/hello-world')).body.toString()
  assert.match(post, /<title>Hello world<\/title>/)
  assert.match(post, /<div><h1>Hello<\/h1>\n<p>First paragraph.<\/p>\n<p>Second paragraph.<\/p>\n<\/div>/, 'the Markdown body as HTML')
  const listed = (await api('GET', '/blog/posts')).body
  assert.deepEqual(
    listed.items.map((p: any) => p.slug),
    ['second-post', 'hello-world'],
  )
  // By slug: unpublished, it leaves the site on the re-render.
  const hidden = await api('PATCH', '/blog/posts/hello-world', { publish: false })
  assert.equal(hidden.body.post.status, 'draft')
  await waitUntil(
    async () => (await server.site('cms-blogged.localhost', '/blog/hello-world')).status === 404,
    'the unpublished post to leave the site',
  )
  assert.equal((await server.site('cms-blogged.localhost', '/blog/hello-world')).status, 404)
  assert.deepEqual((await api('GET', '/blog')).body.collection.posts, 2)

  // A site whose blog-posts collection exists keeps it, with the missing fields added as optional.
  const other = await createWebsite(server, { name: 'Existing', kind: 'static', subdomain: 'cms-existing' })
  await server.api('POST', `/v1/websites/${other.id}/collections`, {
    body: {
      name: 'Posts',
      slug: 'blog-posts',
      fields: [
        { name: 'Title', type: 'text' },
        { name: 'Date', type: 'date' },
      ],
    },
  })
  const reused = await server.api('POST', `/v1/websites/${other.id}/blog/posts`, { body: { title: 'Reused', body: 'Text' } })
  assert.deepEqual(reused.body.collection, { created: false, addedFields: ['excerpt', 'body', 'tags', 'cover'] })
  assert.deepEqual([reused.body.rendering.kind, reused.body.rendering.connected], ['static', true])
})

test("a static site's blog: /blog/ and a page a published post are generated from the collection (Markdown as HTML), served beside its files, and follow post changes", async (t) => {
  const server = await startServer(t)
  const w = await createWebsite(server, { name: 'Plain', kind: 'static', subdomain: 'cms-plain' })
  await server.api('POST', `/v1/websites/${w.id}/deploy/json`, {
    body: { files: [{ path: 'index.html', content: '<h1>Plain home</h1>' }] },
  })
  assert.equal((await server.api('POST', `/v1/websites/${w.id}/publish`)).status, 200)
  const host = 'cms-plain.localhost'
  const made = await server.api('POST', `/v1/websites/${w.id}/blog/posts`, {
    body: {
      title: 'Static <news>',
      body: '## Heading\n\nSome *emphasis* and a [link](https://example.com).',
      excerpt: 'Short',
      date: '2026-03-01',
    },
  })
  assert.equal(made.status, 201, JSON.stringify(made.body))
  assert.deepEqual([made.body.rendering.kind, made.body.rendering.connected], ['static', true])
  const until = (path: string, status: number) =>
    waitUntil(async () => {
      const res = await server.site(host, path)
      return res.status === status && res
    }, `${path} to answer ${status}`)
  // The addresses the answers give are the ones the pages answer at, without a redirect.
  const paths = made.body.rendering
  assert.equal((await until(paths.indexPath, 200)).status, 200, paths.indexPath)
  assert.equal((await until(paths.postPathPattern.replace(':slug', made.body.post.slug), 200)).status, 200, paths.postPathPattern)
  const blog = (await server.api('GET', `/v1/websites/${w.id}/blog`)).body
  for (const url of [blog.urls.index, blog.urls.post.replace(':slug', made.body.post.slug)])
    assert.equal((await server.site(host, new URL(url).pathname)).status, 200, url)
  const index = await until('/blog/', 200)
  assert.equal(index.status, 200)
  assert.match(index.body.toString(), /<a href="\/blog\/static-news\/">Static &lt;news&gt;<\/a> <time datetime="2026-03-01">/)
  const post = (await server.site(host, '/blog/static-news/')).body.toString()
  assert.match(post, /<h2>Heading<\/h2>\n<p>Some <em>emphasis<\/em> and a <a href="https:\/\/example.com">link<\/a>.<\/p>/)
  assert.match(post, /<title>Static &lt;news&gt;<\/title>/)
  assert.equal((await server.site(host, '/')).body.toString(), '<h1>Plain home</h1>', 'the deployed files are untouched')
  await server.api('PATCH', `/v1/websites/${w.id}/blog/posts/static-news`, { body: { publish: false } })
  assert.equal((await until('/blog/static-news/', 404)).status, 404)
  assert.equal((await server.site(host, '/blog/')).status, 404, 'no published post: no blog pages')
})
