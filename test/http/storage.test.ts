import assert from 'node:assert/strict'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, statSync, writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { test, type TestContext } from 'node:test'
import { promisify } from 'node:util'
import { fromBuffer } from 'yauzl'
import { ZipFile } from 'yazl'
import { tool } from '../helpers/agent.js'
import { rawRequest } from '../helpers/http.js'
import { spawnPlinth } from '../helpers/process.js'
import { createWebsite, startServer, tempDir, type TestServer } from '../helpers/server.js'
import { AnonymousAgent, HOUR, hostOf } from '../helpers/anonymous.js'
import { setUpOwner } from '../helpers/people.js'
import { API_POLL_MS, waitUntil } from '../helpers/wait.js'

const DAY = 24 * 60 * 60 * 1000

/** PUT bytes to an upload URL with Content-Range, as any HTTP client would. */
async function put(
  server: { port: number; key: string },
  url: string,
  bytes: Buffer,
  start: number,
  total: number,
): Promise<{ status: number; body: any }> {
  const res = await fetch(url.replace(/^http:\/\/[^/]+/, `http://127.0.0.1:${server.port}`), {
    method: 'PUT',
    headers: {
      authorization: `Bearer ${server.key}`,
      'content-type': 'application/octet-stream',
      'content-range': `bytes ${start}-${start + bytes.length - 1}/${total}`,
    },
    body: bytes,
  })
  return { status: res.status, body: await res.json() }
}

/** Starts a PUT, sends `sent` bytes of the body and cuts the connection (a client that died mid-upload). */
function putAndCut(port: number, key: string, path: string, body: Buffer, sent: number): Promise<void> {
  return new Promise((resolve) => {
    const req = request({
      host: '127.0.0.1',
      port,
      method: 'PUT',
      path,
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/octet-stream',
        'content-range': `bytes 0-${body.length - 1}/${body.length}`,
        'content-length': String(body.length),
      },
    })
    req.on('error', () => resolve())
    req.write(body.subarray(0, sent), () =>
      setTimeout(() => {
        req.destroy()
        resolve()
      }, 200),
    )
  })
}

function unzip(bytes: Buffer): Promise<Map<string, Buffer>> {
  return new Promise((resolve, reject) => {
    fromBuffer(bytes, { lazyEntries: true }, (error, zip) => {
      if (error) return reject(error)
      const out = new Map<string, Buffer>()
      zip.readEntry()
      zip.on('entry', (entry) =>
        zip.openReadStream(entry, (err, stream) => {
          if (err) return reject(err)
          const chunks: Buffer[] = []
          stream.on('data', (c: Buffer) => chunks.push(c))
          stream.on('end', () => {
            out.set(entry.fileName, Buffer.concat(chunks))
            zip.readEntry()
          })
        }),
      )
      zip.on('end', () => resolve(out))
    })
  })
}

function zipOf(files: Record<string, string>): Promise<Buffer> {
  const zip = new ZipFile()
  for (const [name, content] of Object.entries(files)) zip.addBuffer(Buffer.from(content), name)
  zip.end()
  const chunks: Buffer[] = []
  return new Promise((resolve) => {
    zip.outputStream.on('data', (c: Buffer) => chunks.push(c))
    zip.outputStream.on('end', () => resolve(Buffer.concat(chunks)))
  })
}

/** Begin, PUT each file whole with the headers begin answered (no Content-Range, no API key, as an agent's command does), finalize: the files as finalize answers them. */
async function share(server: TestServer, websiteId: string, files: { name: string; bytes: Buffer }[], folder?: string) {
  const begun = await server.api('POST', `/v1/websites/${websiteId}/objects/uploads`, {
    body: {
      files: files.map((f) => ({ name: f.name, byteSize: f.bytes.length })),
      ...(folder === undefined ? {} : { folder }),
    },
  })
  assert.equal(begun.status, 201, JSON.stringify(begun.body))
  for (const [i, file] of begun.body.files.entries()) {
    const res = await fetch(file.upload.url.replace(/^http:\/\/[^/]+/, `http://127.0.0.1:${server.plinth.port}`), {
      method: 'PUT',
      // Only the headers begin answered: they carry this upload's own token, no API key.
      headers: file.upload.headers,
      body: files[i].bytes,
    })
    const sent = (await res.json()) as any
    assert.equal(res.status, 200, JSON.stringify(sent))
    assert.equal(sent.complete, true)
  }
  const done = await server.api('POST', `/v1/websites/${websiteId}/objects/finalize`, {
    body: { ids: begun.body.files.map((u: any) => u.id) },
  })
  assert.equal(done.status, 200, JSON.stringify(done.body))
  assert.ok(
    done.body.files.every((f: any) => f.ok),
    JSON.stringify(done.body),
  )
  return Object.assign(
    done.body.files.map((f: any) => ({ ...f, id: f.objectId })),
    { folder: begun.body.folder as string, folderUrl: begun.body.folderUrl as string },
  )
}

const site = (server: TestServer, host: string, path: string, headers: Record<string, string> = {}) =>
  rawRequest(server.plinth.port, host, path, headers)

