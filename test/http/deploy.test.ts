import assert from 'node:assert/strict'
import { test } from 'node:test'
import { multipartBody } from '../helpers/http.js'
import { createWebsite, startServer, type TestServer } from '../helpers/server.js'

async function staticSite(s: TestServer, name = 'Static') {
  return createWebsite(s, { name, kind: 'static' })
}

function deploy(s: TestServer, id: string, body: unknown, key?: string) {
  return s.api('POST', `/v1/websites/${id}/deploy/json`, { body, key })
}

async function paths(s: TestServer, id: string, query = ''): Promise<string[]> {
  const res = await s.api('GET', `/v1/websites/${id}/source/files?limit=100${query}`)
  return res.body.items.map((f: any) => f.path)
}

test('deploys merge into the head, replace keeps only the sent files, deletes remove paths', async (t) => {
  const s = await startServer(t)
  const w = await staticSite(s)
  const first = await deploy(s, w.id, {
    files: [
      { path: 'index.html', content: '<h1>1</h1>' },
      { path: 'a.css', content: 'a{}' },
    ],
    message: 'first',
  })
  assert.equal(first.status, 201)
  assert.equal(first.body.version, 2)
  assert.equal(first.body.changed, true)
  assert.match(first.body.next.message, /publish/)
  const merged = await deploy(s, w.id, { files: [{ path: 'b.css', content: 'b{}' }] })
  assert.equal(merged.body.version, 3)
  assert.deepEqual(await paths(s, w.id), ['a.css', 'b.css', 'index.html'])
  const deleted = await deploy(s, w.id, { files: [], deletes: ['a.css'] })
  assert.equal(deleted.body.version, 4)
  assert.deepEqual(await paths(s, w.id), ['b.css', 'index.html'])
  const replaced = await deploy(s, w.id, { files: [{ path: 'only.html', content: 'x' }], replace: true })
  assert.equal(replaced.body.version, 5)
  assert.deepEqual(await paths(s, w.id), ['only.html'])
  // Earlier versions are untouched.
  assert.deepEqual(await paths(s, w.id, '&version=3'), ['a.css', 'b.css', 'index.html'])
  const missingDelete = await deploy(s, w.id, { files: [], deletes: ['nope.html'] })
  assert.equal(missingDelete.status, 400)
  assert.equal(missingDelete.body.details.path, 'nope.html')
})

test('identical content is a no-op: changed false and the version does not advance', async (t) => {
  const s = await startServer(t)
  const w = await staticSite(s)
  const files = [{ path: 'index.html', content: 'same' }]
  assert.equal((await deploy(s, w.id, { files })).body.version, 2)
  const again = await deploy(s, w.id, { files })
  assert.equal(again.status, 200)
  assert.deepEqual([again.body.version, again.body.changed], [2, false])
  const replaceSame = await deploy(s, w.id, { files, replace: true })
  assert.deepEqual([replaceSame.body.version, replaceSame.body.changed], [2, false])
  const versions = await s.api('GET', `/v1/websites/${w.id}/source/versions`)
  assert.deepEqual(
    versions.body.items.map((v: any) => v.version),
    [2, 1],
  )
})

test('a stale expectedHeadVersion is a 409 and writes nothing', async (t) => {
  const s = await startServer(t)
  const w = await staticSite(s)
  await deploy(s, w.id, { files: [{ path: 'index.html', content: '1' }] })
  const stale = await deploy(s, w.id, { files: [{ path: 'index.html', content: '2' }], expectedHeadVersion: 1 })
  assert.equal(stale.status, 409)
  assert.equal(stale.body.kind, 'conflict')
  assert.equal(stale.body.details.headVersion, 2)
  const ok = await deploy(s, w.id, { files: [{ path: 'index.html', content: '2' }], expectedHeadVersion: 2 })
  assert.equal(ok.body.version, 3)
})

