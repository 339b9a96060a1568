import assert from 'node:assert/strict'
import { gunzipSync, brotliDecompressSync } from 'node:zlib'
import { test } from 'node:test'
import { createWebsite, startServer, type TestServer } from '../helpers/server.js'
import { rawRequest } from '../helpers/http.js'

const PAGE = `<!doctype html><title>Home</title>${'<p>Lorem ipsum dolor sit amet.</p>'.repeat(100)}`

async function publishedSite(s: TestServer, label: string, files: Record<string, string | Buffer>) {
  const w = await createWebsite(s, { name: label, kind: 'static', subdomain: label })
  const body = {
    files: Object.entries(files).map(([path, content]) =>
      Buffer.isBuffer(content) ? { path, content: content.toString('base64'), encoding: 'base64' } : { path, content },
    ),
  }
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/deploy/json`, { body })).status, 201)
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/publish`)).status, 200)
  return w
}

test('published HTML carries the platform defaults; the draft host is noindex and no-store', async (t) => {
  const s = await startServer(t)
  await publishedSite(s, 'heads', { 'index.html': PAGE, 'app.js': 'console.log(1)' })
  const live = await s.site('heads.localhost', '/')
  assert.equal(live.status, 200)
  // Host names compare case-insensitively, with or without the port and the root's trailing dot.
  for (const host of ['HEADS.Localhost', `heads.localhost:${s.plinth.port}`, 'heads.localhost.', 'Heads.localhost.:80']) {
    assert.deepEqual((await s.site(host, '/')).body, live.body, host)
  }
  assert.equal(live.headers['content-type'], 'text/html; charset=utf-8')
  assert.equal(live.headers['cache-control'], 'public, max-age=0, must-revalidate')
  assert.equal(live.headers['x-content-type-options'], 'nosniff')
  assert.equal(live.headers['referrer-policy'], 'strict-origin-when-cross-origin')
  assert.match(String(live.headers['permissions-policy']), /camera=\(\)/)
  assert.equal(live.headers['strict-transport-security'], 'max-age=31536000')
  assert.equal(live.headers['x-robots-tag'], undefined)
  assert.equal(live.headers['content-length'], String(Buffer.byteLength(PAGE)))
  assert.match(String(live.headers.etag), /^"[0-9a-f]{32}"$/)
  // Every answer of a version's files names that version (version 1 is the empty first one).
  assert.equal(live.headers['x-plinth-version'], '2')
  const js = await s.site('heads.localhost', '/app.js')
  assert.equal(js.headers['content-type'], 'text/javascript; charset=utf-8')
  assert.equal(js.headers['strict-transport-security'], undefined)
  assert.equal(js.headers['x-plinth-version'], '2')
  const draft = await s.site('draft--heads.localhost', '/')
  assert.equal(draft.headers['x-robots-tag'], 'noindex')
  assert.equal(draft.headers['cache-control'], 'no-store')
  assert.equal(draft.headers['strict-transport-security'], undefined)
  assert.equal(draft.body.toString(), PAGE)
  assert.equal(draft.headers['x-plinth-version'], '2')
})

test('gzip and brotli variants are chosen by Accept-Encoding, with Vary', async (t) => {
  const s = await startServer(t)
  await publishedSite(s, 'zip', { 'index.html': PAGE, 'tiny.html': 'small', 'img.png': Buffer.alloc(5000, 1) })
  const br = await s.site('zip.localhost', '/', { 'accept-encoding': 'gzip, deflate, br' })
  assert.equal(br.headers['content-encoding'], 'br')
  assert.equal(br.headers.vary, 'Accept-Encoding')
  assert.equal(brotliDecompressSync(br.body).toString(), PAGE)
  assert.ok(br.body.length < PAGE.length / 5)
  const gz = await s.site('zip.localhost', '/', { 'accept-encoding': 'gzip' })
  assert.equal(gz.headers['content-encoding'], 'gzip')
  assert.equal(gunzipSync(gz.body).toString(), PAGE)
  const qZero = await s.site('zip.localhost', '/', { 'accept-encoding': 'br;q=0, gzip;q=0.5' })
  assert.equal(qZero.headers['content-encoding'], 'gzip')
  const plain = await s.site('zip.localhost', '/')
  assert.equal(plain.headers['content-encoding'], undefined)
  assert.equal(plain.headers.vary, 'Accept-Encoding')
  assert.notEqual(br.headers.etag, plain.headers.etag)
  // Under 1 KiB, or not compressible: one representation, no Vary.
  const tiny = await s.site('zip.localhost', '/tiny', { 'accept-encoding': 'br' })
  assert.deepEqual([tiny.headers['content-encoding'], tiny.headers.vary], [undefined, undefined])
  const png = await s.site('zip.localhost', '/img.png', { 'accept-encoding': 'br' })
  assert.deepEqual([png.headers['content-encoding'], png.headers['content-type']], [undefined, 'image/png'])
})

