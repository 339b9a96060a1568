import assert from 'node:assert/strict'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { test, type TestContext } from 'node:test'
import sharp from 'sharp'
import { multipartBody, rawRequest } from '../helpers/http.js'
import { dnsServer } from '../helpers/dns.js'
import { createWebsite, startServer, type TestServer } from '../helpers/server.js'

/** A 2400x1600 photo whose EXIF says "turn a quarter clockwise" (orientation 6): displayed 1600x2400. */
function photo(): Promise<Buffer> {
  return sharp({ create: { width: 2400, height: 1600, channels: 3, background: { r: 200, g: 80, b: 40 } } })
    .jpeg({ quality: 80 })
    .withMetadata({ orientation: 6, exif: { IFD0: { Copyright: 'Someone' } } })
    .toBuffer()
}

async function upload(server: TestServer, websiteId: string, bytes: Buffer, filename: string, type: string, altText = '') {
  const form = new FormData()
  form.set('file', new Blob([bytes], { type }), filename)
  if (altText !== '') form.set('altText', altText)
  const res = await fetch(`${server.origin}/v1/websites/${websiteId}/assets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.adminKey}` },
    body: form,
  })
  return { status: res.status, body: (await res.json()) as any }
}

async function site(server: TestServer, t: TestContext, subdomain: string) {
  void t
  const w = await createWebsite(server, { name: subdomain, kind: 'static', subdomain })
  await server.api('POST', `/v1/websites/${w.id}/deploy/json`, { body: { files: [{ path: 'index.html', content: '<h1>Gallery</h1>' }] } })
  await server.api('POST', `/v1/websites/${w.id}/publish`)
  return w
}