test('a storage website shares files: begin, PUT, finalize; links with Range and downloads, folder pages, a streamed zip of a folder, zips browsable as folders', async (t) => {
  const server = await startServer(t)
  const w = await createWebsite(server, { name: 'Holiday photos', kind: 'storage', subdomain: 'holiday' })
  const host = 'holiday.localhost'
  const video = randomBytes(300_000)
  const notes = Buffer.from('day one: sun\n')
  const archive = await zipOf({ 'readme.txt': 'inside the zip', 'docs/guide.md': '# Guide' })
  const objects = await share(
    server,
    w.id,
    [
      { name: 'clip.mp4', bytes: video },
      { name: 'notes.txt', bytes: notes },
      { name: 'extras/bundle.zip', bytes: archive },
    ],
    'trip 2026',
  )
  // A new folder: the name given, then a suffix nobody can guess.
  const F = objects.folder
  assert.match(F, /^trip-2026-[a-z0-9]{20}$/)
  assert.deepEqual(
    objects.map((o: any) => [o.path, o.name, o.size]),
    [
      [`/${F}/clip.mp4`, 'clip.mp4', video.length],
      [`/${F}/notes.txt`, 'notes.txt', notes.length],
      [`/${F}/extras/bundle.zip`, 'bundle.zip', archive.length],
    ],
  )
  assert.equal(objects[0].url, `http://${host}:${server.plinth.port}/${F}/clip.mp4`)
  assert.equal(objects.folderUrl, `http://${host}:${server.plinth.port}/${F}/`)
  const listedAll = await server.api('GET', `/v1/websites/${w.id}/objects?folder=${F}`)
  assert.equal(listedAll.body.items[0].expiresAt, null, 'billing off: kept')

  // The file, whole and by Range, inline or as a download, revalidated by ETag.
  const whole = await site(server, host, `/${F}/clip.mp4`)
  assert.equal(whole.status, 200)
  assert.equal(whole.headers['content-type'], 'video/mp4')
  assert.ok(whole.body.equals(video))
  assert.match(whole.headers['content-disposition'] as string, /^inline; filename="clip.mp4"/)
  const part = await site(server, host, `/${F}/clip.mp4`, { range: 'bytes=1000-1999' })
  assert.equal(part.status, 206)
  assert.equal(part.headers['content-range'], `bytes 1000-1999/${video.length}`)
  assert.ok(part.body.equals(video.subarray(1000, 2000)))
  assert.equal((await site(server, host, `/${F}/clip.mp4`, { range: `bytes=${video.length}-` })).status, 416)
  assert.equal((await site(server, host, `/${F}/clip.mp4`, { 'if-none-match': whole.headers.etag as string })).status, 304)
  // Shown in the browser: images, video, audio, PDF and plain text; anything else downloads (as the skill tells people).
  assert.match((await site(server, host, `/${F}/notes.txt`)).headers['content-disposition'] as string, /^inline; filename="notes.txt"/)
  const zipFile = await site(server, host, `/${F}/extras/bundle.zip`)
  assert.deepEqual([zipFile.status, zipFile.headers['content-security-policy']], [200, 'sandbox'])
  assert.match(zipFile.headers['content-disposition'] as string, /^attachment; filename="bundle.zip"/)
  const download = await site(server, host, `/${F}/notes.txt?download`)
  assert.match(download.headers['content-disposition'] as string, /^attachment; filename="notes.txt"/)
  assert.equal(download.headers['content-security-policy'], 'sandbox', 'a shared file never runs script on the host')

  // The folder lists its files and subfolder, with a zip of it all; the site's own address lists nothing (a folder's link is as private as a file's), nor zips it.
  const top = await site(server, host, '/')
  assert.equal(top.status, 200)
  assert.doesNotMatch(top.body.toString(), new RegExp(F))
  assert.doesNotMatch((await site(server, host, '/?zip')).headers['content-type'] as string, /zip/)
  assert.equal((await site(server, host, `/${F}`)).status, 301)
  const folder = (await site(server, host, `/${F}/`)).body.toString()
  assert.match(folder, /clip\.mp4/)
  assert.match(folder, /<a href="extras\/">extras\/<\/a>/)
  assert.match(folder, /Download all \(zip\)/)
  const zip = await site(server, host, `/${F}/?zip`)
  assert.equal(zip.status, 200)
  assert.equal(zip.headers['content-type'], 'application/zip')
  assert.equal(Number(zip.headers['content-length']), zip.body.length, "the zip's size is known before it is streamed")
  const unpacked = await unzip(zip.body)
  assert.deepEqual([...unpacked.keys()].sort(), ['clip.mp4', 'extras/bundle.zip', 'notes.txt'])
  assert.ok(unpacked.get('clip.mp4')!.equals(video))

  // An uploaded zip is browsable without unpacking: the API lists its entries, the host serves them.
  const entries = await server.api('GET', `/v1/websites/${w.id}/objects/${objects[2].id}/entries`)
  assert.deepEqual(
    entries.body.items.map((e: any) => [e.path, e.size]),
    [
      ['readme.txt', 14],
      ['docs/guide.md', 7],
    ],
  )
  const inside = await site(server, host, `/${F}/extras/bundle.zip/docs/guide.md`)
  assert.equal(inside.status, 200)
  assert.equal(inside.body.toString(), '# Guide')
  assert.match((await site(server, host, `/${F}/extras/bundle.zip/`)).body.toString(), /readme\.txt/)
  assert.equal((await server.api('GET', `/v1/websites/${w.id}/objects/${objects[0].id}/entries`)).status, 400, 'an mp4 is not a zip')

  // The API lists by folder; move, rename and folder rename change links; delete ends them.
  const listed = await server.api('GET', `/v1/websites/${w.id}/objects?folder=${F}`)
  assert.deepEqual(
    [listed.body.items.map((o: any) => o.name), listed.body.folders, listed.body.usedBytes],
    [['clip.mp4', 'notes.txt'], ['extras'], video.length + notes.length + archive.length],
  )
  const moved = await server.api('POST', `/v1/websites/${w.id}/objects/${objects[1].id}/move`, {
    body: { folder: 'misc', name: 'diary.txt' },
  })
  assert.equal(moved.body.url, `http://${host}:${server.plinth.port}/misc/diary.txt`)
  assert.equal((await site(server, host, `/${F}/notes.txt`)).status, 404)
  assert.equal((await site(server, host, '/misc/diary.txt')).body.toString(), notes.toString())
  const renamed = await server.api('PATCH', `/v1/websites/${w.id}/objects/folders/${encodeURIComponent(F)}`, {
    body: { to: 'trips/2026' },
  })
  assert.deepEqual(renamed.body, { folder: 'trips/2026', moved: 2 })
  assert.equal((await site(server, host, '/trips/2026/extras/bundle.zip')).status, 200)
  const taken = await server.api('POST', `/v1/websites/${w.id}/objects/${objects[1].id}/move`, {
    body: { folder: 'trips/2026', name: 'clip.mp4' },
  })
  assert.deepEqual([taken.status, taken.body.details.reason], [409, 'name_taken'])
  // rename_object changes the name shown and sets when its link ends; the link stays.
  const later = new Date(server.clock.now() + 2 * DAY).toISOString()
  const patched = await server.api('PATCH', `/v1/websites/${w.id}/objects/${objects[0].id}`, {
    body: { name: 'Our movie.mp4', expiresAt: later },
  })
  assert.deepEqual(
    [patched.status, patched.body.name, patched.body.label, patched.body.expiresAt],
    [200, 'clip.mp4', 'Our movie.mp4', later],
  )
  assert.equal(patched.body.url, `http://${host}:${server.plinth.port}/trips/2026/clip.mp4`)
  assert.equal((await site(server, host, '/trips/2026/clip.mp4')).status, 200)
  assert.match((await site(server, host, '/trips/2026/')).body.toString(), />Our movie\.mp4</)
  // label_folder: the folder's page and lists show the label; its link stays.
  const labelled = await server.api('PUT', `/v1/websites/${w.id}/objects/folders/${encodeURIComponent('trips/2026')}/label`, {
    body: { label: 'Trip to the coast' },
  })
  assert.deepEqual(labelled.body, {
    folder: 'trips/2026',
    label: 'Trip to the coast',
    folderUrl: `http://${host}:${server.plinth.port}/trips/2026/`,
  })
  assert.match((await site(server, host, '/trips/2026/')).body.toString(), /<h1>Trip to the coast<\/h1>/)
  // list_objects without a folder: every file across folders, each with its folder and folderLabel.
  const across = await server.api('GET', `/v1/websites/${w.id}/objects?limit=2`)
  assert.deepEqual(
    across.body.items.map((o: any) => [o.folder, o.folderLabel, o.label]),
    [
      ['misc', null, 'diary.txt'],
      ['trips/2026', 'Trip to the coast', 'Our movie.mp4'],
    ],
  )
  const rest = await server.api('GET', `/v1/websites/${w.id}/objects?limit=2&cursor=${across.body.nextCursor}`)
  assert.deepEqual(
    rest.body.items.map((o: any) => [o.folder, o.name]),
    [['trips/2026/extras', 'bundle.zip']],
  )
  assert.equal(rest.body.nextCursor, null)
  assert.equal(
    (
      await server.api('PATCH', `/v1/websites/${w.id}/objects/${objects[0].id}`, {
        body: { expiresAt: new Date(server.clock.now() - 1000).toISOString() },
      })
    ).status,
    400,
  )
  assert.equal((await server.api('DELETE', `/v1/websites/${w.id}/objects/${objects[0].id}`)).status, 200)
  assert.equal((await site(server, host, '/trips/2026/clip.mp4')).status, 404)
  assert.equal((await server.api('DELETE', `/v1/websites/${w.id}/objects/folders/misc`)).body.deleted, 1)
  assert.equal((await site(server, host, '/misc/diary.txt')).status, 404)

  // Another kind of site has no files to share.
  const web = await createWebsite(server, { name: 'Web', kind: 'static', subdomain: 'notstorage' })
  const wrong = await server.api('POST', `/v1/websites/${web.id}/objects/uploads`, { body: { files: [{ name: 'a.txt', byteSize: 1 }] } })
  assert.deepEqual([wrong.status, wrong.body.details.reason], [409, 'wrong_kind'])
})