test('If-None-Match gives 304; a single byte range gives 206, an unsatisfiable one 416', async (t) => {
  const s = await startServer(t)
  await publishedSite(s, 'cond', { 'index.html': PAGE, 'data.txt': '0123456789' })
  const first = await s.site('cond.localhost', '/', { 'accept-encoding': 'br' })
  const etag = String(first.headers.etag)
  const revalidate = await s.site('cond.localhost', '/', { 'if-none-match': etag, 'accept-encoding': 'br' })
  assert.equal(revalidate.status, 304)
  assert.equal(revalidate.body.length, 0)
  assert.equal(revalidate.headers.etag, etag)
  assert.equal(revalidate.headers['cache-control'], 'public, max-age=0, must-revalidate')
  assert.equal((await s.site('cond.localhost', '/', { 'if-none-match': '"something-else"' })).status, 200)
  const range = await s.site('cond.localhost', '/data.txt', { range: 'bytes=2-5' })
  assert.equal(range.status, 206)
  assert.equal(range.body.toString(), '2345')
  assert.equal(range.headers['content-range'], 'bytes 2-5/10')
  const suffix = await s.site('cond.localhost', '/data.txt', { range: 'bytes=-3' })
  assert.deepEqual([suffix.status, suffix.body.toString()], [206, '789'])
  const open = await s.site('cond.localhost', '/data.txt', { range: 'bytes=7-' })
  assert.deepEqual([open.status, open.body.toString()], [206, '789'])
  const unsatisfiable = await s.site('cond.localhost', '/data.txt', { range: 'bytes=10-20' })
  assert.equal(unsatisfiable.status, 416)
  assert.equal(unsatisfiable.headers['content-range'], 'bytes */10')
  const multi = await s.site('cond.localhost', '/data.txt', { range: 'bytes=0-1,3-4' })
  assert.deepEqual([multi.status, multi.body.toString()], [200, '0123456789'])
  const staleIfRange = await s.site('cond.localhost', '/data.txt', { range: 'bytes=0-1', 'if-range': '"old"' })
  assert.equal(staleIfRange.status, 200)
})

test('a Range on an empty file is ignored: 200 with no body, never a Content-Range of no bytes', async (t) => {
  const s = await startServer(t)
  await publishedSite(s, 'empty', { 'index.html': 'home', 'empty.txt': '' })
  for (const range of ['bytes=-1', 'bytes=0-', 'bytes=0-0', 'bytes=-99999999999999999999']) {
    const res = await s.site('empty.localhost', '/empty.txt', { range })
    assert.deepEqual([res.status, res.body.length, res.headers['content-range']], [200, 0, undefined], range)
  }
})

test('the same bytes under a new Content-Type get a new ETag, so a cache never keeps the old type', async (t) => {
  const s = await startServer(t)
  const w = await publishedSite(s, 'retype', { data: '{"a":1}' })
  const before = await s.site('draft--retype.localhost', '/data')
  assert.equal(before.headers['content-type'], 'application/octet-stream')
  const redeploy = await s.api('POST', `/v1/websites/${w.id}/deploy/json`, {
    body: { files: [{ path: 'data', content: '{"a":1}', contentType: 'application/json' }] },
  })
  assert.equal(redeploy.body.changed, true)
  const after = await s.site('draft--retype.localhost', '/data', { 'if-none-match': String(before.headers.etag) })
  assert.equal(after.status, 200)
  assert.equal(after.headers['content-type'], 'application/json; charset=utf-8')
  assert.notEqual(after.headers.etag, before.headers.etag)
  assert.equal((await s.site('draft--retype.localhost', '/data', { 'if-none-match': String(after.headers.etag) })).status, 304)
})