test('assets: a one-request upload detects the type and size an image as displayed; the original at a stable immutable URL; images resized on demand with EXIF rotation, no metadata, bounds and a cache', async (t) => {
  const server = await startServer(t)
  const w = await site(server, t, 'gallery')
  const host = 'gallery.localhost'
  const bytes = await photo()
  // Declared as octet-stream by the client: the bytes say JPEG.
  const made = await upload(server, w.id, bytes, 'beach.jpg', 'application/octet-stream', 'A red beach')
  assert.equal(made.status, 201, JSON.stringify(made.body))
  const asset = made.body
  assert.deepEqual(
    [asset.kind, asset.contentType, asset.bytes, asset.width, asset.height, asset.altText, asset.status],
    ['image', 'image/jpeg', bytes.length, 1600, 2400, 'A red beach', 'ready'],
  )
  assert.equal(asset.url, `http://${host}:${server.plinth.port}/_platform/media/${asset.id}`)

  const original = await rawRequest(server.plinth.port, host, `/_platform/media/${asset.id}`)
  assert.equal(original.status, 200)
  assert.ok(original.body.equals(bytes))
  assert.equal(original.headers['cache-control'], 'public, max-age=31536000, immutable')
  assert.equal(
    (await rawRequest(server.plinth.port, host, `/_platform/media/${asset.id}`, { 'if-none-match': original.headers.etag as string }))
      .status,
    304,
  )
  assert.equal((await rawRequest(server.plinth.port, host, `/_platform/media/${asset.id}`, { range: 'bytes=0-99' })).body.length, 100)
  assert.equal((await rawRequest(server.plinth.port, 'notmine.localhost', `/_platform/media/${asset.id}`)).status, 404)

  const first = await rawRequest(server.plinth.port, host, `/_platform/img/${asset.id}?w=800&fm=webp&q=70`)
  assert.equal(first.status, 200, first.body.toString())
  assert.equal(first.headers['content-type'], 'image/webp')
  assert.equal(first.headers['cache-control'], 'public, max-age=31536000, immutable')
  const meta = await sharp(first.body).metadata()
  assert.deepEqual([meta.format, meta.width, meta.height], ['webp', 800, 1200], 'turned as EXIF said, then 800 wide')
  assert.equal(meta.exif, undefined, 'metadata stripped')
  assert.equal(meta.orientation, undefined)
  const again = await rawRequest(server.plinth.port, host, `/_platform/img/${asset.id}?w=800&fm=webp&q=70`)
  assert.ok(again.body.equals(first.body))
  assert.equal(again.headers.etag, first.headers.etag)
  assert.equal(
    (
      await rawRequest(server.plinth.port, host, `/_platform/img/${asset.id}?w=800&fm=webp&q=70`, {
        'if-none-match': first.headers.etag as string,
      })
    ).status,
    304,
  )
  const cover = await sharp(
    (await rawRequest(server.plinth.port, host, `/_platform/img/${asset.id}?w=300&h=300&fit=cover&format=png`)).body,
  ).metadata()
  assert.deepEqual([cover.format, cover.width, cover.height], ['png', 300, 300])
  const kept = await sharp((await rawRequest(server.plinth.port, host, `/_platform/img/${asset.id}?h=100`)).body).metadata()
  assert.deepEqual([kept.format, kept.height], ['jpeg', 100], 'the original format by default')
  for (const [query, pattern] of [
    ['w=5000', /1 to 4096/],
    ['q=0', /1 to 100/],
    ['width=10', /Unknown image parameter width/],
    ['fit=stretch', /cover, contain or inside/],
    ['fm=gif', /webp, avif, jpeg or png/],
  ] as const) {
    const bad = await rawRequest(server.plinth.port, host, `/_platform/img/${asset.id}?${query}`)
    assert.equal(bad.status, 400, query)
    assert.match(JSON.parse(bad.body.toString()).message, pattern)
  }
  // Pre-generated widths are served from the cache.
  const variants = await server.api('POST', `/v1/websites/${w.id}/assets/${asset.id}/variants`, {
    body: { widths: [320, 640], format: 'webp' },
  })
  assert.equal(variants.status, 200, JSON.stringify(variants.body))
  assert.deepEqual(
    variants.body.variants.map((v: any) => v.width),
    [320, 640],
  )
  assert.equal(
    (
      await sharp(
        (
          await rawRequest(
            server.plinth.port,
            host,
            new URL(variants.body.variants[1].url).pathname + new URL(variants.body.variants[1].url).search,
          )
        ).body,
      ).metadata()
    ).width,
    640,
  )

  // Library: search, rename, alt text, delete.
  const text = await upload(server, w.id, Buffer.from('Terms and conditions\n'), 'terms.txt', 'text/plain')
  assert.equal(text.body.kind, 'document')
  assert.deepEqual(
    (await server.api('GET', `/v1/websites/${w.id}/assets?search=red%20beach`)).body.items.map((a: any) => a.id),
    [asset.id],
  )
  assert.deepEqual(
    (await server.api('GET', `/v1/websites/${w.id}/assets?kind=document`)).body.items.map((a: any) => a.filename),
    ['terms.txt'],
  )
  const badCursor = await server.api('GET', `/v1/websites/${w.id}/assets?cursor=not-a-cursor`)
  assert.deepEqual([badCursor.status, badCursor.body.details.field], [400, 'query.cursor'])
  const patched = await server.api('PATCH', `/v1/websites/${w.id}/assets/${asset.id}`, {
    body: { altText: 'Sunset', filename: 'sunset.jpg' },
  })
  assert.deepEqual([patched.body.altText, patched.body.filename, patched.body.url], ['Sunset', 'sunset.jpg', asset.url])
  // delete_asset archives: lists leave it out, its link keeps working, and it still counts toward storage.
  const storageUsed = async () => (await server.api('GET', '/v1/billing')).body.storage.used
  const before = await storageUsed()
  assert.ok(before >= asset.bytes + text.body.bytes, `storage.used counts assets: ${before}`)
  const archived = await server.api('DELETE', `/v1/websites/${w.id}/assets/${asset.id}`)
  assert.deepEqual([archived.status, archived.body], [200, { deleted: false, archived: true }])
  assert.equal((await rawRequest(server.plinth.port, host, `/_platform/media/${asset.id}`)).status, 200)
  assert.ok(!(await server.api('GET', `/v1/websites/${w.id}/assets`)).body.items.some((a: any) => a.id === asset.id))
  assert.deepEqual(
    (await server.api('GET', `/v1/websites/${w.id}/assets?archived=true`)).body.items.map((a: any) => a.id),
    [asset.id],
  )
  assert.equal(await storageUsed(), before)
  // With permanent it is gone, and so is its room.
  const gone = await server.api('DELETE', `/v1/websites/${w.id}/assets/${asset.id}?permanent=true`)
  assert.deepEqual([gone.status, gone.body], [200, { deleted: true, archived: false }])
  assert.equal(await storageUsed(), before - asset.bytes)
  assert.equal((await rawRequest(server.plinth.port, host, `/_platform/media/${asset.id}`)).status, 404)
  assert.equal((await rawRequest(server.plinth.port, host, `/_platform/img/${asset.id}?w=800&fm=webp&q=70`)).status, 404)
})