test('move_object without a folder gives the file a link of its own: a new unguessable folder; the old link stops', async (t) => {
  const server = await startServer(t)
  const w = await createWebsite(server, { name: 'Own links', kind: 'storage', subdomain: 'own-links' })
  const host = hostOf(w.urls.published)
  const [report, photo] = await share(server, w.id, [
    { name: 'report.pdf', bytes: Buffer.from('%PDF-1.4 report') },
    { name: 'photo.jpg', bytes: Buffer.from('not really a jpeg') },
  ])
  const old = new URL(report.url).pathname
  assert.equal((await site(server, host, old)).status, 200)
  // As the skill's agent calls it: move_object with no folder.
  const moved = await tool(server, 'move_object', { websiteId: w.id, objectId: report.id })
  assert.match(moved.folder, /^report-[a-z0-9]{20}$/, JSON.stringify(moved))
  assert.notEqual(moved.folder, report.folder)
  assert.equal(moved.url, `http://${host}:${server.plinth.port}/${moved.folder}/report.pdf`)
  assert.equal((await site(server, host, `/${moved.folder}/report.pdf`)).body.toString(), '%PDF-1.4 report')
  assert.equal((await site(server, host, old)).status, 404, 'the old link stopped')
  assert.equal((await site(server, host, new URL(photo.url).pathname)).status, 200, 'the other file stays where it was')
  // Twice over: each move without a folder is a new link, never a guessable one.
  const again = await server.api('POST', `/v1/websites/${w.id}/objects/${report.id}/move`, { body: {} })
  assert.equal(again.status, 200, JSON.stringify(again.body))
  assert.notEqual(again.body.folder, moved.folder)
  assert.equal((await site(server, host, `/${moved.folder}/report.pdf`)).status, 404)
})

/**
 * A zip whose deflated entries say they hold other sizes than they inflate to: yazl writes a true zip,
 * then both copies of each named entry's uncompressed size (its local header's and the central
 * directory's) are overwritten, as a broken or hostile zip tool would leave them.
 */
async function lyingZip(files: Record<string, Buffer>, declared: Record<string, number>): Promise<Buffer> {
  const zip = new ZipFile()
  for (const [name, content] of Object.entries(files)) zip.addBuffer(content, name, { compress: true })
  zip.end()
  const chunks: Buffer[] = []
  for await (const chunk of zip.outputStream as AsyncIterable<Buffer>) chunks.push(chunk)
  const bytes = Buffer.concat(chunks)
  /** Where the header with this signature and name starts (the name follows the fixed fields). */
  const header = (signature: number, nameAt: number, name: Buffer): number => {
    const magic = Buffer.alloc(4)
    magic.writeUInt32LE(signature)
    let at = bytes.indexOf(magic)
    while (at !== -1 && !bytes.subarray(at + nameAt, at + nameAt + name.length).equals(name)) at = bytes.indexOf(magic, at + 4)
    assert.notEqual(at, -1, `the header of ${name}`)
    return at
  }
  for (const [name, size] of Object.entries(declared)) {
    // The local file header's uncompressed size is at 22, its name at 30; the central directory's at 24 and 46.
    for (const [signature, sizeAt, nameAt] of [
      [0x04034b50, 22, 30],
      [0x02014b50, 24, 46],
    ] as const) {
      const at = header(signature, nameAt, Buffer.from(name))
      assert.equal(bytes.readUInt32LE(at + sizeAt), files[name]!.length, `yazl wrote the true size of ${name}`)
      bytes.writeUInt32LE(size, at + sizeAt)
    }
  }
  return bytes
}