test('each bad path form is a 400 naming the path', async (t) => {
  const s = await startServer(t)
  const w = await staticSite(s)
  for (const path of [
    '../etc/passwd',
    'a/../../b',
    '/abs.html',
    'C:/win.html',
    'back\\slash.html',
    'nul\0.html',
    'a//b.html',
    'dir/',
    '.',
    'a/./',
  ]) {
    const res = await deploy(s, w.id, { files: [{ path, content: 'x' }] })
    assert.equal(res.status, 400, JSON.stringify(path))
    assert.equal(res.body.kind, 'validation')
    assert.equal(res.body.details.field, 'body.files[0].path', path)
    assert.equal(res.body.details.path, path)
  }
  const twice = await deploy(s, w.id, {
    files: [
      { path: 'a.html', content: '1' },
      { path: './a.html', content: '2' },
    ],
  })
  assert.equal(twice.status, 400)
  assert.match(twice.body.message, /twice/)
  // `./` segments are normalised away.
  const dot = await deploy(s, w.id, { files: [{ path: './css/./site.css', content: 'x' }] })
  assert.equal(dot.status, 201)
  assert.deepEqual(await paths(s, w.id), ['css/site.css'])
  assert.equal((await s.api('GET', `/v1/websites/${w.id}`)).body.headVersion, 2)
})

test('size limits: 1 MiB per file and 2,000 files per website are 413s naming the limit', async (t) => {
  const s = await startServer(t)
  const w = await staticSite(s)
  const exactly = await deploy(s, w.id, {
    files: [{ path: 'max.bin', content: Buffer.alloc(1 << 20, 7).toString('base64'), encoding: 'base64' }],
  })
  assert.equal(exactly.status, 201)
  const over = await deploy(s, w.id, {
    files: [{ path: 'big.bin', content: Buffer.alloc((1 << 20) + 1, 7).toString('base64'), encoding: 'base64' }],
  })
  assert.equal(over.status, 413)
  assert.equal(over.body.kind, 'payload_too_large')
  assert.equal(over.body.details.limitBytes, 1 << 20)
  assert.equal(over.body.details.path, 'big.bin')
  // What to do instead: larger files go through a ticket deploy.
  assert.match(over.body.message, /ticket deploy: POST \/v1\/websites\/\{websiteId\}\/deploy\/tickets \(MCP begin_deploy\)/)
  const files = Array.from({ length: 1999 }, (_, i) => ({ path: `f/${i}.txt`, content: String(i) }))
  assert.equal((await deploy(s, w.id, { files })).status, 201)
  const tooMany = await deploy(s, w.id, { files: [{ path: 'one-more.txt', content: 'x' }] })
  assert.equal(tooMany.status, 413)
  assert.equal(tooMany.body.details.limitFiles, 2000)
  assert.match(tooMany.body.message, /2000 files/)
  const summary = await s.api('GET', `/v1/websites/${w.id}/source/summary`)
  assert.equal(summary.body.fileCount, 2000)
  // 2,001 files in one request is the same 413 as a merge over the limit.
  const other = await staticSite(s)
  const oneRequest = await deploy(s, other.id, {
    files: Array.from({ length: 2001 }, (_, i) => ({ path: `g/${i}.txt`, content: String(i) })),
  })
  assert.equal(oneRequest.status, 413)
  assert.equal(oneRequest.body.details.limit, 'files per website')
  assert.equal(oneRequest.body.details.limitFiles, 2000)
})

test('a path listed twice in deletes, or both written and deleted, is a 400 naming it; nothing changes', async (t) => {
  const s = await startServer(t)
  const w = await staticSite(s)
  const start = (
    await deploy(s, w.id, {
      files: [
        { path: 'a.txt', content: 'a' },
        { path: 'b.txt', content: 'b' },
      ],
    })
  ).body.version
  const twice = await s.api('DELETE', `/v1/websites/${w.id}/source/files`, { body: { paths: ['a.txt', './a.txt'] } })
  assert.equal(twice.status, 400)
  assert.equal(twice.body.details.field, 'body.paths[1]')
  assert.match(twice.body.message, /appears twice/)
  const twiceInDeploy = await deploy(s, w.id, { files: [], deletes: ['b.txt', 'b.txt'] })
  assert.equal(twiceInDeploy.status, 400)
  assert.equal(twiceInDeploy.body.details.field, 'body.deletes[1]')
  const both = await deploy(s, w.id, { files: [{ path: 'a.txt', content: 'new' }], deletes: ['a.txt'] })
  assert.equal(both.status, 400)
  assert.equal(both.body.details.field, 'body.deletes[0]')
  assert.match(both.body.message, /also in files/)
  const summary = await s.api('GET', `/v1/websites/${w.id}/source/summary`)
  assert.equal(summary.body.headVersion, start)
})