test('an asset upload reads its file name as UTF-8 (RFC 7578 4.2), or from filename*= (RFC 5987): the asset is listed under that name', async (t) => {
  const server = await startServer(t)
  const w = await createWebsite(server, { name: 'Names', kind: 'static', subdomain: 'asset-names' })
  const made = await upload(server, w.id, Buffer.from('Conditions générales\n'), 'conditions ‥ générales.txt', 'text/plain')
  assert.equal(made.status, 201, JSON.stringify(made.body))
  assert.equal(made.body.filename, 'conditions ‥ générales.txt')
  const { body, contentType } = multipartBody([
    { name: 'file', filename: 'resume.txt', filenameStar: 'résumé.txt', contentType: 'text/plain', content: 'Curriculum vitæ\n' },
  ])
  const starred = await fetch(`${server.origin}/v1/websites/${w.id}/assets`, {
    method: 'POST',
    headers: { authorization: `Bearer ${server.adminKey}`, 'content-type': contentType },
    body,
  })
  const starredBody = (await starred.json()) as any
  assert.equal(starred.status, 201, JSON.stringify(starredBody))
  assert.equal(starredBody.filename, 'résumé.txt')
  const listed = await server.api('GET', `/v1/websites/${w.id}/assets?kind=document`)
  assert.deepEqual(listed.body.items.map((a: any) => a.filename).sort(), ['conditions ‥ générales.txt', 'résumé.txt'])
})

test('assets: bytes that lie about their type and decompression bombs are refused; two-step uploads check their signature and expiry', async (t) => {
  const server = await startServer(t)
  const w = await site(server, t, 'checks')
  const liar = await upload(server, w.id, Buffer.from('<?php echo "hi"; ?>'), 'cat.png', 'image/png')
  assert.deepEqual([liar.status, liar.body.kind], [400, 'validation'])
  assert.match(liar.body.message, /not an image/)
  // 8000 x 8000 pixels of one color: a small file that would take 256 MB to decode.
  const bomb = await sharp({ create: { width: 8000, height: 8000, channels: 4, background: '#fff' } })
    .png({ compressionLevel: 9 })
    .toBuffer()
  const refused = await upload(server, w.id, bomb, 'bomb.png', 'image/png')
  assert.equal(refused.status, 400, JSON.stringify(refused.body))
  assert.match(refused.body.message, /more than 50,000,000 pixels/)

  const png = await sharp({ create: { width: 40, height: 30, channels: 3, background: '#08f' } })
    .png()
    .toBuffer()
  const begin = () =>
    server.api('POST', `/v1/websites/${w.id}/assets/uploads`, {
      body: { filename: 'dot.png', contentType: 'image/png', bytes: png.length, altText: 'A dot' },
    })
  const put = (upload: any, headers: Record<string, string>, body: Buffer = png) =>
    fetch(upload.url.replace(/^http:\/\/[^/]+/, server.origin), {
      method: 'PUT',
      headers: { authorization: `Bearer ${server.adminKey}`, ...headers },
      body,
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }))
  const first = (await begin()).body
  assert.equal(first.asset.status, 'pending')
  assert.equal(
    new URL(first.upload.url).pathname + new URL(first.upload.url).search,
    `/v1/websites/${w.id}/assets/${first.asset.id}/upload`,
    'nothing secret in the URL: the signature travels in headers',
  )
  const tampered = await put(first.upload, {
    ...first.upload.headers,
    'X-Upload-Signature': first.upload.headers['X-Upload-Signature'].replace(/^./, (c: string) => (c === 'A' ? 'B' : 'A')),
  })
  assert.equal(tampered.status, 403)
  const otherType = await put(first.upload, { ...first.upload.headers, 'Content-Type': 'image/jpeg' })
  assert.equal(otherType.status, 403, 'the type is part of what was signed')
  assert.equal((await server.api('POST', `/v1/websites/${w.id}/assets/${first.asset.id}/finalize`)).status, 409, 'no bytes yet')
  const sent = await put(first.upload, first.upload.headers)
  assert.equal(sent.status, 200, JSON.stringify(sent.body))
  const ready = await server.api('POST', `/v1/websites/${w.id}/assets/${first.asset.id}/finalize`)
  assert.deepEqual([ready.status, ready.body.status, ready.body.width, ready.body.height], [200, 'ready', 40, 30])
  const late = (await begin()).body
  server.clock.advance(61 * 60 * 1000)
  const expired = await put(late.upload, late.upload.headers)
  assert.equal(expired.status, 403)
  assert.match(expired.body.message, /expired/)
})