test('a shared zip whose entries lie about their size: refused at finalize as an archive folder, naming the entry; browsed as a plain file, such an entry is a 422 before any byte, the others serve, and the zip itself downloads intact', async (t) => {
  const errors: string[] = []
  const log = {
    info() {},
    warn() {},
    error: (message: string, fields?: Record<string, unknown>) => errors.push(`${message} ${JSON.stringify(fields)}`),
  }
  // Two threads: the storage host's answers come back through the serving thread's hand-off, where a
  // stream cut short used to turn into a 502.
  const server = await startServer(t, { PLINTH_SERVE_THREADS: '2' }, { log })
  const w = await createWebsite(server, { name: 'Zips', kind: 'storage', subdomain: 'zips' })
  const host = 'zips.localhost'
  const long = Buffer.from('all work and no play\n'.repeat(20_000))
  const short = Buffer.from('a short note\n'.repeat(1000))
  // Entries over 1 MiB are checked in a pass of their own before they stream (random bytes: no zip bomb).
  const large = randomBytes(1536 * 1024)
  const big = randomBytes(3 * 1024 * 1024)
  const bad = await lyingZip(
    { 'long.txt': long, 'docs/short.txt': short, 'fine.txt': Buffer.from('nothing wrong here'), 'large.bin': large, 'big.bin': big },
    // long.txt and big.bin say less than they inflate to, docs/short.txt more.
    { 'long.txt': 1000, 'docs/short.txt': short.length + 500, 'big.bin': 2 * 1024 * 1024 },
  )

  // As an archive folder: finalize refuses it, and says which entry and what to do.
  const begun = await server.api('POST', `/v1/websites/${w.id}/objects/uploads`, {
    body: { files: [{ name: 'bad.zip', byteSize: bad.length, archive: true }] },
  })
  assert.equal(begun.status, 201, JSON.stringify(begun.body))
  const upload = begun.body.files[0]
  const sent = await fetch(upload.upload.url.replace(/^http:\/\/[^/]+/, `http://127.0.0.1:${server.plinth.port}`), {
    method: 'PUT',
    headers: upload.upload.headers,
    body: bad,
  })
  assert.equal(sent.status, 200, await sent.text())
  const finalized = await server.api('POST', `/v1/websites/${w.id}/objects/finalize`, { body: { ids: [upload.id] } })
  assert.equal(finalized.status, 200, JSON.stringify(finalized.body))
  const [outcome] = finalized.body.files
  assert.equal(outcome.ok, false, JSON.stringify(outcome))
  assert.match(outcome.error, /long\.txt says it holds 1000 bytes but inflates to more/)
  assert.match(outcome.error, /zip the folder again/i)
  assert.equal((await site(server, host, `/${begun.body.folder}/`)).status, 404, 'no archive folder was made')

  // Shared as a plain file, the zip is browsable: its listing names every entry, good entries serve,
  // a lying one is refused before any byte with what to do instead.
  const shared = await share(
    server,
    w.id,
    [
      { name: 'bad.zip', bytes: bad },
      { name: 'notes.txt', bytes: Buffer.from('notes') },
    ],
    'mixed',
  )
  const F = shared.folder
  const listing = await site(server, host, `/${F}/bad.zip/`)
  assert.equal(listing.status, 200)
  assert.match(listing.body.toString(), /long\.txt[\s\S]*docs\/short\.txt[\s\S]*fine\.txt[\s\S]*large\.bin[\s\S]*big\.bin/)
  const entries = await server.api('GET', `/v1/websites/${w.id}/objects/${shared[0].id}/entries`)
  assert.deepEqual(
    entries.body.items.map((e: any) => e.path),
    ['long.txt', 'docs/short.txt', 'fine.txt', 'large.bin', 'big.bin'],
  )
  assert.equal((await site(server, host, `/${F}/bad.zip/fine.txt`)).body.toString(), 'nothing wrong here')
  for (let i = 0; i < 2; i++) assert.ok((await site(server, host, `/${F}/bad.zip/large.bin`)).body.equals(large), 'checked, then streamed')
  for (const [entry, says] of [
    ['long.txt', /long\.txt in bad\.zip is damaged: it says it holds 1000 bytes but inflates to more/],
    ['docs/short.txt', /docs\/short\.txt in bad\.zip is damaged: it says it holds 13500 bytes but inflates to 13000/],
    ['big.bin', /big\.bin in bad\.zip is damaged: it says it holds 2097152 bytes but inflates to more/],
  ] as const) {
    for (const download of ['', '?download']) {
      const refused = await site(server, host, `/${F}/bad.zip/${entry}${download}`)
      assert.equal(refused.status, 422, refused.body.toString().slice(0, 200))
      assert.match(refused.headers['content-type'] as string, /^application\/json/)
      const error = JSON.parse(refused.body.toString())
      assert.equal(error.kind, 'unprocessable')
      assert.deepEqual(error.details, { reason: 'archive_entry_invalid', entry, archive: 'bad.zip' })
      assert.match(error.message, says)
      assert.match(error.message, new RegExp(`/${F}/bad\\.zip\\?download`), 'where the whole zip is')
    }
  }
  // The zip itself, alone or in its folder's Download all, is the bytes sent.
  assert.ok((await site(server, host, `/${F}/bad.zip`)).body.equals(bad))
  const all = await site(server, host, `/${F}/?zip`)
  assert.equal(all.status, 200)
  const unpacked = await unzip(all.body)
  assert.ok(unpacked.get('bad.zip')!.equals(bad))
  assert.equal(unpacked.get('notes.txt')!.toString(), 'notes')
  assert.deepEqual(errors, [], 'a damaged upload is not a server error')
})