test("pretty URLs: one address per page, the peers' way; the other spellings answer 308 to it, the query kept", async (t) => {
  const s = await startServer(t)
  await publishedSite(s, 'pretty', {
    'index.html': 'home',
    'about.html': 'about page',
    'team/index.html': 'team index',
    'blog/index.html': 'blog index',
    'blog.html': 'blog page',
    'docs/guide.html': 'guide',
    'notes.txt': 'plain',
  })
  const get = async (path: string, host = 'pretty.localhost') => {
    const res = await s.site(host, path)
    return res.status === 308 ? `308 ${res.headers.location}` : `${res.status} ${res.body.toString().slice(0, 20)}`
  }
  assert.equal(await get('/'), '200 home')
  assert.equal(await get('/about'), '200 about page')
  assert.equal(await get('/team/'), '200 team index')
  assert.equal(await get('/blog'), '200 blog page')
  assert.equal(await get('/blog/'), '200 blog index')
  assert.equal(await get('/docs/guide'), '200 guide')
  assert.equal(await get('/notes.txt'), '200 plain')
  assert.equal(await get('/about?utm_source=x&y=1'), '200 about page')
  // A page has one address: a folder's page ends in /, a file's page drops .html (relative links resolve as written).
  assert.equal(await get('/index.html'), '308 /')
  assert.equal(await get('/about.html'), '308 /about')
  assert.equal(await get('/about/'), '308 /about')
  assert.equal(await get('/team'), '308 /team/')
  assert.equal(await get('/team/index.html?x=1'), '308 /team/?x=1')
  assert.equal(await get('/blog.html'), '308 /blog')
  assert.equal(await get('/blog/index.html'), '308 /blog/')
  assert.equal(await get('/docs/guide.html?a=b&c'), '308 /docs/guide?a=b&c')
  assert.equal(await get('/notes'), '404 <!doctype html><html')
  // The draft host moves the same way, not cached, and names the version it came from.
  const moved = await s.site('draft--pretty.localhost', '/about.html')
  const page = await s.site('draft--pretty.localhost', '/about')
  assert.deepEqual(
    [moved.status, moved.headers.location, moved.headers['cache-control'], moved.headers['x-plinth-version']],
    [308, '/about', 'no-store', page.headers['x-plinth-version']],
  )
  // Host names are case-insensitive, and the port is ignored.
  assert.equal((await s.site(`PRETTY.Localhost:${s.plinth.port}`, '/about')).body.toString(), 'about page')
})

test('a missing path serves the site 404.html with status 404, else the platform page', async (t) => {
  const s = await startServer(t)
  await publishedSite(s, 'with404', { 'index.html': 'home', '404.html': 'custom not found' })
  const missing = await s.site('with404.localhost', '/nope')
  assert.deepEqual([missing.status, missing.body.toString()], [404, 'custom not found'])
  await publishedSite(s, 'without404', { 'index.html': 'home' })
  const plain = await s.site('without404.localhost', '/nope')
  assert.equal(plain.status, 404)
  assert.match(plain.body.toString(), /Page not found/)
  const draft = await s.site('draft--without404.localhost', '/nope')
  assert.match(draft.body.toString(), /Page not found/, 'a draft host does not claim there is no published site')
  assert.match((await s.site('nobody.localhost', '/nope')).body.toString(), /Site not found/)
})

test('percent-encoded paths are decoded once and can never leave the site', async (t) => {
  const s = await startServer(t)
  await publishedSite(s, 'enc', { 'café.html': 'coffee', 'a b.txt': 'space', 'index.html': 'home', '%41.txt': 'literal' })
  assert.equal((await s.site('enc.localhost', '/caf%C3%A9')).body.toString(), 'coffee')
  assert.equal((await s.site('enc.localhost', '/a%20b.txt')).body.toString(), 'space')
  // Decoded once: %2541 is the file named "%41.txt", never "A.txt".
  assert.equal((await s.site('enc.localhost', '/%2541.txt')).body.toString(), 'literal')
  for (const path of ['/../index.html', '/%2e%2e/index.html', '/..%2findex.html', '/%E0%A4%A', '//index.html', '/index.html/']) {
    const res = await s.site('enc.localhost', path)
    assert.equal(res.status, 404, path)
  }
})