test('assets.import fetches public URLs behind the SSRF guard: loopback refused unless the operator allows it, redirects checked, type from the bytes', async (t) => {
  const png = await sharp({ create: { width: 20, height: 10, channels: 3, background: '#0a0' } })
    .png()
    .toBuffer()
  const origin = createServer((req, res) => {
    if (req.url === '/hop') return void res.writeHead(302, { location: '/pic' }).end()
    if (req.url === '/pic') return void res.writeHead(200, { 'content-type': 'application/octet-stream' }).end(png)
    res.writeHead(404).end()
  })
  await new Promise<void>((resolve) => origin.listen(0, '127.0.0.1', resolve))
  t.after(() => origin.close())
  const port = (origin.address() as AddressInfo).port
  const guarded = await startServer(t)
  const w1 = await site(guarded, t, 'guarded')
  const refused = await guarded.api('POST', `/v1/websites/${w1.id}/assets/import`, { body: { urls: [`http://127.0.0.1:${port}/pic`] } })
  assert.equal(refused.status, 400)
  assert.match(
    refused.body.message,
    /127\.0\.0\.1 is not a public internet address: requests made for users go only to public internet addresses/,
  )

  // A name that resolves to a private address is refused without saying the address: the answer must
  // not map the private network for whoever asks (names resolve with PLINTH_DNS_SERVERS, a real DNS server here).
  const dns = await dnsServer(t)
  dns.zone['metadata.internal.test'] = { A: ['10.20.30.40'] }
  const named = await startServer(t, { PLINTH_DNS_SERVERS: dns.address })
  const w3 = await site(named, t, 'named')
  const hidden = await named.api('POST', `/v1/websites/${w3.id}/assets/import`, {
    body: { urls: ['http://metadata.internal.test/secrets'] },
  })
  assert.equal(hidden.status, 400)
  assert.match(hidden.body.message, /metadata\.internal\.test is not reachable from here/)
  assert.doesNotMatch(JSON.stringify(hidden.body), /10\.20\.30\.40/)

  const allowed = await startServer(t, { PLINTH_OUTBOUND_ALLOW: '127.0.0.1' })
  const w2 = await site(allowed, t, 'allowed')
  const imported = await allowed.api('POST', `/v1/websites/${w2.id}/assets/import`, {
    body: { urls: [`http://127.0.0.1:${port}/hop`, `http://127.0.0.1:${port}/missing`], altText: 'Green' },
  })
  assert.equal(imported.status, 200, JSON.stringify(imported.body))
  assert.deepEqual(
    imported.body.imported.map((a: any) => [a.filename, a.contentType, a.width, a.height, a.altText]),
    [['pic', 'image/png', 20, 10, 'Green']],
  )
  assert.deepEqual(
    imported.body.failed.map((f: any) => f.url),
    [`http://127.0.0.1:${port}/missing`],
  )
})