test('uploads resume: chunks in order, a wrong offset says which, a cut connection keeps what arrived; limits and quotas; free links expire on the clock', async (t) => {
  const server = await startServer(t, { PLINTH_BILLING: 'on' }, { actorIdleMs: 50 })
  const w = await createWebsite(server, { name: 'Drop', kind: 'storage', subdomain: 'drop' })
  const bytes = randomBytes(3 * 1024 * 1024 + 17)
  const begun = await server.api('POST', `/v1/websites/${w.id}/objects/uploads`, {
    body: { files: [{ name: 'big.bin', byteSize: bytes.length }] },
  })
  const upload = begun.body.files[0]
  const target = { port: server.plinth.port, key: server.adminKey }
  const first = await put(target, upload.upload.url, bytes.subarray(0, 1024 * 1024), 0, bytes.length)
  assert.deepEqual([first.status, first.body.offset, first.body.complete], [200, 1024 * 1024, false])
  const wrong = await put(target, upload.upload.url, bytes.subarray(0, 10), 0, bytes.length)
  assert.deepEqual([wrong.status, wrong.body.details.reason, wrong.body.details.offset], [409, 'offset_mismatch', 1024 * 1024])
  // Finalize answers each file: this one is not whole yet, and stays as it is.
  const early = await server.api('POST', `/v1/websites/${w.id}/objects/finalize`, { body: { ids: [upload.id] } })
  assert.deepEqual([early.status, early.body.files[0].ok], [200, false])
  assert.match(early.body.files[0].error, /holds 1048576 of 3145745 bytes/)
  const inProgress = await server.api('GET', '/v1/storage/uploads')
  assert.deepEqual(
    inProgress.body.items.map((u: any) => [u.uploadId, u.received]),
    [[upload.id, 1024 * 1024]],
  )
  assert.equal((await put(target, upload.upload.url, bytes.subarray(1024 * 1024), 1024 * 1024, bytes.length)).body.complete, true)
  const [object] = (await server.api('POST', `/v1/websites/${w.id}/objects/finalize`, { body: { ids: [upload.id] } })).body.files
  assert.equal(object.ok, true)
  assert.ok((await site(server, 'drop.localhost', object.path)).body.equals(bytes))
  // Free plan with billing on: links last 7 days.
  assert.equal(Date.parse(begun.body.expiresAt) - server.clock.now(), 7 * DAY)
  const listed = await server.api('GET', `/v1/websites/${w.id}/objects?folder=${begun.body.folder}`)
  assert.equal(Date.parse(listed.body.items[0].expiresAt) - server.clock.now(), 7 * DAY)

  // A client that dies mid-body: what arrived is kept, resume says from where.
  const second = randomBytes(2 * 1024 * 1024)
  const secondBegun = (
    await server.api('POST', `/v1/websites/${w.id}/objects/uploads`, { body: { files: [{ name: 'second.bin', byteSize: second.length }] } })
  ).body
  const again = secondBegun.files[0]
  await putAndCut(server.plinth.port, server.adminKey, new URL(again.upload.url).pathname, second, 1024 * 1024 + 5)
  // The cut request may still be winding down (409 upload_busy).
  const resumed = await waitUntil(
    async () => {
      const answer = await server.api('POST', `/v1/websites/${w.id}/objects/${again.id}/resume`)
      return answer.status === 200 && answer
    },
    'the cut upload to be resumable',
    15_000,
    API_POLL_MS,
  )
  assert.equal(resumed.status, 200, JSON.stringify(resumed.body))
  assert.ok(resumed.body.offset > 0 && resumed.body.offset <= 1024 * 1024 + 5, `offset ${resumed.body.offset}`)
  const rest = await put(target, again.upload.url, second.subarray(resumed.body.offset), resumed.body.offset, second.length)
  assert.equal(rest.body.complete, true, JSON.stringify(rest.body))
  await server.api('POST', `/v1/websites/${w.id}/objects/finalize`, { body: { ids: [again.id] } })
  assert.ok(
    (await site(server, 'drop.localhost', `/${secondBegun.folder}/second.bin`)).body.equals(second),
    'the bytes after a resume are the file',
  )

  // Limits: 100 MiB a file; free links at most 7 days; the free plan's 1 GB.
  const huge = await server.api('POST', `/v1/websites/${w.id}/objects/uploads`, {
    body: { files: [{ name: 'huge.bin', byteSize: 100 * 1024 * 1024 + 1 }] },
  })
  assert.equal(huge.status, 413)
  const long = await server.api('POST', `/v1/websites/${w.id}/objects/uploads`, {
    body: { files: [{ name: 'a.bin', byteSize: 1 }], expiresInDays: 30 },
  })
  assert.deepEqual([long.status, long.body.details.reason], [402, 'storage_limit'])
  const many = await server.api('POST', `/v1/websites/${w.id}/objects/uploads`, {
    body: { files: Array.from({ length: 10 }, (_, i) => ({ name: `f${i}.bin`, byteSize: 99 * 1024 * 1024 })) },
  })
  assert.deepEqual([many.status, many.body.details.reason], [402, 'storage_limit'])
  // The same id twice in one finalize is one file.
  const dup = (await server.api('POST', `/v1/websites/${w.id}/objects/uploads`, { body: { files: [{ name: 'dup.bin', byteSize: 3 }] } }))
    .body.files[0]
  await put(target, dup.upload.url, Buffer.from('abc'), 0, 3)
  const twice = await server.api('POST', `/v1/websites/${w.id}/objects/finalize`, { body: { ids: [dup.id, dup.id] } })
  assert.deepEqual([twice.status, twice.body.files.map((f: any) => f.ok)], [200, [true]])
  // Beginning the same file over and over: 5 quickly, then 429 upload_retries (resume instead).
  const restart = () =>
    server.api('POST', `/v1/websites/${w.id}/objects/uploads`, { body: { files: [{ name: 'again.bin', byteSize: 7 }] } })
  // The first begin is not a restart; five more while it is unfinished are allowed, then 429.
  for (let i = 0; i < 6; i++) assert.equal((await restart()).status, 201)
  const tooOften = await restart()
  assert.deepEqual([tooOften.status, tooOften.body.details.reason], [429, 'upload_retries'])
  assert.match(tooOften.body.message, /resume_object_upload/)
  assert.equal(
    (await server.api('POST', `/v1/websites/${w.id}/objects/uploads`, { body: { files: [{ name: 'again.bin', byteSize: 8 }] } })).status,
    201,
    'another file is not limited',
  )
  await server.api('POST', '/v1/storage/uploads/clear')
  // An abandoned upload can be aborted; its bytes go.
  const stray = (
    await server.api('POST', `/v1/websites/${w.id}/objects/uploads`, { body: { files: [{ name: 'stray.bin', byteSize: 10 }] } })
  ).body.files[0]
  assert.equal((await server.api('DELETE', `/v1/storage/uploads?uploadId=${stray.id}`)).status, 200)
  assert.equal((await server.api('POST', `/v1/websites/${w.id}/objects/${stray.id}/resume`)).status, 404)
  // clear_uploads_in_progress cancels every unfinished upload at once, and frees what they announced.
  const pending = (
    await server.api('POST', `/v1/websites/${w.id}/objects/uploads`, {
      body: {
        files: [
          { name: 'p1.bin', byteSize: 10 },
          { name: 'p2.bin', byteSize: 20 },
        ],
      },
    })
  ).body.files
  assert.equal((await server.api('GET', '/v1/storage/uploads')).body.items.length, 2)
  const cleared = await server.api('POST', '/v1/storage/uploads/clear')
  assert.deepEqual([cleared.status, cleared.body], [200, { cleared: 2, freedBytes: 30 }])
  assert.deepEqual((await server.api('GET', '/v1/storage/uploads')).body, { items: [], nextCursor: null, inProgressBytes: 0 })
  assert.equal((await server.api('POST', `/v1/websites/${w.id}/objects/${pending[1].id}/resume`)).status, 404)

  // Eight days on the links are gone, and so are their bytes (the sweeper deletes them).
  const blobs = () =>
    readdirSync(join(server.dataDir, 'files'))
      .filter((d) => d !== 'uploads')
      .flatMap((d) => readdirSync(join(server.dataDir, 'files', d)))
  assert.equal(blobs().length, 3, 'big.bin, second.bin and dup.bin')
  server.clock.advance(8 * DAY)
  assert.equal((await site(server, 'drop.localhost', object.path)).status, 404)
  assert.equal((await server.api('GET', `/v1/websites/${w.id}/objects`)).body.items.length, 0)
  await waitUntil(() => blobs().length === 0, 'the sweeper to delete the bytes').catch(() => undefined)
  assert.deepEqual(blobs(), [])
})