test('base64 binaries read back as base64 and text as utf8, byte for byte', async (t) => {
  const s = await startServer(t)
  const w = await staticSite(s)
  const png = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff, 0xfe, 0x80])
  const text = 'héllo wörld ✓\n'
  await deploy(s, w.id, {
    files: [
      { path: 'img/logo.png', content: png.toString('base64'), encoding: 'base64' },
      { path: 'hello.txt', content: text },
      { path: 'bom.txt', content: '\ufeffhi' },
      { path: 'unpadded.bin', content: 'aGVsbG8', encoding: 'base64' },
      { path: 'data', content: Buffer.from('{"a":1}').toString('base64'), encoding: 'base64', contentType: 'application/json' },
    ],
  })
  const image = await s.api('GET', `/v1/websites/${w.id}/source/files/read?path=img/logo.png`)
  assert.equal(image.body.encoding, 'base64')
  assert.equal(image.body.contentType, 'image/png')
  assert.deepEqual(Buffer.from(image.body.content, 'base64'), png)
  const txt = await s.api('GET', `/v1/websites/${w.id}/source/files/read?path=hello.txt`)
  assert.deepEqual([txt.body.encoding, txt.body.content, txt.body.contentType], ['utf8', text, 'text/plain; charset=utf-8'])
  const json = await s.api('GET', `/v1/websites/${w.id}/source/files/read?path=data`)
  assert.deepEqual([json.body.encoding, json.body.content, json.body.contentType], ['utf8', '{"a":1}', 'application/json; charset=utf-8'])
  // A leading BOM survives the read, so writing the text back changes nothing.
  const bom = await s.api('GET', `/v1/websites/${w.id}/source/files/read?path=bom.txt`)
  assert.deepEqual([bom.body.content, bom.body.size], ['\ufeffhi', 5])
  const again = await deploy(s, w.id, { files: [{ path: 'bom.txt', content: bom.body.content }] })
  assert.equal(again.body.changed, false)
  const unpadded = await s.api('GET', `/v1/websites/${w.id}/source/files/read?path=unpadded.bin`)
  assert.equal(Buffer.from(unpadded.body.content, unpadded.body.encoding).toString(), 'hello')
  const badBase64 = await deploy(s, w.id, { files: [{ path: 'x.bin', content: 'not*base64', encoding: 'base64' }] })
  assert.equal(badBase64.status, 400)
  assert.equal(badBase64.body.details.field, 'body.files[0].content')
  // Schema errors name array items the same way.
  const badEncoding = await deploy(s, w.id, {
    files: [
      { path: 'x.bin', content: 'x' },
      { path: 'y.bin', content: 'y', encoding: 'hex' },
    ],
  })
  assert.equal(badEncoding.status, 400)
  assert.equal(badEncoding.body.details.field, 'body.files[1].encoding')
  assert.match(badEncoding.body.message, /^body\.files\[1\]\.encoding must be one of/)
  const many = await s.api('POST', `/v1/websites/${w.id}/source/files/read`, { body: { paths: ['hello.txt', 'nope.txt', 'img/logo.png'] } })
  assert.deepEqual(
    many.body.files.map((f: any) => f.path),
    ['hello.txt', 'img/logo.png'],
  )
  assert.deepEqual(many.body.missing, ['nope.txt'])
  const fiftyOne = await s.api('POST', `/v1/websites/${w.id}/source/files/read`, {
    body: { paths: Array.from({ length: 51 }, (_, i) => `${i}.txt`) },
  })
  assert.equal(fiftyOne.status, 400)
  assert.equal(fiftyOne.body.details.field, 'body.paths')
  assert.equal((await s.api('GET', `/v1/websites/${w.id}/source/files/read?path=nope.txt`)).status, 404)
})

test('deploy is for static websites only; framework and storage get a 400 naming what to use', async (t) => {
  const s = await startServer(t)
  const framework = await createWebsite(s, { name: 'fw' })
  const storage = await createWebsite(s, { name: 'st', kind: 'storage' })
  const fw = await deploy(s, framework.id, { files: [{ path: 'index.html', content: 'x' }] })
  assert.equal(fw.status, 400)
  assert.match(fw.body.message, /source\/lease/)
  assert.match(fw.body.message, /put_source_file/)
  const st = await deploy(s, storage.id, { files: [{ path: 'index.html', content: 'x' }] })
  assert.equal(st.status, 400)
  assert.match(st.body.message, /objects\/uploads/)
  assert.equal((await s.api('POST', `/v1/websites/${storage.id}/publish`)).status, 400)
})