test("past a website's cap on distinct variants, requested widths round up to a fixed ladder", async (t) => {
  const server = await startServer(t, { PLINTH_IMAGE_VARIANTS_PER_SITE: '2' })
  const w = await site(server, t, 'capped')
  const asset = (await upload(server, w.id, await photo(), 'big.jpg', 'image/jpeg')).body
  const width = async (query: string) =>
    (await sharp((await rawRequest(server.plinth.port, 'capped.localhost', `/_platform/img/${asset.id}?${query}`)).body).metadata()).width
  assert.equal(await width('w=801'), 801)
  assert.equal(await width('w=802'), 802)
  // The cap of 2 is reached: 803 is served as the next rung of the ladder, 828.
  assert.equal(await width('w=803'), 828)
  assert.equal(await width('w=801'), 801, 'variants made before the cap stay as they are')
})

test('page code builds image URLs with imageUrl and srcSet of @platform, typed against Asset with width and height; the URLs it renders serve resized images', async (t) => {
  const server = await startServer(t)
  const w = await createWebsite(server, { name: 'Typed', subdomain: 'typed' })
  const asset = (await upload(server, w.id, await photo(), 'photo.jpg', 'image/jpeg')).body
  const token = (await server.api('POST', `/v1/websites/${w.id}/source/lease`)).body.leaseToken
  const page = [
    "import { definePage, imageUrl, srcSet, type Asset } from '@platform'",
    `const photo: Asset = { id: '${asset.id}', url: '', filename: 'photo.jpg', contentType: 'image/jpeg', altText: 'A photo', kind: 'image', width: ${asset.width}, height: ${asset.height} }`,
    'const ratio: number = photo.height! / photo.width!',
    "export default definePage({ route: '/', render: () => <img src={imageUrl(photo, { width: 400, format: 'webp' })} srcSet={srcSet(photo, [400, 800])} alt={photo.altText} data-ratio={ratio} /> })",
  ].join('\n')
  const written = await server.api('PUT', `/v1/websites/${w.id}/source/file`, {
    body: { leaseToken: token, file: { type: 'page', name: 'home' }, content: page },
  })
  assert.ok(written.status === 200 || written.status === 201, JSON.stringify(written.body))
  const ensured = await server.api('POST', `/v1/websites/${w.id}/deployments/ensure`, { body: { version: written.body.version } })
  assert.equal(ensured.body.status, 'ready', JSON.stringify(ensured.body))
  assert.equal((await server.api('POST', `/v1/websites/${w.id}/publish`)).status, 200)
  const html = (await rawRequest(server.plinth.port, 'typed.localhost', '/')).body.toString()
  const src = /src="([^"]+)"/.exec(html)![1]
  assert.equal(src, `/_platform/img/${asset.id}?w=400&amp;fm=webp`.replace('&amp;', '&amp;'))
  assert.match(html, new RegExp(`srcSet="/_platform/img/${asset.id}\\?w=400 400w, /_platform/img/${asset.id}\\?w=800 800w"`, 'i'))
  const served = await rawRequest(server.plinth.port, 'typed.localhost', src.replace('&amp;', '&'))
  const meta = await sharp(served.body).metadata()
  assert.deepEqual([meta.format, meta.width], ['webp', 400])
  // A wrong type against Asset is a typecheck diagnostic.
  const wrong = await server.api('PUT', `/v1/websites/${w.id}/source/file`, {
    body: { leaseToken: token, file: { type: 'page', name: 'home' }, content: page.replace('const ratio: number', 'const ratio: string') },
  })
  const checked = await server.api('POST', `/v1/websites/${w.id}/deployments/ensure`, { body: { version: wrong.body.version } })
  assert.equal(checked.body.status, 'failed', JSON.stringify(checked.body))
})