test('kill -9 in the middle of an upload: after a restart the upload resumes from what was stored and finishes; nothing orphaned lingers', async (t: TestContext) => {
  const dataDir = tempDir(t, 'plinth-kill-')
  const key = `wb_${'k'.repeat(43)}`
  const env = { PLINTH_DATA_DIR: dataDir, PLINTH_ADMIN_KEY: key }
  const first = await spawnPlinth(t, env)
  const api = async (port: number, method: string, path: string, body?: unknown) => {
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    })
    return { status: res.status, body: (await res.json()) as any }
  }
  const w = (await api(first.port, 'POST', '/v1/websites', { name: 'Kill', kind: 'storage', subdomain: 'kill' })).body
  const bytes = randomBytes(4 * 1024 * 1024)
  const begun = (
    await api(first.port, 'POST', `/v1/websites/${w.id}/objects/uploads`, { files: [{ name: 'data.bin', byteSize: bytes.length }] })
  ).body
  const upload = begun.files[0]
  const path = new URL(upload.upload.url).pathname
  // Half the body sent, then the server is killed outright.
  const req = request({
    host: '127.0.0.1',
    port: first.port,
    method: 'PUT',
    path,
    headers: {
      authorization: `Bearer ${key}`,
      'content-range': `bytes 0-${bytes.length - 1}/${bytes.length}`,
      'content-length': String(bytes.length),
    },
  })
  req.on('error', () => undefined)
  await new Promise<void>((resolve) => req.write(bytes.subarray(0, 2 * 1024 * 1024), () => resolve()))
  // Killed once some of the bytes are on disk (the upload's file in the work area has grown).
  const uploadFile = join(dataDir, 'files', 'uploads', upload.id)
  await waitUntil(() => existsSync(uploadFile) && statSync(uploadFile).size > 0, 'the first bytes to reach the disk')
  first.child.kill('SIGKILL')
  await first.exited
  req.destroy()
  // What a crash between a file's rename and its commit would leave: a file no record names, an
  // upload area no upload owns. The next start removes both.
  mkdirSync(join(dataDir, 'files', 'ab'), { recursive: true })
  writeFileSync(join(dataDir, 'files', 'ab', 'c'.repeat(62)), 'orphan')
  writeFileSync(join(dataDir, 'files', 'uploads', 'upl_orphan'), 'orphan')

  const second = await spawnPlinth(t, env)
  const resumed = await api(second.port, 'POST', `/v1/websites/${w.id}/objects/${upload.id}/resume`)
  assert.equal(resumed.status, 200, JSON.stringify(resumed.body))
  assert.ok(resumed.body.offset > 0, `the bytes that reached the disk count: ${resumed.body.offset}`)
  const rest = await put(
    { port: second.port, key },
    upload.upload.url,
    bytes.subarray(resumed.body.offset),
    resumed.body.offset,
    bytes.length,
  )
  assert.equal(rest.body.complete, true)
  const done = await api(second.port, 'POST', `/v1/websites/${w.id}/objects/finalize`, { ids: [upload.id] })
  assert.equal(done.status, 200, JSON.stringify(done.body))
  const served = await rawRequest(second.port, 'kill.localhost', `/${begun.folder}/data.bin`)
  assert.ok(served.body.equals(bytes), 'the file after kill -9 and resume is byte for byte what was sent')
  // The work area holds no upload any more; the blob directory holds the one file.
  assert.deepEqual(readdirSync(join(dataDir, 'files', 'uploads')), [])
  const blobs = readdirSync(join(dataDir, 'files'))
    .filter((d) => d !== 'uploads')
    .flatMap((d) => readdirSync(join(dataDir, 'files', d)))
  assert.equal(blobs.length, 1, `only the finished file: ${blobs.join(', ')}`)
})

test("anonymous file sharing: a storage site, each upload its own folder, the byte budget, the 24 hours, and a claim carrying the files into the workspace with the plan's expiry", async (t) => {
  const server = await startServer(t, { PLINTH_BILLING: 'on' }, { anonymousSweepMs: 20 })
  const owner = await setUpOwner(server)
  const agent = await new AnonymousAgent(server).issue()
  const created = await agent.create({ name: 'Shared', kind: 'storage' })
  assert.equal(created.status, 201, JSON.stringify(created.body))
  const siteId = created.body.id
  const host = hostOf(created.body.urls.published)
  const send = async (files: { name: string; bytes: Buffer }[]) => {
    const begun = await agent.call('POST', '/public/v1/anonymous/sites/storage/objects/uploads', {
      files: files.map((f) => ({ name: f.name, byteSize: f.bytes.length })),
    })
    assert.equal(begun.status, 201, JSON.stringify(begun.body))
    for (const [i, upload] of begun.body.files.entries()) {
      assert.match(upload.upload.url, new RegExp(`/public/v1/anonymous/sites/${siteId}/objects/upl_`))
      const sent = await put({ port: server.plinth.port, key: agent.token }, upload.upload.url, files[i].bytes, 0, files[i].bytes.length)
      assert.equal(sent.status, 200, JSON.stringify(sent.body))
    }
    const done = await agent.call('POST', `/public/v1/anonymous/sites/${siteId}/objects/finalize`, {
      ids: begun.body.files.map((u: any) => u.id),
    })
    assert.equal(done.status, 200, JSON.stringify(done.body))
    assert.ok(
      done.body.files.every((f: any) => f.ok),
      JSON.stringify(done.body),
    )
    const objects = done.body.files.map((f: any) => ({ ...f, id: f.objectId, folder: begun.body.folder }))
    return { folderUrl: begun.body.folderUrl as string, expiresAt: begun.body.expiresAt as string, objects }
  }
  const photo = randomBytes(50_000)
  const first = await send([
    { name: 'photo.jpg', bytes: photo },
    { name: 'notes.txt', bytes: Buffer.from('hello') },
  ])
  const second = await send([{ name: 'photo.jpg', bytes: randomBytes(10) }])
  assert.notEqual(first.folderUrl, second.folderUrl, 'each upload is its own folder, so the same name never collides')
  const folderPath = new URL(first.folderUrl).pathname
  assert.match((await site(server, host, folderPath)).body.toString(), /notes\.txt[\s\S]*photo\.jpg/)
  assert.ok((await site(server, host, `${folderPath}photo.jpg`)).body.equals(photo))
  assert.equal(first.expiresAt, new Date(server.clock.now() + DAY).toISOString(), "live until the storage site's 24 hours end")
  const status = (await agent.status('storage')).body
  assert.deepEqual(status.storage, { usedBytes: photo.length + 5 + 10, limitBytes: 500 * 1024 * 1024, sharedBytes: photo.length + 5 + 10 })
  // Deleting does not refund the budget.
  assert.equal((await agent.call('DELETE', `/public/v1/anonymous/sites/${siteId}/objects/${second.objects[0].id}`)).status, 200)
  assert.deepEqual(
    [(await agent.status('storage')).body.storage.usedBytes, (await agent.status('storage')).body.storage.sharedBytes],
    [photo.length + 15, photo.length + 5],
  )
  // The budget: 500 MiB over everything; asking for more is 413 anonymous_storage_limit.
  const over = await agent.call('POST', '/public/v1/anonymous/sites/storage/objects/uploads', {
    files: Array.from({ length: 6 }, (_, i) => ({ name: `big${i}.bin`, byteSize: 90 * 1024 * 1024 })),
  })
  assert.deepEqual([over.status, over.body.details.reason], [413, 'anonymous_storage_limit'])
  // Another credential's token cannot touch these files.
  const stranger = await new AnonymousAgent(server).issue()
  assert.equal(
    (await stranger.call('POST', `/public/v1/anonymous/sites/${siteId}/objects/uploads`, { files: [{ name: 'x', byteSize: 1 }] })).status,
    404,
  )

  // A person claims it: the files move into the workspace, now on the free plan's 7 days from the claim.
  server.clock.advance(HOUR)
  const code = (await owner.api('POST', '/v1/websites/claim-codes')).body.code
  const claimed = await server.api('POST', '/api/anonymous/claim', { key: null, body: { token: agent.token, code } })
  assert.equal(claimed.status, 200, JSON.stringify(claimed.body))
  assert.equal(claimed.body.storage.id, siteId)
  const listed = await server.api('GET', `/v1/websites/${siteId}/objects?folder=${encodeURIComponent(first.objects[0].folder)}`)
  assert.equal(
    claimed.body.dashboardUrl,
    `http://localhost:${server.plinth.port}/app/websites/${siteId}?workspace=${claimed.body.workspace.id}`,
  )
  assert.deepEqual(
    listed.body.items.map((o: any) => [o.name, o.expiresAt]),
    [
      ['notes.txt', new Date(server.clock.now() + 7 * DAY).toISOString()],
      ['photo.jpg', new Date(server.clock.now() + 7 * DAY).toISOString()],
    ],
  )
  // Their bytes count in the workspace now (moved in the claim's own commit), once.
  const billing = await owner.api('GET', '/v1/billing', undefined, { headers: { 'x-organization-id': claimed.body.workspace.id } })
  assert.equal(billing.body.storage.used, photo.length + 5, JSON.stringify(billing.body))
  server.clock.advance(2 * DAY)
  assert.ok((await site(server, host, `${folderPath}photo.jpg`)).body.equals(photo), 'past the anonymous 24 hours, the claimed files stay')
  assert.equal(
    (await agent.call('POST', '/public/v1/anonymous/sites/storage/objects/uploads', { files: [{ name: 'x', byteSize: 1 }] })).body.details
      .reason,
    'credential_consumed',
  )
})