test('multipart deploy: repeated files parts named by path, with replace, expectedHeadVersion and message', async (t) => {
  const s = await startServer(t)
  const w = await staticSite(s)
  const form = new FormData()
  form.append('files', new Blob(['<h1>multi</h1>'], { type: 'text/html' }), 'index.html')
  form.append('files', new Blob([Buffer.from([1, 2, 3])]), 'assets/bin.dat')
  form.append('message', 'from a form')
  form.append('expectedHeadVersion', '1')
  const res = await fetch(`${s.origin}/v1/websites/${w.id}/deploy`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.adminKey}` },
    body: form,
  })
  const body = (await res.json()) as any
  assert.equal(res.status, 201, JSON.stringify(body))
  assert.equal(body.version, 2)
  assert.deepEqual(await paths(s, w.id), ['assets/bin.dat', 'index.html'])
  const versions = await s.api('GET', `/v1/websites/${w.id}/source/versions`)
  assert.equal(versions.body.items[0].message, 'from a form')
  const replace = new FormData()
  replace.append('files', new Blob(['only']), 'only.txt')
  replace.append('replace', 'true')
  const replaced = await fetch(`${s.origin}/v1/websites/${w.id}/deploy`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.adminKey}` },
    body: replace,
  })
  assert.equal(replaced.status, 201)
  assert.deepEqual(await paths(s, w.id), ['only.txt'])
  const bad = new FormData()
  bad.append('files', new Blob(['x']), '../evil.html')
  const refused = await fetch(`${s.origin}/v1/websites/${w.id}/deploy`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.adminKey}` },
    body: bad,
  })
  assert.equal(refused.status, 400)
  const unnamed = new FormData()
  unnamed.append('files', 'no filename')
  const noName = await fetch(`${s.origin}/v1/websites/${w.id}/deploy`, {
    method: 'POST',
    headers: { authorization: `Bearer ${s.adminKey}` },
    body: unnamed,
  })
  const noNameBody = (await noName.json()) as any
  assert.equal(noName.status, 400)
  assert.match(noNameBody.message, /needs a filename/)
  const notMultipart = await s.api('POST', `/v1/websites/${w.id}/deploy`, { body: { files: [] } })
  assert.equal(notMultipart.status, 400)
  assert.match(notMultipart.body.message, /multipart\/form-data/)
})

test('multipart deploy: file names are UTF-8 (RFC 7578 4.2) and filename*= (RFC 5987) is read too; each file is listed under its name and served at its path', async (t) => {
  const s = await startServer(t)
  const w = await createWebsite(s, { name: 'Unicode', kind: 'static', subdomain: 'unicode-deploy' })
  const send = (body: FormData | Buffer, contentType?: string) =>
    fetch(`${s.origin}/v1/websites/${w.id}/deploy`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.adminKey}`, ...(contentType === undefined ? {} : { 'content-type': contentType }) },
      body,
    })
  // As fetch, curl and browsers send them: the name's UTF-8 bytes inside filename="…".
  const form = new FormData()
  form.append('files', new Blob(['<p>leader</p>']), '‥/x.html')
  form.append('files', new Blob(['<p>café</p>']), 'café.html')
  const sent = await send(form)
  assert.equal(sent.status, 201, await sent.text())
  // RFC 5987's filename*= wins over the ASCII fallback sent beside it (RFC 6266 4.3).
  const star = multipartBody([{ name: 'files', filename: 'ete/index.html', filenameStar: 'été/index.html', content: '<p>summer</p>' }])
  const starred = await send(star.body, star.contentType)
  assert.equal(starred.status, 201, await starred.text())
  assert.deepEqual(await paths(s, w.id), ['café.html', 'été/index.html', '‥/x.html'])
  const draft = (path: string) => s.site('draft--unicode-deploy.localhost', path)
  assert.equal((await draft('/%E2%80%A5/x')).body.toString(), '<p>leader</p>')
  assert.equal((await draft('/caf%C3%A9')).body.toString(), '<p>café</p>')
  // The page's .html spelling moves to its address, percent-encoded in Location.
  assert.equal((await draft('/caf%C3%A9.html')).headers.location, '/caf%C3%A9')
  assert.equal((await draft('/%C3%A9t%C3%A9/')).body.toString(), '<p>summer</p>')
  // A name that is not UTF-8 would be stored under some other name: refused, saying why.
  const latin1 = multipartBody([{ name: 'files', filename: Buffer.from('caf\xe9.html', 'latin1'), content: 'x' }])
  const refused = await send(latin1.body, latin1.contentType)
  const said = (await refused.json()) as any
  assert.equal(refused.status, 400, JSON.stringify(said))
  assert.match(said.message, /not UTF-8/)
  assert.deepEqual(await paths(s, w.id), ['café.html', 'été/index.html', '‥/x.html'], 'nothing was written')
})