test('sites answer GET and HEAD only; HEAD has the headers and no body', async (t) => {
  const s = await startServer(t)
  await publishedSite(s, 'methods', { 'index.html': PAGE })
  const head = await rawRequest(s.plinth.port, 'methods.localhost', '/', {}, 'HEAD')
  assert.equal(head.status, 200)
  assert.equal(head.headers['content-length'], String(Buffer.byteLength(PAGE)))
  assert.equal(head.body.length, 0)
  const post = await rawRequest(s.plinth.port, 'methods.localhost', '/', {}, 'POST')
  assert.equal(post.status, 405)
  assert.equal(post.headers.allow, 'GET, HEAD')
})

test('publish and rollback swap one pointer: every response is whole, and the next request sees the new version', async (t) => {
  const s = await startServer(t)
  const pageA = 'A'.repeat(3000)
  const pageB = 'B'.repeat(5000)
  const w = await publishedSite(s, 'swap', { 'index.html': pageA })
  const etagA = String((await s.site('swap.localhost', '/')).headers.etag)
  await s.api('POST', `/v1/websites/${w.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: pageB }] } })
  let stop = false
  let seen = 0
  const bodies = new Map<string, Set<string>>()
  const reader = (async () => {
    while (!stop) {
      const res = await s.site('swap.localhost', '/')
      const body = res.body.toString()
      // Headers and body always come from one version: never A's ETag or length with B's bytes.
      assert.ok(body === pageA || body === pageB, `torn body of ${body.length} bytes`)
      assert.equal(res.headers['content-length'], String(body.length))
      assert.equal(res.headers.etag === etagA, body === pageA)
      const version = String(res.headers['x-plinth-version'])
      bodies.set(version, (bodies.get(version) ?? new Set()).add(body))
      seen++
    }
  })()
  assert.equal((await s.api('POST', `/v1/websites/${w.id}/publish`)).status, 200)
  assert.equal((await s.site('swap.localhost', '/')).body.toString() === pageB, true)
  for (let i = 0; i < 8; i++) {
    assert.equal((await s.api('POST', `/v1/websites/${w.id}/rollback`, { body: { version: 3 } })).status, 200)
    assert.equal((await s.site('swap.localhost', '/')).body.toString() === pageB, true)
    assert.equal((await s.api('POST', `/v1/websites/${w.id}/rollback`, { body: { version: 2 } })).status, 200)
    assert.equal((await s.site('swap.localhost', '/')).body.toString() === pageA, true)
  }
  stop = true
  await reader
  assert.ok(seen > 10)
  // Each rollback is a new version; an answer's version always matched its bytes.
  assert.ok(bodies.size >= 3, `versions seen: ${[...bodies.keys()].join(', ')}`)
  for (const [version, set] of bodies) assert.equal(set.size, 1, `version ${version} answered ${set.size} different pages`)
})

test('HEAD and 304 keep a keep-alive connection in step: no stray body bytes', async (t) => {
  const s = await startServer(t)
  await publishedSite(s, 'alive', { 'index.html': 'hello', 'x.txt': 'xyz' })
  const etag = String((await s.site('alive.localhost', '/')).headers.etag)
  const { connect } = await import('node:net')
  const raw = await new Promise<string>((resolve, reject) => {
    const socket = connect(s.plinth.port, '127.0.0.1', () => {
      socket.write(
        'HEAD / HTTP/1.1\r\nHost: alive.localhost\r\n\r\n' +
          `GET / HTTP/1.1\r\nHost: alive.localhost\r\nIf-None-Match: ${etag}\r\n\r\n` +
          'GET /x.txt HTTP/1.1\r\nHost: alive.localhost\r\nConnection: close\r\n\r\n',
      )
    })
    let data = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => (data += chunk))
    socket.on('end', () => resolve(data))
    socket.on('error', reject)
  })
  const responses = raw.split(/(?=HTTP\/1\.1 )/)
  assert.equal(responses.length, 3, raw)
  assert.match(responses[0], /^HTTP\/1\.1 200/)
  assert.match(responses[0], /content-length: 5\r\n/i)
  assert.ok(responses[0].endsWith('\r\n\r\n'), 'HEAD carried a body')
  assert.match(responses[1], /^HTTP\/1\.1 304/)
  assert.ok(responses[1].endsWith('\r\n\r\n'), '304 carried a body')
  assert.ok(responses[2].endsWith('\r\n\r\nxyz'))
})