test("anonymous shared files end with the storage site's 24 hours; a claim needs room in the storage quota", async (t) => {
  const server = await startServer(t, { PLINTH_BILLING: 'on', PLINTH_FREE_STORAGE_BYTES: '3MiB' }, { anonymousSweepMs: 20 })
  const owner = await setUpOwner(server)
  const agent = await new AnonymousAgent(server).issue()
  const created = (await agent.create({ name: 'Brief', kind: 'storage' })).body
  const host = hostOf(created.urls.published)
  const begun = (
    await agent.call('POST', '/public/v1/anonymous/sites/storage/objects/uploads', { files: [{ name: 'a.txt', byteSize: 3 }] })
  ).body
  await put({ port: server.plinth.port, key: agent.token }, begun.files[0].upload.url, Buffer.from('abc'), 0, 3)
  await agent.call('POST', '/public/v1/anonymous/sites/storage/objects/finalize', { ids: [begun.files[0].id] })
  const path = `${new URL(begun.folderUrl).pathname}a.txt`
  assert.equal((await site(server, host, path)).status, 200)
  server.clock.advance(DAY + 1000)
  const closed = await agent.call('POST', '/public/v1/anonymous/sites/storage/objects/uploads', { files: [{ name: 'b.txt', byteSize: 1 }] })
  assert.ok(closed.status === 410 || closed.status === 404, JSON.stringify(closed.body))
  await waitUntil(async () => (await site(server, host, path)).status !== 200, 'the file to be deleted').catch(() => undefined)
  assert.equal((await site(server, host, path)).status, 404, 'deleted after the 24 hours')

  // A new storage site: a new 24 hours; a claim into a workspace with no room is 402 storage_limit.
  const again = await agent.create({ name: 'Again', kind: 'storage' })
  assert.equal(again.status, 201, JSON.stringify(again.body))
  assert.equal(again.body.deadlines.editUntil, new Date(server.clock.now() + DAY).toISOString(), 'a new 24 hours')
  assert.deepEqual([again.body.storage.usedBytes, again.body.storage.sharedBytes], [3, 0], 'the budget is not renewed')
  const big = (
    await agent.call('POST', '/public/v1/anonymous/sites/storage/objects/uploads', {
      files: [{ name: 'big.bin', byteSize: 2 * 1024 * 1024 }],
    })
  ).body
  await put({ port: server.plinth.port, key: agent.token }, big.files[0].upload.url, randomBytes(2 * 1024 * 1024), 0, 2 * 1024 * 1024)
  await agent.call('POST', '/public/v1/anonymous/sites/storage/objects/finalize', { ids: [big.files[0].id] })
  // The workspace's free plan (3 MiB here) mostly filled by its own storage site first.
  const own = await server.api('POST', '/v1/websites', { body: { name: 'Own files', kind: 'storage', subdomain: 'own-files' } })
  const filler = await server.api('POST', `/v1/websites/${own.body.id}/objects/uploads`, {
    body: { files: [{ name: 'f', byteSize: 2 * 1024 * 1024 }] },
  })
  assert.equal(filler.status, 201, JSON.stringify(filler.body))
  for (const upload of filler.body.files) {
    const res = await fetch(`http://127.0.0.1:${server.plinth.port}${new URL(upload.upload.url).pathname}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${server.adminKey}`, 'content-range': `bytes 0-${upload.size - 1}/${upload.size}` },
      body: Buffer.alloc(upload.size),
    })
    assert.equal(res.status, 200)
  }
  assert.equal(
    (
      await server.api('POST', `/v1/websites/${own.body.id}/objects/finalize`, {
        body: { ids: filler.body.files.map((u: any) => u.id) },
      })
    ).status,
    200,
  )
  const code = (await owner.api('POST', '/v1/websites/claim-codes')).body.code
  const refused = await server.api('POST', '/api/anonymous/claim', { key: null, body: { token: agent.token, code } })
  assert.deepEqual([refused.status, refused.body.details.reason], [402, 'storage_limit'])
  // Spec: "| 402 | claim needs storage room | `storage_limit` |": the signed-in person's own claim
  // (POST /v1/websites/claims) is refused the same way, and its description declares the 402.
  const viaApi = await owner.api('POST', '/v1/websites/claims', { token: agent.token })
  assert.deepEqual([viaApi.status, viaApi.body.details.reason], [402, 'storage_limit'])
  assert.equal((await agent.status('storage')).body.status, 'live', 'nothing moved')
})