test('versions, changes, file listing and deletes describe the history exactly', async (t) => {
  const s = await startServer(t)
  const w = await staticSite(s)
  await deploy(s, w.id, {
    files: [
      { path: 'index.html', content: '1' },
      { path: 'a.txt', content: 'a' },
      { path: 'docs/x.txt', content: 'x' },
    ],
    message: 'v2',
  })
  await s.api('POST', `/v1/websites/${w.id}/publish`)
  await deploy(s, w.id, {
    files: [
      { path: 'index.html', content: '2' },
      { path: 'b.txt', content: 'b' },
    ],
    deletes: ['a.txt'],
  })
  const changes = await s.api('GET', `/v1/websites/${w.id}/source/changes`)
  assert.deepEqual([changes.body.from, changes.body.to], [2, 3])
  // Each with its size on either side (null where the file is not).
  assert.deepEqual(changes.body.items, [
    { path: 'a.txt', change: 'removed', fromSize: 1, toSize: null },
    { path: 'b.txt', change: 'added', fromSize: null, toSize: 1 },
    { path: 'index.html', change: 'modified', fromSize: 1, toSize: 1 },
  ])
  const fromEmpty = await s.api('GET', `/v1/websites/${w.id}/source/changes?from=0&to=2&limit=2`)
  assert.equal(fromEmpty.body.items.length, 2)
  const rest = await s.api('GET', `/v1/websites/${w.id}/source/changes?from=0&to=2&limit=2&cursor=${fromEmpty.body.nextCursor}`)
  assert.deepEqual(rest.body.items, [{ path: 'index.html', change: 'added', fromSize: null, toSize: 1 }])
  const versions = await s.api('GET', `/v1/websites/${w.id}/source/versions`)
  assert.deepEqual(
    versions.body.items.map((v: any) => [v.version, v.isHead, v.isPublished]),
    [
      [3, true, false],
      [2, false, true],
      [1, false, false],
    ],
  )
  const me = await s.api('GET', '/v1/me')
  assert.equal(versions.body.items[1].apiKeyId, me.body.actor.id)
  assert.equal(versions.body.items[1].message, 'v2')
  const page = await s.api('GET', `/v1/websites/${w.id}/source/versions?limit=2`)
  const next = await s.api('GET', `/v1/websites/${w.id}/source/versions?limit=2&cursor=${page.body.nextCursor}`)
  assert.deepEqual(
    next.body.items.map((v: any) => v.version),
    [1],
  )
  assert.equal(next.body.nextCursor, null)
  assert.deepEqual(await paths(s, w.id, '&prefix=docs/'), ['docs/x.txt'])
  assert.deepEqual(await paths(s, w.id, '&target=published'), ['a.txt', 'docs/x.txt', 'index.html'])
  const del = await s.api('DELETE', `/v1/websites/${w.id}/source/files`, { body: { paths: ['b.txt'], message: 'tidy' } })
  assert.deepEqual([del.status, del.body.version], [200, 4])
  assert.equal((await s.api('DELETE', `/v1/websites/${w.id}/source/files`, { body: { paths: ['b.txt'] } })).status, 400)
  const summary = await s.api('GET', `/v1/websites/${w.id}/source/summary`)
  assert.deepEqual(
    [summary.body.headVersion, summary.body.publishedVersion, summary.body.hasUnpublishedChanges, summary.body.fileCount],
    [4, 2, true, 2],
  )
})