test('anonymous uploads answer to the anonymous limits, not a plan; DELETE of an upload id cancels it', async (t) => {
  // Spec (Anonymous limits): "| credential byte budget | 500 MiB for website uploads … and finished files
  // together; deletes do not refund |" and "| shared file size | 100 MiB per file; in-progress uploads
  // have a separate 1 GB allowance |"; (endpoints) "DELETE /public/v1/anonymous/sites/{id}/objects/{objectId}
  // | Bearer | cancels a failed upload".
  const server = await startServer(t, { PLINTH_BILLING: 'on', PLINTH_FREE_STORAGE_BYTES: '1MiB' })
  const agent = await new AnonymousAgent(server).issue()
  const site = (await agent.create({ name: 'Drop', kind: 'storage' })).body
  // 2 MiB: over any free plan of this server, inside the credential's budget.
  const begun = await agent.call('POST', `/public/v1/anonymous/sites/${site.id}/objects/uploads`, {
    files: [{ name: 'two.bin', byteSize: 2 * 1024 * 1024 }],
  })
  assert.equal(begun.status, 201, JSON.stringify(begun.body))
  const upload = begun.body.files[0]
  assert.equal(
    (await put({ port: server.plinth.port, key: agent.token }, upload.upload.url, randomBytes(1024 * 1024), 0, 2 * 1024 * 1024)).status,
    200,
  )
  // The client gives up halfway: cancelling drops the upload and its bytes.
  const cancelled = await agent.call('DELETE', `/public/v1/anonymous/sites/${site.id}/objects/${upload.id}`)
  assert.deepEqual([cancelled.status, cancelled.body], [200, { deleted: true, kind: 'upload' }])
  assert.equal((await agent.call('POST', `/public/v1/anonymous/sites/${site.id}/objects/${upload.id}/resume`)).status, 404)
  assert.equal((await agent.call('DELETE', `/public/v1/anonymous/sites/${site.id}/objects/${upload.id}`)).status, 404, 'gone')
  // Each announcement fits the budget alone; unfinished ones together may hold 1 GiB, then 413.
  const hundred = (n: number) => ({ files: Array.from({ length: n }, (_, i) => ({ name: `f${i}.bin`, byteSize: 100 * 1024 * 1024 })) })
  assert.equal((await agent.call('POST', `/public/v1/anonymous/sites/${site.id}/objects/uploads`, hundred(5))).status, 201)
  const second = await agent.call('POST', `/public/v1/anonymous/sites/${site.id}/objects/uploads`, hundred(5))
  assert.equal(second.status, 201)
  const over = await agent.call('POST', `/public/v1/anonymous/sites/${site.id}/objects/uploads`, hundred(1))
  assert.deepEqual(
    [over.status, over.body.details.reason, over.body.details.limit],
    [413, 'anonymous_storage_limit', 'in-progress uploads'],
  )
  assert.match(over.body.message, /cancel some with DELETE/)
  assert.equal((await agent.call('DELETE', `/public/v1/anonymous/sites/${site.id}/objects/${second.body.files[0].id}`)).status, 200)
  assert.equal(
    (await agent.call('POST', `/public/v1/anonymous/sites/${site.id}/objects/uploads`, hundred(1))).status,
    201,
    'a cancelled upload frees its room',
  )
  // Another credential cannot cancel these.
  const stranger = await new AnonymousAgent(server).issue()
  assert.equal((await stranger.call('DELETE', `/public/v1/anonymous/sites/${site.id}/objects/${second.body.files[1].id}`)).status, 404)
})

test('a file over 100 MiB (paid plans, or billing off) goes in parts: any order, a ready command per part, resume answers only the missing ones, finalize waits for all', async (t) => {
  const server = await startServer(t)
  const w = await createWebsite(server, { name: 'Film', kind: 'storage', subdomain: 'film' })
  const size = 100 * 1024 * 1024 + 5
  const film = Buffer.alloc(size)
  for (let i = 0; i < size; i += 4096) film[i] = i % 251
  film.write('tail!', size - 5)
  const dir = tempDir(t, 'plinth-parts-')
  writeFileSync(join(dir, 'film.bin'), film)
  const begun = await server.api('POST', `/v1/websites/${w.id}/objects/uploads`, {
    body: { files: [{ name: 'film.bin', byteSize: size }] },
  })
  assert.equal(begun.status, 201, JSON.stringify(begun.body))
  const file = begun.body.files[0]
  assert.equal(file.upload, undefined)
  assert.equal(file.partSize, 100 * 1024 * 1024)
  assert.deepEqual(
    file.parts.map((p: any) => [p.partNumber, p.size]),
    [
      [1, 100 * 1024 * 1024],
      [2, 5],
    ],
  )
  // The last part first, through its ready command in a shell (no API key in it).
  await promisify(execFile)('bash', ['-c', `FILE=./film.bin; ${file.parts[1].command}`], { cwd: dir })
  const resumed = await server.api('POST', `/v1/websites/${w.id}/objects/${file.id}/resume`)
  assert.deepEqual([resumed.body.complete, resumed.body.parts.map((p: any) => p.partNumber)], [false, [1]])
  const early = await server.api('POST', `/v1/websites/${w.id}/objects/finalize`, { body: { ids: [file.id] } })
  assert.deepEqual([early.body.files[0].ok, /missing part 1/.test(early.body.files[0].error)], [false, true])
  // A part of the wrong length, or the whole file to a parted upload, is refused.
  const short = await fetch(file.parts[0].url.replace(/^http:\/\/[^/]+/, server.origin), {
    method: 'PUT',
    headers: file.parts[0].headers,
    body: Buffer.alloc(10),
  })
  assert.equal(short.status, 400)
  const part = await fetch(file.parts[0].url.replace(/^http:\/\/[^/]+/, server.origin), {
    method: 'PUT',
    headers: file.parts[0].headers,
    body: film.subarray(0, 100 * 1024 * 1024),
  })
  assert.equal(part.status, 200)
  assert.deepEqual(((await part.json()) as any).missingParts, [])
  const done = await server.api('POST', `/v1/websites/${w.id}/objects/finalize`, { body: { ids: [file.id] } })
  assert.equal(done.body.files[0].ok, true, JSON.stringify(done.body))
  const served = await site(server, 'film.localhost', done.body.files[0].path)
  assert.equal(served.body.length, size)
  assert.ok(served.body.equals(film), 'the parts make the file')
})
